#!/usr/bin/python3
"""bleu_oracle.py: an independent re-implementation of sacreBLEU 2.x's BLEU in
Python (sacreBLEU itself is not installable here), used to write the
expected.json of our own test cases in tests/data/bleu/. It follows
sacrebleu/metrics/bleu.py, tokenizers/tokenizer_13a.py, tokenizer_re.py,
tokenizer_intl.py (needs python3-regex), tokenizer_zh.py and tokenizer_char.py
step by step.
`--check DIR...` verifies it against cases scored by the real sacreBLEU.

Usage: /usr/bin/python3 scripts/bleu_oracle.py CASE_DIR...   (writes CASE_DIR/expected.json
       from CASE_DIR/case.json: {"description", "hyp", "refs", "runs": {name: options}})
       /usr/bin/python3 scripts/bleu_oracle.py --check CASE_DIR...
       /usr/bin/python3 scripts/bleu_oracle.py --tokenize tests/data/bleu/tokenize.json
           (recomputes each input's tokens for every tokenizer, with and without -lc)
"""
import json
import math
import os
import re
import sys
from collections import Counter

import regex

RE_13A = [
    (re.compile(r'([\{-\~\[-\` -\&\(-\+\:-\@\/])'), r' \1 '),
    (re.compile(r'([^0-9])([\.,])'), r'\1 \2 '),
    (re.compile(r'([\.,])([^0-9])'), r' \1 \2'),
    (re.compile(r'([0-9])(-)'), r'\1 \2 '),
]
RE_INTL = [
    (regex.compile(r'(\P{N})(\p{P})'), r'\1 \2 '),
    (regex.compile(r'(\p{P})(\P{N})'), r' \1 \2'),
    (regex.compile(r'(\p{S})'), r' \1 '),
]


def tok_13a(line):
    line = line.replace('<skipped>', '').replace('-\n', '').replace('\n', ' ')
    for a, b in (('&quot;', '"'), ('&amp;', '&'), ('&lt;', '<'), ('&gt;', '>')):
        line = line.replace(a, b)
    line = ' {} '.format(line)
    for r, rep in RE_13A:
        line = r.sub(rep, line)
    return ' '.join(line.strip().split())


def tok_intl(line):
    for r, rep in RE_INTL:
        line = r.sub(rep, line)
    return ' '.join(line.split())


# tokenizer_zh.py's "Chinese" ranges, written and compared as it does: as
# Python strings. Two entries have five hex digits after \\u, which Python
# reads as a four-digit escape and a digit (two-character strings), so they
# cover U+2001-U+2A6D and U+2F81-U+2FA1; the comparison below keeps that.
ZH_RANGES = [
    ('\u3400', '\u4db5'), ('\u4e00', '\u9fa5'), ('\u9fa6', '\u9fbb'), ('\uf900', '\ufa2d'),
    ('\ufa30', '\ufa6a'), ('\ufa70', '\ufad9'), ('\u20000', '\u2a6d6'), ('\u2f800', '\u2fa1d'),
    ('\uff00', '\uffef'), ('\u2e80', '\u2eff'), ('\u3000', '\u303f'), ('\u31c0', '\u31ef'),
    ('\u2f00', '\u2fdf'), ('\u2ff0', '\u2fff'), ('\u3100', '\u312f'), ('\u31a0', '\u31bf'),
    ('\ufe10', '\ufe1f'), ('\ufe30', '\ufe4f'), ('\u2600', '\u26ff'), ('\u2700', '\u27bf'),
    ('\u3200', '\u32ff'), ('\u3300', '\u33ff'),
]


def tok_zh(line):
    # strip, " c " around each Chinese character, then tokenizer_re's
    # regexes (13a's, with no spaces added around the line)
    line = ''.join(' ' + c + ' ' if any(a <= c <= b for a, b in ZH_RANGES) else c
                   for c in line.strip())
    for r, rep in RE_13A:
        line = r.sub(rep, line)
    return ' '.join(line.split())


TOK = {'13a': tok_13a, 'intl': tok_intl, 'zh': tok_zh, 'char': lambda x: ' '.join(x for x in x),
       'none': lambda x: x}
SMOOTH_DEFAULTS = {'none': None, 'floor': 0.1, 'add-k': 1, 'exp': None}


def ngrams(line):
    toks = line.split()
    c = Counter()
    for n in range(1, 5):
        for i in range(len(toks) - n + 1):
            c[tuple(toks[i:i + n])] += 1
    return c, len(toks)


def my_log(x):
    return -9999999999 if x == 0.0 else math.log(x)


def compute_bleu(correct, total, sys_len, ref_len, smooth_method, smooth_value, eff):
    if smooth_value is None:
        smooth_value = SMOOTH_DEFAULTS[smooth_method]
    bp = (math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0) if sys_len < ref_len else 1.0
    precisions = [0.0] * 4
    if not any(correct):
        return 0.0, correct, total, precisions, bp
    smooth_mteval = 1.
    eff_order = 4
    for n in range(1, 5):
        if smooth_method == 'add-k' and n > 1:
            correct[n - 1] += smooth_value
            total[n - 1] += smooth_value
        if total[n - 1] == 0:
            break
        if eff:
            eff_order = n
        if correct[n - 1] == 0:
            if smooth_method == 'exp':
                smooth_mteval *= 2
                precisions[n - 1] = 100. / (smooth_mteval * total[n - 1])
            elif smooth_method == 'floor':
                precisions[n - 1] = 100. * smooth_value / total[n - 1]
        else:
            precisions[n - 1] = 100. * correct[n - 1] / total[n - 1]
    score = bp * math.exp(sum([my_log(p) for p in precisions[:eff_order]]) / eff_order)
    return score, correct, total, precisions, bp


def seg_stats(hyp, refs, o):
    def prep(s):
        if o.get('lowercase'):
            s = s.lower()
        return TOK[o.get('tokenize', '13a')](s.rstrip())
    ref_ngrams, ref_lens = None, []
    for r in refs:
        c, n = ngrams(prep(r))
        ref_lens.append(n)
        if ref_ngrams is None:
            ref_ngrams = c
        else:
            for g, k in c.items():
                ref_ngrams[g] = max(ref_ngrams[g], k)
    h, hl = ngrams(prep(hyp))
    best_d, best = -1, -1
    for rl in ref_lens:
        d = abs(hl - rl)
        if best_d == -1 or d < best_d:
            best_d, best = d, rl
        elif d == best_d and rl < best:
            best = rl
    correct, total = [0] * 4, [0] * 4
    for g, k in h.items():
        total[len(g) - 1] += k
        if g in ref_ngrams:
            correct[len(g) - 1] += min(k, ref_ngrams[g])
    return [hl, best] + correct + total


def score_dict(stats, o, eff):
    s, c, t, p, bp = compute_bleu(list(stats[2:6]), list(stats[6:10]), stats[0], stats[1],
                                  o.get('smooth', 'exp'), o.get('smooth_value'), eff)
    return {'score': s, 'precisions': p, 'counts': c, 'totals': t, 'bp': bp,
            'ratio': stats[0] / stats[1] if stats[1] else 0, 'sys_len': stats[0], 'ref_len': stats[1]}


def read_lines(path):
    # sacreBLEU's smart_open: UTF-8, newline="\n", readlines()
    with open(path, encoding='utf-8', newline='\n') as f:
        return f.readlines()


def run(case_dir, hyp, refs, o):
    H = read_lines(os.path.join(case_dir, hyp))
    R = [read_lines(os.path.join(case_dir, r)) for r in refs]
    assert all(len(r) == len(H) for r in R)
    seg = [seg_stats(h, rs, o) for h, *rs in zip(H, *R)]
    if o.get('sentence_level'):
        sents = [score_dict(s, o, True) for s in seg]
        return {'options': o, 'sentences': sents, 'scores': [x['score'] for x in sents]}
    tot = [sum(x) for x in zip(*seg)] if seg else [0] * 10
    d = score_dict(tot, o, False)
    d['options'] = o
    return d


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1, abs(a), abs(b))


def check(case_dir):
    exp = json.load(open(os.path.join(case_dir, 'expected.json')))
    ok = True
    for name, r in exp['runs'].items():
        o = dict(r['options'])
        got = run(case_dir, exp['hyp'], exp['refs'], o)
        pairs = list(zip(got['sentences'], r['sentences'])) if 'sentences' in r else [(got, r)]
        for g, e in pairs:
            for k in ('score', 'bp', 'sys_len', 'ref_len'):
                ok &= close(g[k], e[k])
            for k in ('precisions', 'counts', 'totals'):
                ok &= all(close(x, y) for x, y in zip(g[k], e[k]))
        print(case_dir, name, 'ok' if ok else 'MISMATCH')
    return ok


def write(case_dir):
    spec = json.load(open(os.path.join(case_dir, 'case.json')))
    out = {'case': os.path.basename(case_dir.rstrip('/')), 'description': spec['description'],
           'hyp': spec['hyp'], 'refs': spec['refs'],
           'oracle': 'scripts/bleu_oracle.py (re-implementation of sacreBLEU 2.x)', 'runs': {}}
    for name, o in spec['runs'].items():
        out['runs'][name] = run(case_dir, spec['hyp'], spec['refs'], o)
    with open(os.path.join(case_dir, 'expected.json'), 'w') as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write('\n')


def tokenize_file(path):
    """Recomputes every tokenizer[_lc] key of each input in tokenize.json."""
    d = json.load(open(path))
    for c in d['cases']:
        for name in TOK:
            for lc in (False, True):
                s = c['input'].lower() if lc else c['input']
                # the tokens, as the n-gram counter splits them, joined by one space
                c[name + ('_lc' if lc else '')] = ' '.join(TOK[name](s.rstrip()).split())
    with open(path, 'w') as f:
        json.dump(d, f, indent=0, ensure_ascii=False)
        f.write('\n')


if __name__ == '__main__':
    if sys.argv[1] == '--tokenize':
        sys.exit(tokenize_file(sys.argv[2]))
    if sys.argv[1] == '--check':
        sys.exit(0 if all([check(d) for d in sys.argv[2:]]) else 1)
    for d in sys.argv[1:]:
        write(d)
