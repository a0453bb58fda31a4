#!/usr/bin/env python3
"""gen_significance_cases.py: sacreBLEU's own figures for tfm bleu's
significance tests (--confidence, --paired-bs, --paired-ar), and numpy's
default_rng stream they are drawn from, for tests/test_significance.c and
tests/cli_bleu.sh.

sacreBLEU is not a Debian package and is never vendored here: put a checkout
of sacreBLEU 2.6.0 on PYTHONPATH (it needs python3-numpy, -regex,
-portalocker, -tabulate, -colorama, -lxml) and run

    PYTHONPATH=/path/to/sacrebleu /usr/bin/python3 scripts/gen_significance_cases.py

It reads tests/data/significance/{ref,base,ema,lin}.txt (300 lines of the
Multi30k val set: its German reference and three en-de models' beam-5
outputs) and writes tests/data/significance/expected.json. make test only
reads the committed file.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np

try:
    import sacrebleu
    from sacrebleu.metrics import BLEU, CHRF, TER
except ImportError as e:
    sys.exit(f"gen_significance_cases.py: needs sacreBLEU on PYTHONPATH ({e})")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASE = os.path.join(ROOT, "tests", "data", "significance")
SYSTEMS = ["base.txt", "ema.txt", "lin.txt"]


def lines(name):
    with open(os.path.join(CASE, name), encoding="utf-8") as f:
        return [line.rstrip() for line in f.read().split("\n")[:-1]]


def numpy_stream():
    """The stream itself: raw outputs, choice() and boolean integers() for
    a few seeds and ranges, including a seed above 2^32 and a range of 1."""
    out = {"raw": {}, "choice": [], "bool": []}
    for seed in (12345, 0, 2**40 + 5):
        out["raw"][str(seed)] = [str(x) for x in np.random.PCG64(seed).random_raw(4)]
    for seed, n, size in ((12345, 300, 700), (7, 1, 5), (12345, 3, 50), (2**40 + 5, 1014, 40)):
        idx = np.random.default_rng(seed).choice(n, size=size, replace=True)
        out["choice"].append({"seed": seed, "n": n, "values": [int(x) for x in idx]})
    bits = np.random.default_rng(12345).integers(2, size=100, dtype=bool)
    out["bool"].append({"seed": 12345, "values": [int(x) for x in bits]})
    return out


def confidence(hyps, refs, n):
    """corpus_score(n_bootstrap=n) of each metric: score, mean and interval."""
    res = {}
    for metric in (BLEU(), CHRF(), TER()):
        sc = metric.corpus_score(hyps, [refs], n_bootstrap=n)
        res[sc.name] = {"score": sc.score, "mean": sc._mean, "ci": sc._ci}
    return res


def paired(test, n):
    """sacreBLEU's command line, as a user runs it, in JSON."""
    cmd = [sys.executable, "-m", "sacrebleu", os.path.join(CASE, "ref.txt"), "-i",
           *[os.path.join(CASE, s) for s in SYSTEMS], "-m", "bleu", "chrf", "ter",
           f"--paired-{test}", f"--paired-{test}-n", str(n), "-f", "json"]
    env = dict(os.environ, SACREBLEU_SEED="12345")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    rows = json.loads(out)
    for r in rows:       # the case's own file names, as tfm bleu is given them
        r["system"] = r["system"].replace(CASE + "/", "")
    return {"n": n, "rows": rows}


def main():
    refs = lines("ref.txt")
    expected = {
        "sacrebleu": sacrebleu.__version__,
        "numpy": np.__version__,
        "stream": numpy_stream(),
        "confidence": {"n": 1000, "systems": {s: confidence(lines(s), refs, 1000) for s in SYSTEMS}},
        "confidence_200": {"n": 200, "systems": {"base.txt": confidence(lines("base.txt"), refs, 200)}},
        "paired_bs": paired("bs", 1000),
        "paired_ar": paired("ar", 2000),
    }
    text = json.dumps(expected, indent=1, ensure_ascii=False)
    # a list of numbers on one line
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", text)
    with open(os.path.join(CASE, "expected.json"), "w", encoding="utf-8") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
