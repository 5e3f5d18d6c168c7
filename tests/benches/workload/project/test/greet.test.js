// A test as agents write them: it uses the installed package and a scratch file in the
// system's temporary directory.
const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { greet } = require("greet");

test("greets into a scratch file", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "app-test-"));
  const file = path.join(dir, "out.txt");
  fs.writeFileSync(file, greet("agent"));
  assert.strictEqual(fs.readFileSync(file, "utf8"), "hello, agent");
  fs.rmSync(dir, { recursive: true });
});
