#!/usr/bin/env python3
"""check_source_map.py [ARCH_MD [SRC]]: the source map of docs/architecture.md
names every file under src/ and no file that is not there.

The map is the table whose rows start with `src/FOLDER/`; its last cell lists
the folder's modules in backticks: `x` stands for x.c and x.h (either or both),
`x.h` for a header with no .c. Every src/FOLDER needs a row. Prints one line
per problem and exits 1 if there is any."""
import os
import re
import sys


def map_rows(md):
    """{folder: [names]} from the table rows that start with `src/FOLDER/`."""
    rows = {}
    for line in md.splitlines():
        m = re.match(r"\|\s*`src/([^`]+?)/?`\s*\|", line)
        if not m:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows.setdefault(m.group(1), []).extend(re.findall(r"`([^`]+)`", cells[-1]))
    return rows


def source_files(src):
    """{folder: set of file names} for every .c and .h under src."""
    files = {}
    for dirpath, _, names in os.walk(src):
        folder = os.path.relpath(dirpath, src)
        for n in names:
            if n.endswith((".c", ".h")):
                files.setdefault(folder, set()).add(n)
    return files


def problems(md, src):
    rows, files = map_rows(md), source_files(src)
    out = []
    for folder in sorted(set(rows) | set(files)):
        have, named = files.get(folder, set()), rows.get(folder)
        if named is None:
            out.append(f"src/{folder}/ has no row in the source map")
            continue
        covered = set()
        for name in named:
            if name.endswith((".c", ".h")):
                hits = {name} & have
            else:
                hits = {name + ".c", name + ".h"} & have
            if not hits:
                out.append(f"the source map names src/{folder}/{name}, which does not exist")
            covered |= hits
        for f in sorted(have - covered):
            out.append(f"src/{folder}/{f} is missing from the source map")
    return out


def main():
    md_path = sys.argv[1] if len(sys.argv) > 1 else "docs/architecture.md"
    src = sys.argv[2] if len(sys.argv) > 2 else "src"
    with open(md_path, encoding="utf-8") as f:
        found = problems(f.read(), src)
    for p in found:
        print(f"{md_path}: {p}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
