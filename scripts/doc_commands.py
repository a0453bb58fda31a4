#!/usr/bin/env python3
"""doc_commands.py: the tfm command lines in the code blocks of Markdown files,
one a line: FILE:LINE, the subcommand and the options it uses, tab-separated.
tests/cli_docs.sh checks that `tfm help SUBCOMMAND` lists each option. A
synopsis continued on indented lines counts as one command."""
import re
import sys

OPTION = re.compile(r'(?<![\w-])(--?[A-Za-z][\w-]*)')


def commands(path):
    fence, cmd = None, None
    for no, line in enumerate(open(path, encoding='utf-8'), 1):
        text = re.sub(r'^\s*\$ ', '', line.rstrip('\n')).split(' #')[0]
        text = re.sub(r'^(mpirun .*?|\S*/)(?=tfm )', '', text)
        if cmd and (fence is None or not text.startswith(' ')):
            yield cmd
            cmd = None
        if re.match(r'\s*```', line):
            fence = None if fence is not None else line.strip()[3:]
        elif cmd:
            cmd[2] += ' ' + text
        elif fence not in (None, 'json') and re.match(r'tfm [a-z]', text):
            words = text.split()
            cmd = [f'{path}:{no}', words[1], ' '.join(words[2:])]


for path in sys.argv[1:]:
    for where, sub, rest in commands(path):
        print(f'{where}\t{sub}\t{" ".join(OPTION.findall(rest))}')
