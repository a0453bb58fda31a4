#!/usr/bin/env python3
"""check_tables.py MAX_LINES MAX_CELL FILE...: each Markdown FILE is at most
MAX_LINES lines and no cell of its tables (lines that start with '|') holds
over MAX_CELL characters. Prints one line per problem; exits 1 if any."""
import re
import sys


def problems(path, max_lines, max_cell):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    out = []
    if len(lines) > max_lines:
        out.append(f"{path}: {len(lines)} lines, over {max_lines}")
    for no, line in enumerate(lines, 1):
        if not line.lstrip().startswith("|"):
            continue
        cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
        for c in cells:
            if len(c.strip()) > max_cell:
                out.append(f"{path}:{no}: a table cell of {len(c.strip())} characters, "
                           f"over {max_cell}: {c.strip()[:40]}...")
    return out


def main():
    if len(sys.argv) < 4:
        print("usage: check_tables.py MAX_LINES MAX_CELL FILE...", file=sys.stderr)
        return 2
    found = []
    for path in sys.argv[3:]:
        found += problems(path, int(sys.argv[1]), int(sys.argv[2]))
    for p in found:
        print(p)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
