"""Tests as agents write them: scratch files in the temporary directory and a cache
under the user's cache directory (~/.cache), as tools and test helpers keep."""

import os
import pathlib
import tempfile
import unittest

import pyapp


class AppTest(unittest.TestCase):
    def test_shout_into_a_scratch_file(self):
        with tempfile.TemporaryDirectory() as scratch:
            out = pathlib.Path(scratch, "out.txt")
            out.write_text(pyapp.shout("agent"))
            self.assertEqual(out.read_text(), "HELLO, AGENT")

    def test_keeps_a_cache(self):
        cache = pathlib.Path(os.path.expanduser("~/.cache/app-tests"))
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "last-run").write_text("ok")
        self.assertTrue((cache / "last-run").exists())


if __name__ == "__main__":
    unittest.main()
