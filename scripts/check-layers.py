#!/usr/bin/env python3
"""Checks that modules import one way only.

Reads the layer rules from the fenced ```layers block of docs/architecture.md, one line per
crate:

    sched-core: model formulas select | snapshot bench_cluster | ...

Top-level modules of a crate are listed in levels separated by `|`; a module may use items of
modules in earlier levels only (never one in its own level or a later one). Every crate of the
workspace, listed or not, is also checked for import circles among sibling modules (modules
with one parent): a circle fails the check.

What counts as a use: `crate::a::b` paths and `super::` paths anywhere in the code (comments
and string literals are skipped), resolved to the module they name. Test-only code (a
`#[cfg(test)]` module, inline or in its own file) is left out: tests may reach up.

Exit status 0 when every rule holds; 1 with one line per violation otherwise.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def strip_code(text):
    """Replaces comments and string/char literals with spaces, keeping line structure."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not re.match(r"\w", text[i - 1:i] or " "):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'" and re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12]):
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            out.append(" " * len(m.group(0)))
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_test_blocks(code):
    """Removes inline `#[cfg(test)] mod x { ... }` blocks; returns the code and the names of
    `#[cfg(test)] mod x;` declarations (test-only files)."""
    test_files = set(re.findall(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+(\w+)\s*;", code))
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+\w+\s*\{", code)
        if not m:
            break
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        code = code[:m.start()] + code[j:]
    return code, test_files


def crate_modules(src):
    """Module path (tuple) -> (file, code without tests) for every non-test module file."""
    mods = {}

    def visit(path, file):
        with open(file, encoding="utf-8") as f:
            code, test_files = drop_test_blocks(strip_code(f.read()))
        mods[path] = (file, code)
        base = os.path.dirname(file) if os.path.basename(file) in ("lib.rs", "mod.rs", "main.rs") \
            else os.path.splitext(file)[0]
        for name in re.findall(r"(?:^|\s)(?:pub(?:\([a-z]+\))?\s+)?mod\s+(\w+)\s*;", code):
            if name in test_files:
                continue
            for cand in (os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")):
                if os.path.exists(cand):
                    visit(path + (name,), cand)
                    break

    visit((), os.path.join(src, "lib.rs"))
    return mods


def uses(path, code, mods):
    """The module paths this module's code refers to."""
    found = set()
    for m in re.finditer(r"\b((?:crate|super)(?:\s*::\s*(?:super|\w+))*)", code):
        parts = [p.strip() for p in m.group(1).split("::")]
        if parts[0] == "crate":
            target, rest = (), parts[1:]
        else:
            target = path[:-1] if path else ()
            rest = parts[1:]
            while rest and rest[0] == "super":
                target, rest = target[:-1], rest[1:]
        # `use super::{a, b}` / `use crate::x::{a, b}`: each name in the braces.
        tail = code[m.end():m.end() + 400]
        names = [rest]
        g = re.match(r"\s*::\s*\{([^}]*)\}", tail)
        if g:
            names = [rest + [x.strip().split("::")[0].split(" ")[0]] for x in g.group(1).split(",") if x.strip()]
        for nm in names:
            t = target
            for p in nm:
                if t + (p,) in mods:
                    t = t + (p,)
                else:
                    break
            found.add(t)
    return found


def sibling_edges(mods):
    """(parent, a, b): a child `a` of `parent` (or its descendants) uses sibling `b`."""
    edges = set()
    for path, (_, code) in mods.items():
        for t in uses(path, code, mods):
            # Lowest common ancestor, then the children of it on each side.
            k = 0
            while k < min(len(path), len(t)) and path[k] == t[k]:
                k += 1
            if k < len(path) and k < len(t):
                edges.add((path[:k], path[k], t[k]))
    return edges


def find_cycles(edges):
    """Circles among siblings, one per parent and strongly connected group."""
    by_parent = {}
    for parent, a, b in edges:
        by_parent.setdefault(parent, {}).setdefault(a, set()).add(b)
    cycles = []
    for parent, graph in by_parent.items():
        index, low, stack, on, counter = {}, {}, [], set(), [0]

        def strong(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in graph.get(v, ()):
                if w not in index:
                    strong(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    cycles.append((parent, sorted(group)))

        for v in list(graph):
            if v not in index:
                strong(v)
    return cycles


def layer_rules():
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        doc = f.read()
    m = re.search(r"```layers\n(.*?)```", doc, re.S)
    if not m:
        sys.exit("check-layers: docs/architecture.md has no ```layers block")
    rules = {}
    for line in m.group(1).strip().splitlines():
        crate, _, levels = line.partition(":")
        rules[crate.strip()] = [lvl.split() for lvl in levels.split("|")]
    return rules


def main():
    rules = layer_rules()
    problems = []
    crates_dir = os.path.join(ROOT, "crates")
    for crate in sorted(os.listdir(crates_dir)):
        src = os.path.join(crates_dir, crate, "src")
        if not os.path.exists(os.path.join(src, "lib.rs")):
            continue
        mods = crate_modules(src)
        edges = sibling_edges(mods)
        for parent, group in find_cycles(edges):
            where = "::".join(parent) or "crate root"
            problems.append(f"{crate}: import circle among the modules of {where}: {' <-> '.join(group)}")
        if crate in rules:
            level = {}
            for i, names in enumerate(rules[crate]):
                for name in names:
                    level[name] = i
            tops = {p[0] for p in mods if p}
            for t in sorted(tops - set(level)):
                problems.append(f"{crate}: module `{t}` has no layer in docs/architecture.md")
            for parent, a, b in sorted(edges):
                if parent == () and a in level and b in level and level[b] >= level[a]:
                    problems.append(f"{crate}: `{a}` uses `{b}`, which is not in an earlier layer")
        elif crate == "sched-core":
            problems.append("sched-core: no layer rules in docs/architecture.md")
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print("check-layers: every module imports one way")


if __name__ == "__main__":
    main()
