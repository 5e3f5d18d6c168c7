#!/usr/bin/env python3
"""The code's shape at a commit, from its own text: the core's tree with the lines of each
file before its tests, the files over a size, every import that runs from a lower layer to
a higher one, and every import circle between files.

    scripts/structure.py [--check] [--root DIR] [REV]

REV defaults to the working tree. With --check the exit status is 1 when a production file
is over the size, an import runs upward, or two or more files import each other in a
circle (tests/tests/structure.rs runs it so). Imports are read from `use` trees (braces
expanded) and from paths written in code, both `crate::…` and `super::…`, outside test
modules, in the core (`landstrip_tray_core`) and the app crate (`landstrip_tray`). A file
and the folder that holds it (its parent `mod.rs`) are one place, as Rust makes them: an
import between them is neither a layer step nor a circle."""

import re
import subprocess
import sys
from collections import defaultdict

LIMIT = 700

# Each crate's folders and loose files, bottom first. A module may import its own layer
# and those below; docs/ARCHITECTURE.md "Layers and two walks" draws the same table.
CRATES = {
    "src-tauri/core/src/": [
        ["lexical", "safe_fs", "sys", "duration", "landstrip", "opencode_cli", "words"],
        ["app_settings", "wire", "activity", "journal"],
        ["policy"],
        ["decision", "origin"],
        ["serving"],
        ["surfaces", "paths"],
        ["lib"],
    ],
    "src-tauri/src/": [
        ["logs", "tray_view", "boot"],
        ["cli"],
        ["headless", "app"],
        ["lib", "main", "bin"],
    ],
}


def files(rev, root):
    """(path, text) of every .rs file under src-tauri/ at REV (None: the working tree)."""
    git = ["git", "-C", root]
    if rev:
        names = subprocess.run(git + ["ls-tree", "-r", "--name-only", rev, "src-tauri/"],
                               capture_output=True, text=True, check=True).stdout.split()
        read = lambda p: subprocess.run(git + ["show", f"{rev}:{p}"], capture_output=True,
                                        text=True, check=True).stdout
    else:
        names = subprocess.run(git + ["ls-files", "-co", "--exclude-standard", "src-tauri/"],
                               capture_output=True, text=True, check=True).stdout.split()
        read = lambda p: open(f"{root}/{p}", encoding="utf-8").read()
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


def module_of(path, base):
    """`decision::broker` for src-tauri/core/src/decision/broker/mod.rs."""
    rel = path[len(base):-3]
    parts = [p for p in rel.split("/") if p != "mod"]
    return "::".join(parts) if parts != ["lib"] else "lib"


def expand(tree):
    """The paths a `use` tree names: `a::{b, c::{d, e}}` → a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+", "", tree)
    depth, start, parts = 0, 0, []
    brace = tree.find("{")
    if brace < 0:
        return [re.sub(r"as\w+$", "", tree)] if tree else []
    head, inner = tree[:brace], tree[brace + 1:tree.rfind("}")]
    for i, ch in enumerate(inner):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    out = []
    for part in parts:
        for sub in expand(part):
            out.append((head + sub) if sub != "self" else head.rstrip(":"))
    return out


def resolve(path, mod):
    """A path as written in module MOD, made absolute within its crate (None: not local)."""
    segs = path.split("::")
    if segs[0] == "crate":
        return segs[1:]
    if segs[0] in ("super", "self"):
        # A file's own module is MOD; `super` in a.rs or a/mod.rs is a's parent.
        here = mod.split("::") if mod != "lib" else []
        while segs and segs[0] in ("super", "self"):
            if segs.pop(0) == "super":
                here = here[:-1]
        return here + segs
    return None


def edges_of(modules):
    """File-to-file imports outside test code, within one crate."""
    names = sorted(modules, key=len, reverse=True)
    edges = defaultdict(set)
    for mod, (path, text) in modules.items():
        body = "\n".join(text.split("\n")[: before_tests(text, path)])
        body = re.sub(r"//[^\n]*", "", body)
        paths = []
        for tree in re.findall(r"\buse\s+([^;]+);", body):
            paths += expand(tree)
        body_no_use = re.sub(r"\buse\s+[^;]+;", "", body)
        paths += re.findall(r"\b((?:crate|super)(?:::\w+)+)", body_no_use)
        for written in paths:
            segs = resolve(written, mod)
            if segs is None:
                continue
            full = "::".join(segs)
            target = next((m for m in names if m != "lib"
                           and (full == m or full.startswith(m + "::"))), None)
            if target and target != mod and not mod.startswith(target + "::") \
                    and not target.startswith(mod + "::"):
                edges[mod].add(target)
    return edges


def circles(modules, edges):
    """Strongly connected components with more than one file (Tarjan)."""
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
    for v in sorted(modules):
        if v not in index:
            visit(v)
    return sccs


def rank_of(mod, layers):
    """The layer of MOD's top-level folder or file; `wire::listener` has a rank of its own
    when the table names it (the listener hosts the broker's decision)."""
    top = mod.split("::")[0]
    for i, layer in enumerate(layers):
        if top in layer:
            return i
    return None


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    root = "."
    if "--root" in args:
        i = args.index("--root")
        root = args[i + 1]
        del args[i:i + 2]
    rev = args[0] if args else None
    all_files = files(rev, root)
    failures = []
    core_base = "src-tauri/core/src/"
    core = [(p, t) for p, t in all_files if p.startswith(core_base)]
    print(f"== {rev or 'working tree'}: the core ({len(core)} files)")
    folders = defaultdict(int)
    loose = []
    for p, t in sorted(core):
        rel = p[len(core_base):]
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
    failures += [f"{p} has {n} lines before its tests (at most {LIMIT})" for n, p in big]
    for base, layers in CRATES.items():
        modules = {module_of(p, base): (p, t) for p, t in all_files
                   if p.startswith(base) and not p[len(base):].startswith("bin/")}
        edges = edges_of(modules)
        upward = []
        for mod, targets in sorted(edges.items()):
            for target in sorted(targets):
                a, b = rank_of(mod, layers), rank_of(target, layers)
                if a is None or b is None:
                    failures.append(f"{base}: {mod if a is None else target} is in no layer")
                elif b > a:
                    upward.append(f"{mod} → {target}")
        found = circles(modules, edges)
        print(f"== {base}: {sum(len(e) for e in edges.values())} imports between files")
        print("   upward: " + ("; ".join(upward) or "none"))
        print("   circles: " + ("; ".join(" ⇄ ".join(c) for c in found) or "none"))
        failures += [f"{base}: upward import {u}" for u in upward]
        failures += [f"{base}: import circle {' ⇄ '.join(c)}" for c in found]
    if check and failures:
        print("\n".join(["== FAILED"] + failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
