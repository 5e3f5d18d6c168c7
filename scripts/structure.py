#!/usr/bin/env python3
"""The core's shape at a commit, from its own text: the tree with the lines of each file
before its tests, the files over a size, and the import circles between modules (from the
`use crate::…` and `crate::…` paths, a module being a file or a folder's mod.rs).

    scripts/structure.py [REV]      REV defaults to the working tree

Used for issue 18's before/after; anyone can rerun it on any commit."""

import re
import subprocess
import sys
from collections import defaultdict

CORE = "src-tauri/core/src/"
LIMIT = 700


def files(rev):
    """(path, text) of every .rs file under src-tauri/ at REV (None: the working tree)."""
    if rev:
        names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "src-tauri/"],
                               capture_output=True, text=True, check=True).stdout.split()
        read = lambda p: subprocess.run(["git", "show", f"{rev}:{p}"], capture_output=True,
                                        text=True, check=True).stdout
    else:
        names = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "src-tauri/"],
                               capture_output=True, text=True, check=True).stdout.split()
        read = lambda p: open(p, encoding="utf-8").read()
    return [(n, read(n)) for n in names if n.endswith(".rs")]


def before_tests(text, name):
    """Lines before `#[cfg(test)] mod tests` (a tests.rs file counts as none)."""
    if name.endswith("/tests.rs"):
        return 0
    lines = text.split("\n")
    for i, line in enumerate(lines[:-1]):
        if line.startswith("#[cfg(test)]") and lines[i + 1].startswith("mod tests"):
            return i
    return len(lines)


def module_of(path):
    """`decision::broker` for src-tauri/core/src/decision/broker/mod.rs."""
    rel = path[len(CORE):-3]
    parts = [p for p in rel.split("/") if p not in ("mod", "lib")]
    return "::".join(parts)


def main():
    rev = sys.argv[1] if len(sys.argv) > 1 else None
    all_files = files(rev)
    core = [(p, t) for p, t in all_files if p.startswith(CORE)]
    modules = {module_of(p): t for p, t in core}
    print(f"== {rev or 'working tree'}: the core ({len(core)} files)")
    folders = defaultdict(int)
    loose = []
    for p, t in sorted(core):
        rel = p[len(CORE):]
        n = before_tests(t, p)
        if "/" in rel:
            folders[rel.split("/")[0] + "/"] += n
        elif rel != "lib.rs":
            loose.append((rel, n))
    for folder, n in sorted(folders.items()):
        print(f"  {folder:<22}{n:>6}")
    for rel, n in loose:
        print(f"  {rel:<22}{n:>6}")
    print(f"  loose files at the top: {len(loose)}; folders: {len(folders)}")
    big = [(before_tests(t, p), p) for p, t in all_files
           if "/tests/" not in p and "/benches/" not in p and before_tests(t, p) > LIMIT]
    print(f"== files over {LIMIT} lines before their tests: "
          + (", ".join(f"{p} ({n})" for n, p in sorted(big, reverse=True)) or "none"))
    # Import edges between modules, outside test code.
    names = sorted(modules, key=len, reverse=True)
    edges = defaultdict(set)
    for mod, text in modules.items():
        body = "\n".join(text.split("\n")[: before_tests(text, mod + ".rs")])
        for path in re.findall(r"crate::((?:\w+::)*\w+)", body):
            target = next((m for m in names if m and (path == m or path.startswith(m + "::"))), None)
            if target and target != mod and not mod.startswith(target + "::") \
                    and not target.startswith(mod + "::"):
                edges[mod].add(target)
    # Circles: strongly connected components with more than one module (Tarjan).
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(modules):
        if v not in index:
            visit(v)
    print(f"== import edges between core modules: {sum(len(e) for e in edges.values())}")
    print("== import circles: " + ("; ".join(" ⇄ ".join(c) for c in sccs) or "none"))


if __name__ == "__main__":
    main()
