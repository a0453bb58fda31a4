#!/usr/bin/env python3
"""sacrebleu_diff.py: random differential test of `tfm bleu` against the real
sacreBLEU, on hostile text. make test compares tfm with sacreBLEU's figures
for fixed cases (tests/data/metrics, written by gen_metric_cases.py); this
script draws new ones: lines built from pieces that trip tokenizers (CJK,
Thai, emoji, combining marks, zero-width and Unicode spaces, NEL and LINE
SEPARATOR, XML entities, numbers with separators, apostrophes, URLs), a
hypothesis that is an edited copy of the reference (or a stranger), one or
two references, and random options of each metric:

  BLEU  --tokenize 13a|intl|zh|char|none, -lc
  chrF  --chrf-word-order 0|2, --chrf-lowercase, --chrf-whitespace
  TER   --ter-normalized, --ter-no-punct, --ter-asian-support,
        --ter-case-sensitive

Each case's corpus scores must agree to 1e-6. sacreBLEU is not a Debian
package and is never vendored here: put a checkout of sacreBLEU 2.x on
PYTHONPATH (it needs python3-regex, -portalocker, -tabulate, -numpy,
-colorama, -lxml) and run

    PYTHONPATH=/path/to/sacrebleu /usr/bin/python3 scripts/sacrebleu_diff.py \\
        [--seed S] [--cases N] [--tfm ./tfm] [--keep DIR]

It prints each mismatch (the case's files are copied to DIR/case-N-METRIC)
and ends with "N cases, M mismatches"; exit 1 on any mismatch, 2 on a usage
error.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

try:
    from sacrebleu.metrics import BLEU, CHRF, TER
except ImportError as e:
    sys.exit(f"sacrebleu_diff.py: sacreBLEU is not importable ({e}); "
             "put a sacreBLEU 2.x checkout on PYTHONPATH")

PIECES = [
    "the", "Dog", "dog", "a", "Mann", "straße", "STRASSE", "ǅ", "İ", "ß", "ﬁ", "Σ", "ς",
    "ΣΑΣ", ".", ",", "!", "?", "'s", "n't", "-", "--", "...", "$", "5", "3.14", "1,000",
    "€", "&amp;", "&lt;", "&quot;", "漢字", "中文。", "日本語", "한국어", "ไทย", "😀", "👍🏽",
    "e\u0301", "\u200b", "\u00a0", "\u3000", "\t", "  ", "(", ")", "[", "]", "\"", "«", "»",
    "“", "”", "・", "ー", "１２３", "Ａ", "\u2028", "\x0b", "\x0c", "\x85", "\r", "xxx",
    "http://a.b/c?d=e", "e-mail", "U.S.", "don't", "12:30", "-5", "+", "=", "@", "#", "%",
    "\\", "/",
]


def random_line(rng):
    out = []
    for _ in range(rng.choice([0, 1, 2, 3, 5, 8, 13, 20])):
        out.append(rng.choice(PIECES))
        out.append(rng.choice([" ", " ", " ", "", "  "]))
    return "".join(out).rstrip(" ")


def edited(rng, line):
    words = line.split(" ")
    for _ in range(rng.randint(0, 3)):
        if words and rng.random() < 0.5:
            del words[rng.randrange(len(words))]
        else:
            words.insert(rng.randrange(len(words) + 1), rng.choice(PIECES))
    return " ".join(words)


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("\n".join(lines) + "\n")


def read_lines(path):
    # sacrebleu.py: smart_open(newline="\n"), then line.rstrip() per line
    with open(path, encoding="utf-8", newline="\n") as f:
        return [line.rstrip() for line in f]


def metric_runs(rng):
    """Three (name, sacreBLEU metric, tfm options) with random options."""
    tok = rng.choice(["13a", "intl", "zh", "char", "none"])
    lc = rng.random() < 0.3
    bleu = ("bleu", BLEU(tokenize=tok, lowercase=lc),
            ["-m", "bleu", "--tokenize", tok] + (["-lc"] if lc else []))
    wo, cl, ws = rng.choice([0, 2]), rng.random() < 0.3, rng.random() < 0.2
    chrf = ("chrf", CHRF(word_order=wo, lowercase=cl, whitespace=ws),
            ["-m", "chrf", "--chrf-word-order", str(wo)] + (["--chrf-lowercase"] if cl else [])
            + (["--chrf-whitespace"] if ws else []))
    tn, tp, ta, tc = (rng.random() < 0.3 for _ in range(4))
    ter = ("ter", TER(normalized=tn, no_punct=tp, asian_support=ta, case_sensitive=tc),
           ["-m", "ter"] + (["--ter-normalized"] if tn else []) + (["--ter-no-punct"] if tp else [])
           + (["--ter-asian-support"] if ta else []) + (["--ter-case-sensitive"] if tc else []))
    return [bleu, chrf, ter]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--tfm", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tfm"))
    ap.add_argument("--keep", default="sacrebleu-diff-failures")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    mismatches = 0
    with tempfile.TemporaryDirectory() as d:
        for case in range(args.cases):
            refs = [random_line(rng) for _ in range(rng.randint(1, 12))]
            n_refs = rng.choice([1, 1, 2])
            refsets = [refs] + [[edited(rng, r) for r in refs] for _ in range(n_refs - 1)]
            hyps = [edited(rng, r) if rng.random() < 0.8 else random_line(rng) for r in refs]
            files = [os.path.join(d, "hyp")] + [os.path.join(d, f"ref{i}") for i in range(n_refs)]
            for path, lines in zip(files, [hyps] + refsets):
                write_lines(path, lines)
            # as sacreBLEU's command line reads them
            hyps = read_lines(files[0])
            refsets = [read_lines(p) for p in files[1:]]
            for name, metric, opts in metric_runs(rng):
                want = metric.corpus_score(hyps, refsets).score
                p = subprocess.run([args.tfm, "bleu"] + files + opts + ["--json"],
                                   capture_output=True, text=True)
                got = json.loads(p.stdout)["score"] if p.returncode == 0 else None
                if got is None or abs(want - got) > 1e-6:
                    mismatches += 1
                    keep = os.path.join(args.keep, f"case-{case}-{name}")
                    os.makedirs(keep, exist_ok=True)
                    for path in files:
                        shutil.copy(path, keep)
                    print(f"mismatch: case {case} {name} {' '.join(opts)}: sacreBLEU {want}, "
                          f"tfm {got if got is not None else p.stderr.strip()} (files in {keep})")
    print(f"{args.cases} cases, {mismatches} mismatches")
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
