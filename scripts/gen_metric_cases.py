#!/usr/bin/env python3
"""gen_metric_cases.py: expected chrF / chrF++ / TER results from the real
sacreBLEU, for tests/test_metrics.c and tests/cli_bleu.sh.

sacreBLEU is not a Debian package and is never vendored here: put a checkout
of sacreBLEU 2.6.0 on PYTHONPATH (it needs python3-regex, -portalocker,
-tabulate, -numpy, -colorama, -lxml) and run

    PYTHONPATH=/path/to/sacrebleu /usr/bin/python3 scripts/gen_metric_cases.py [--keep-inputs] [--runs=R,R] [CASE ...]

It writes the input files of tfm's own metric cases (tests/data/metrics/*/,
made here from data/*.en and a fixed seed) and, for those and for the BLEU
cases in tests/data/bleu/*/, tests/data/metrics/<case>.json: for each run
(metric + options) sacreBLEU's score, its printed line (width 2), its
signature, the corpus statistics, each segment's statistics and each
sentence-level score. make test only reads the committed results.
"""
import gzip
import json
import os
import random
import re
import sys
import time

try:
    import sacrebleu
    from sacrebleu.metrics import CHRF, TER
    from sacrebleu.utils import sum_of_lists
except ImportError as e:
    sys.exit(f"gen_metric_cases.py: sacreBLEU is not importable ({e}); "
             "put a sacreBLEU 2.x checkout on PYTHONPATH")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "metrics")
SEED = 2024

# name -> (metric class, constructor kwargs, tfm options)
RUNS = {
    "chrf": (CHRF, {}, ["-m", "chrf"]),
    "chrf_pp": (CHRF, {"word_order": 2}, ["-m", "chrf", "--chrf-word-order", "2"]),
    "chrf_lc": (CHRF, {"lowercase": True}, ["-m", "chrf", "--chrf-lowercase"]),
    "chrf_ws": (CHRF, {"whitespace": True}, ["-m", "chrf", "--chrf-whitespace"]),
    "chrf_eps": (CHRF, {"eps_smoothing": True, "word_order": 2},
                 ["-m", "chrf", "--chrf-eps-smoothing", "--chrf-word-order", "2"]),
    "chrf_b1_c4": (CHRF, {"beta": 1, "char_order": 4},
                   ["-m", "chrf", "--chrf-beta", "1", "--chrf-char-order", "4"]),
    "ter": (TER, {}, ["-m", "ter"]),
    "ter_cs": (TER, {"case_sensitive": True}, ["-m", "ter", "--ter-case-sensitive"]),
    "ter_nopunct": (TER, {"no_punct": True}, ["-m", "ter", "--ter-no-punct"]),
    "ter_norm": (TER, {"normalized": True}, ["-m", "ter", "--ter-normalized"]),
    "ter_norm_asian": (TER, {"normalized": True, "asian_support": True},
                       ["-m", "ter", "--ter-normalized", "--ter-asian-support"]),
    "ter_nopunct_asian": (TER, {"no_punct": True, "asian_support": True},
                          ["-m", "ter", "--ter-no-punct", "--ter-asian-support"]),
    "ter_all": (TER, {"normalized": True, "no_punct": True, "asian_support": True,
                      "case_sensitive": True},
                ["-m", "ter", "--ter-normalized", "--ter-no-punct", "--ter-asian-support",
                 "--ter-case-sensitive"]),
}
TER_NORM_RUNS = ["ter_norm", "ter_norm_asian", "ter_nopunct_asian", "ter_all"]
ALL_RUNS = list(RUNS)
CHEAP_RUNS = ["chrf", "chrf_pp", "ter"]


def read_lines(path):
    # sacrebleu.py: smart_open(newline="\n"), then line.rstrip() per line
    with open(path, encoding="utf-8", newline="\n") as f:
        return [line.rstrip() for line in f]


def score_run(run, hyps, refs):
    cls, kwargs, tfm_opts = RUNS[run]
    metric = cls(references=refs, **kwargs)
    t0 = time.time()
    seg = metric._extract_corpus_statistics(hyps, None)
    corpus = metric._aggregate_and_compute(seg) if seg else None
    sig = metric.get_signature().format()
    sentence = [metric._compute_score_from_stats(s).score for s in seg]
    res = {
        "tfm_options": tfm_opts,
        "name": corpus.name if corpus else None,
        "score": corpus.score if corpus else None,
        "line": corpus.format(width=2) if corpus else None,
        "signature": sig,
        "stats": list(sum_of_lists(seg)) if seg else [],
        "segments": [list(s) for s in seg],
        "sentence_scores": sentence,
    }
    seconds = time.time() - t0
    # the API's sentence_score, as `sacrebleu --sentence-level` calls it
    for i in range(min(len(hyps), 5)):
        s = metric.sentence_score(hyps[i], [r[i] for r in refs])
        assert abs(s.score - sentence[i]) < 1e-12, (run, i)
    return res, seconds


def write_case(name, hyp_path, ref_paths, runs, description, merge=False):
    """merge (--runs=...): keep the case's other runs as they are in its JSON."""
    hyps = read_lines(os.path.join(ROOT, hyp_path))
    refs = [read_lines(os.path.join(ROOT, p)) for p in ref_paths]
    path = os.path.join(OUT, name + ".json")
    old_runs = {}
    if merge and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old_runs = json.load(f)["runs"]
    out = {
        "sacrebleu_version": sacrebleu.__version__,
        "description": description,
        "hyp": hyp_path,
        "refs": ref_paths,
        "n_lines": len(hyps),
        "runs": dict(old_runs),
    }
    for run in runs:
        r, seconds = score_run(run, hyps, refs)
        out["runs"][run] = r
        print(f"{name:24s} {run:12s} {r['line']}  ({seconds:.2f} s)", flush=True)
    order = [r for r in ALL_RUNS if r in out["runs"]]
    out["runs"] = {r: out["runs"][r] for r in order}
    with open(path, "w", encoding="utf-8") as f:
        f.write(compact_json(out))


def compact_json(obj):
    """Indented JSON with every list of numbers on one line."""
    text = json.dumps(obj, ensure_ascii=False, indent=1)
    return re.sub(r"\[\s+([-0-9.e+,\s]+?)\s+\]",
                  lambda m: "[" + re.sub(r"\s+", "", m.group(1)) + "]", text) + "\n"


WRITE_INPUTS = True


def write_lines(path, lines):
    if not WRITE_INPUTS:    # --keep-inputs: score the committed files as they are
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")


def perturb(words, rng):
    """Word-level noise that exercises TER's shifts: block moves, swaps,
    drops, insertions, substitutions and case changes."""
    w = list(words)
    for _ in range(rng.randint(0, 3)):
        op = rng.random()
        if not w:
            break
        i = rng.randrange(len(w))
        if op < 0.25 and len(w) > 3:                       # move a block
            n = rng.randint(1, min(4, len(w) - i))
            block, rest = w[i:i + n], w[:i] + w[i + n:]
            j = rng.randint(0, len(rest))
            w = rest[:j] + block + rest[j:]
        elif op < 0.4 and len(w) > 1:
            j = rng.randrange(len(w))
            w[i], w[j] = w[j], w[i]
        elif op < 0.55:
            del w[i]
        elif op < 0.7:
            w.insert(i, rng.choice(["a", "the", "is", ".", ",", "man", "dog"]))
        elif op < 0.85:
            w[i] = w[i].upper() if rng.random() < 0.5 else w[i].capitalize()
        else:
            w[i] = w[i][::-1]
    return w


def make_inputs(rng):
    """tfm's own cases: name -> (hyp path, ref paths, runs, description)."""
    cases = {}
    d = "tests/data/metrics"
    val = read_lines(os.path.join(ROOT, "data", "val.en"))
    test = read_lines(os.path.join(ROOT, "data", "test_2016_flickr.en"))

    # Multi30k-like: validation references, perturbed hypotheses, 2 refs
    n = 600
    refs1 = val[:n]
    refs2 = test[:n]
    hyps = [" ".join(perturb(r.split(), rng)) for r in refs1]
    write_lines(f"{ROOT}/{d}/m30k/hyp.txt", hyps)
    write_lines(f"{ROOT}/{d}/m30k/ref1.txt", refs1)
    write_lines(f"{ROOT}/{d}/m30k/ref2.txt", refs2)
    cases["m30k"] = (f"{d}/m30k/hyp.txt", [f"{d}/m30k/ref1.txt"], ALL_RUNS,
                     "val.en 600 lines, word-level noise (moves, swaps, drops, inserts, case)")
    cases["m30k_multiref"] = (f"{d}/m30k/hyp.txt", [f"{d}/m30k/ref1.txt", f"{d}/m30k/ref2.txt"],
                              ALL_RUNS, "m30k against two references (the second unrelated)")

    # Small vocabulary: many repeated words, so shift ties decide
    vocab = ["a", "b", "c", "d", "A", "B", "e", ".", ",", "x"]
    hyps, refs = [], []
    for i in range(1500):
        nr = rng.choice([0, 1, 2, 3, 5, 8, 12, 20, 30])
        ref = [rng.choice(vocab) for _ in range(nr)]
        hyp = perturb(ref, rng) if rng.random() < 0.7 else \
            [rng.choice(vocab) for _ in range(rng.choice([0, 1, 4, 10, 25]))]
        hyps.append(" ".join(hyp))
        refs.append(" ".join(ref))
    write_lines(f"{ROOT}/{d}/small_vocab/hyp.txt", hyps)
    write_lines(f"{ROOT}/{d}/small_vocab/ref.txt", refs)
    cases["small_vocab"] = (f"{d}/small_vocab/hyp.txt", [f"{d}/small_vocab/ref.txt"], ALL_RUNS,
                            "1500 random lines over 10 words: ties in TER's shift ranking")

    # Long lines and extreme length ratios: shift distance 50, the 1000
    # candidate limit, the widened beam
    words = " ".join(val).split()
    hyps, refs = [], []
    for i in range(40):
        kind = i % 4
        start = rng.randrange(len(words) - 300)
        ref = words[start:start + rng.randint(55, 130)]
        if kind == 0:
            hyp = perturb(ref, rng)
            for _ in range(6):
                hyp = perturb(hyp, rng)
        elif kind == 1:
            hyp = ref[:rng.randint(1, 3)]                 # ratio >> 50
        elif kind == 2:
            hyp = ref * 2                                 # hyp longer than ref
        else:
            hyp = list(ref)
            rng.shuffle(hyp)
        hyps.append(" ".join(hyp))
        refs.append(" ".join(ref))
    write_lines(f"{ROOT}/{d}/long/hyp.txt", hyps)
    write_lines(f"{ROOT}/{d}/long/ref.txt", refs)
    cases["long"] = (f"{d}/long/hyp.txt", [f"{d}/long/ref.txt"], ALL_RUNS,
                     "40 lines of 55-260 words: shuffles, 1-3 word hypotheses, doubled lines")

    # Unicode: casing specials, Python whitespace, combining marks, CJK,
    # emoji, punctuation around words (chrF++'s splitter), empty lines
    uni = ["İstanbul", "ΟΔΟΣ", "Straße", "STRASSE", "ǅemal", "café", "cafe\u0301", "東京",
           "日本語", "😀", "👍🏽", "a\u3000b", "x\u00a0y", "p\u2009q", "\u1680z", "r\x1cs",
           "(hi)", "hi!", "«quote»", "...", "-", "'s", "K", "ﬁne", "Ωmega", "ǈ", "\u0130i"]
    hyps, refs, refs2 = [], [], []
    for i in range(400):
        ref = [rng.choice(uni + vocab) for _ in range(rng.choice([0, 1, 3, 6, 10]))]
        hyp = perturb(ref, rng)
        ref2 = perturb(ref, rng) if i % 5 else []
        sep = rng.choice([" ", "  ", "\t", " \u3000", "\u2003"])
        hyps.append(sep.join(hyp) + rng.choice(["", " ", "\u00a0", "\t"]))
        refs.append((" " if i % 7 == 0 else "") + " ".join(ref))
        refs2.append(" ".join(ref2))
    write_lines(f"{ROOT}/{d}/unicode/hyp.txt", hyps)
    write_lines(f"{ROOT}/{d}/unicode/ref1.txt", refs)
    write_lines(f"{ROOT}/{d}/unicode/ref2.txt", refs2)
    cases["unicode"] = (f"{d}/unicode/hyp.txt", [f"{d}/unicode/ref1.txt", f"{d}/unicode/ref2.txt"],
                        ALL_RUNS, "400 lines: casing specials, Unicode spaces, CJK, emoji, "
                        "punctuation, empty references (second file)")

    # tercom's normalization (--ter-normalized, --ter-asian-support): XML
    # entities, possessives, periods and commas next to digits or not,
    # dashes after digits, ASCII punctuation, CJK ideographs, kana, CJK and
    # full-width punctuation, and plain words
    pieces = ["&amp;", "&lt;", "&gt;", "&quot;", "&amp;lt;", "&apos;", "dog's", "it's", "'s",
              "3.5", "1,000", "a.b", "x,y", "end.", ",start", "9.", ".9", "x-ray", "10-20",
              "5-", "-5", "(a)", "[b]", "{c}", "a/b", "~", "@home", "#tag", "$5", "100%",
              "東京都", "日本語です", "中文，标点。", "、", "。", "「引用」", "【注】", "！", "？",
              "（括弧）", "ひらがな", "カタカナ", "ｶﾀｶﾅ", "・", "ｰ", "ㇰ", "⺀", "㌀", "豈", "︰", "㈀",
              "ＡＢＣ", "Hello", "WORLD", "café", "naïve", "the", "a", "of", ".", ",", "-", "'"]
    hyps, refs = [], []
    for i in range(300):
        ref = [rng.choice(pieces) for _ in range(rng.choice([0, 1, 2, 4, 7, 12]))]
        hyp = perturb(ref, rng)
        glue = rng.choice([" ", "", " "])
        hyps.append(glue.join(hyp))
        refs.append(" ".join(ref) if i % 3 else "".join(ref))
    write_lines(f"{ROOT}/{d}/ter_norm/hyp.txt", hyps)
    write_lines(f"{ROOT}/{d}/ter_norm/ref.txt", refs)
    cases["ter_norm"] = (f"{d}/ter_norm/hyp.txt", [f"{d}/ter_norm/ref.txt"],
                         ["ter", "ter_cs", "ter_nopunct"] + TER_NORM_RUNS,
                         "300 lines for tercom's normalization: entities, possessives, "
                         "numbers, punctuation, CJK, kana, full-width forms")
    return cases


def main():
    global WRITE_INPUTS
    if "--keep-inputs" in sys.argv:
        WRITE_INPUTS = False
        sys.argv.remove("--keep-inputs")
    runs_only = None
    for a in list(sys.argv):
        if a.startswith("--runs="):     # --runs=chrf,ter: only these runs
            runs_only = a[len("--runs="):].split(",")
            sys.argv.remove(a)
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(SEED)
    cases = make_inputs(rng)
    bleu_dir = os.path.join(ROOT, "tests", "data", "bleu")
    for name in sorted(os.listdir(bleu_dir)):
        folder = os.path.join(bleu_dir, name)
        if not os.path.isdir(folder):
            continue
        files = sorted(os.listdir(folder))
        refs = [f for f in files if f.startswith("ref") and f.endswith(".txt")]
        runs = ALL_RUNS
        if name == "own_long_lines":    # 5,000-20,000-word lines: too slow for TER in Python
            runs = [r for r in ALL_RUNS if r.startswith("chrf")]
        cases["bleu_" + name] = (f"tests/data/bleu/{name}/hyp.txt",
                                 [f"tests/data/bleu/{name}/{r}" for r in refs], runs,
                                 f"the BLEU case tests/data/bleu/{name}")
    only = set(sys.argv[1:])
    for name, (hyp, refs, runs, desc) in cases.items():
        if only and name not in only:
            continue
        if runs_only:
            runs = [r for r in runs if r in runs_only]
        write_case(name, hyp, refs, runs, desc, merge=runs_only is not None)


if __name__ == "__main__":
    main()
