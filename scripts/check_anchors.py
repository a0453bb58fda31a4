#!/usr/bin/env python3
"""check_anchors.py FILE.md ...: every (#anchor) and (FILE.md#anchor) link in
the given Markdown files names a heading, by GitHub's slug rules (lower case;
letters, digits, marks, '-', '_' and spaces kept, spaces to '-'; a
repeat gets -1, -2, ...). Used by tests/cli_docs.sh."""
import os, re, sys, unicodedata

def slug(text):
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)   # links: their text
    text = text.strip().lower()
    keep = ''.join(c for c in text
                   if c in ' -_' or unicodedata.category(c)[0] in 'LNM')
    return keep.replace(' ', '-')

def anchors(path):
    seen, out, fence = {}, set(), False
    for line in open(path, encoding='utf-8'):
        if line.startswith('```'):
            fence = not fence
            continue
        m = None if fence else re.match(r'#{1,6} +(.*?)#*\s*$', line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f'{s}-{n}')
    return out

bad = 0
for path in sys.argv[1:]:
    here = anchors(path)
    text = open(path, encoding='utf-8').read()
    text = re.sub(r'```.*?```', '', text, flags=re.S)
    for target, frag in re.findall(r'\]\(([^)#\s]*)#([^)\s]+)\)', text):
        if target.startswith('http'):
            continue
        where = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
        if not os.path.exists(where):
            print(f'{path}: #{frag}: no file {target}'); bad += 1; continue
        if frag not in (here if not target else anchors(where)):
            print(f'{path}: {target}#{frag}: no such heading'); bad += 1
print(f'{bad} broken anchor(s)') if bad else None
sys.exit(1 if bad else 0)
