#!/usr/bin/env python3
"""Keeps docs/architecture.md true to the code: every `#include "codeact/<module>/..."` in
include/codeact/<module>/ and src/<module>/ must follow an arrow of the doc's `layers` block (or
their transitive closure), every module there must be named in it, and every arrow it draws must
still be used by some #include.

    python3 tests/integration/check_layers.py [REPO]      # exit 0 when true, 1 with the reasons
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"codeact/([a-z_]+)/')


def read_layers(doc_path):
    """The `layers` fenced block: {module: [modules it uses directly]}."""
    arrows, inside = {}, False
    with open(doc_path, encoding="utf-8") as f:
        for line in f:
            stripped = line.strip()
            if stripped == "```layers":
                inside = True
                continue
            if inside and stripped.startswith("```"):
                break
            if inside and stripped and not stripped.startswith("#"):
                module, _, uses = stripped.partition(":")
                arrows[module.strip()] = uses.split()
    return arrows


def closure(arrows):
    allowed = {}
    for module in arrows:
        seen, todo = set(), list(arrows[module])
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(arrows.get(m, []))
        allowed[module] = seen
    return allowed


def includes(repo):
    """{(from, to): [file:line, ...]} for every cross-module include of include/ and src/."""
    edges = {}
    modules = set()
    for base in ("include/codeact", "src"):
        root = os.path.join(repo, base)
        for dirpath, _, files in os.walk(root):
            rel = os.path.relpath(dirpath, root)
            if rel == ".":
                continue
            module = rel.split(os.sep)[0]
            for name in files:
                if not name.endswith((".hpp", ".cpp", ".h")):
                    continue
                modules.add(module)
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) != module:
                            where = f"{os.path.relpath(path, repo)}:{number}"
                            edges.setdefault((module, m.group(1)), []).append(where)
    return modules, edges


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    doc = os.path.join(repo, "docs", "architecture.md")
    arrows = read_layers(doc)
    if not arrows:
        print(f"{doc}: no ```layers block")
        return 1
    allowed = closure(arrows)
    modules, edges = includes(repo)
    problems = []
    for module in sorted(modules - set(arrows)):
        problems.append(f"module '{module}' is not in the layers of docs/architecture.md")
    for (src, dst), where in sorted(edges.items()):
        if src in allowed and dst not in allowed[src]:
            problems.append(f"{src} -> {dst} is not allowed by docs/architecture.md "
                            f"({len(where)} include(s), first {where[0]})")
    for module, uses in sorted(arrows.items()):
        if module not in modules:
            continue  # drawn ahead of the code (server)
        for dst in uses:
            if (module, dst) not in edges:
                problems.append(f"docs/architecture.md draws {module} -> {dst}, but no #include uses it")
    for p in problems:
        print(p)
    if not problems:
        used = sorted(f"{s}->{d}" for s, d in edges)
        print(f"layers true: {len(modules)} modules, {len(edges)} module edges ({', '.join(used)})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
