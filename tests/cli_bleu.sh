#!/usr/bin/env bash
# cli_bleu.sh: `tfm bleu` through the real binary: output line, exit codes and
# the exact one-line errors.
cd "$(dirname "$0")/.." || exit 1
. tests/cli_lib.sh
D=tests/data/bleu/val_edge_mix

expect_exit 0 "default run" -- "$TFM" bleu "$D/hyp.txt" "$D/ref.txt"
check "sacreBLEU's line" test "$(cat "$T/out")" = \
    "BLEU = 71.51 88.2/85.6/83.3/81.7 (BP = 0.844 ratio = 0.855 hyp_len = 136 ref_len = 159)"
check "signature on stderr" grep -q '^nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:tfm-' "$T/err"

expect_exit 0 "-lc before the files" -- "$TFM" bleu -lc "$D/hyp.txt" "$D/ref.txt"
check "-lc score" grep -q '^BLEU = 80.91 98.5/96.8/94.7/93.3 ' "$T/out"
expect_exit 0 "--lowercase --tokenize=intl" -- "$TFM" bleu "$D/hyp.txt" "$D/ref.txt" --lowercase --tokenize=intl
check "intl lc score" grep -q '^BLEU = 80.91 ' "$T/out"
expect_exit 0 "--tokenize char" -- "$TFM" bleu "$D/hyp.txt" "$D/ref.txt" --tokenize char
check "char score" grep -q '^BLEU = 72.54 85.8/84.9/84.4/83.8 (BP = 0.856 ratio = 0.866 hyp_len = 528 ref_len = 610)$' "$T/out"

expect_exit 0 "--sentence" -- "$TFM" bleu "$D/hyp.txt" "$D/ref.txt" --sentence
check "one line a sentence" test "$(wc -l <"$T/out")" = 12
check "sentence 2 (effective order)" test "$(sed -n 2p "$T/out")" = \
    "BLEU = 0.41 100.0/100.0/0.0/0.0 (BP = 0.004 ratio = 0.154 hyp_len = 2 ref_len = 13)"
check "sentence signature" grep -q '|eff:yes|' "$T/err"

expect_exit 0 "--json" -- "$TFM" bleu "$D/hyp.txt" "$D/ref.txt" --json
check "json is valid with the keys" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert abs(d["score"] - 71.51271225118616) < 1e-9, d
assert [round(p, 6) for p in d["precisions"]] == [88.235294, 85.6, 83.333333, 81.730769]
assert d["counts"] == [120, 107, 95, 85] and d["totals"] == [136, 125, 114, 104]
assert d["sys_len"] == 136 and d["ref_len"] == 159 and abs(d["bp"] - 0.8444095552415237) < 1e-12
assert abs(d["ratio"] - 0.8553459119496856) < 1e-12
assert d["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:tfm-")
' "$T/out"
check "json: nothing on stderr" test ! -s "$T/err"

R=tests/data/bleu/val_multiref2
expect_exit 0 "two references" -- "$TFM" bleu "$R/hyp.txt" "$R/ref1.txt" "$R/ref2.txt"
check "multiref score" grep -q '^BLEU = 57.49 ' "$T/out"

expect_exit 0 "hyp from stdin" -- sh -c "\"$TFM\" bleu - \"$D/ref.txt\" < \"$D/hyp.txt\""
check "stdin score" grep -q '^BLEU = 71.51 ' "$T/out"

: >"$T/empty1"; : >"$T/empty2"
expect_exit 0 "empty files" -- "$TFM" bleu "$T/empty1" "$T/empty2"
check "empty files score 0" test "$(cat "$T/out")" = \
    "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 0.000 hyp_len = 0 ref_len = 0)"

# sacreBLEU reads strict UTF-8 (it stops with UnicodeDecodeError); NUL is
# a character to Python and kept.
printf 'ok\ncaf\303 x\n' >"$T/bad"
printf 'ok\ncafe x\n' >"$T/good"
expect_exit 1 "invalid UTF-8 hypothesis" -- "$TFM" bleu "$T/bad" "$T/good"
expect_err_line "invalid UTF-8 message" "tfm: $T/bad: line 2: invalid UTF-8 at byte 4"
expect_exit 1 "invalid UTF-8 second reference" -- "$TFM" bleu "$T/good" "$T/good" "$T/bad" -lc --tokenize intl
expect_err_line "invalid UTF-8 reference message" "tfm: $T/bad: line 2: invalid UTF-8 at byte 4"
expect_exit 1 "sentence scores of a file with invalid UTF-8" -- "$TFM" bleu --sentence "$T/bad" "$T/bad"
check "no sentence score printed before the UTF-8 error" test ! -s "$T/out"
printf 'ok\n\355\240\200\n' >"$T/surrogate"
expect_exit 1 "a UTF-8 surrogate" -- "$TFM" bleu "$T/good" "$T/surrogate"
expect_err_line "surrogate message" "tfm: $T/surrogate: line 2: invalid UTF-8 at byte 1"
printf 'x\000y z\n' >"$T/nul"
expect_exit 0 "NUL bytes are characters" -- "$TFM" bleu "$T/nul" "$T/nul" -lc --tokenize intl
check "NUL lines score like any text" test "$(cat "$T/out")" = "BLEU = 0.00 100.0/100.0/0.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 2 ref_len = 2)"

printf 'a\nb\nc\n' >"$T/three"; printf 'a\nb\n' >"$T/two"
expect_exit 1 "different line counts" -- "$TFM" bleu "$T/three" "$T/two"
expect_err_line "line count message" "tfm: line counts differ: $T/three has 3 lines, $T/two has 2"
expect_exit 1 "second reference too short" -- "$TFM" bleu "$T/three" "$T/three" "$T/two"
expect_err_line "second ref message" "tfm: line counts differ: $T/three has 3 lines, $T/two has 2"
expect_exit 1 "reference longer" -- "$TFM" bleu "$T/two" "$T/three"
expect_err_line "reference longer message" "tfm: line counts differ: $T/two has 2 lines, $T/three has 3"
printf 'a\nb' >"$T/two_nonl"
expect_exit 1 "a last line without newline counts" -- "$TFM" bleu "$T/three" "$T/two_nonl"
expect_err_line "no-newline count message" "tfm: line counts differ: $T/three has 3 lines, $T/two_nonl has 2"
# Regular files are counted first: --sentence prints nothing before the error.
expect_exit 1 "sentence scores with different counts" -- "$TFM" bleu --sentence "$T/three" "$T/two"
check "no sentence score printed before the error" test ! -s "$T/out"
expect_exit 1 "stdin shorter than the reference" -- sh -c "\"$TFM\" bleu - \"$T/three\" < \"$T/two\""
expect_err_line "stdin shorter message" "tfm: line counts differ: $T/three has 3 lines, stdin has 2"
expect_exit 2 "stdin twice" -- "$TFM" bleu - -
expect_err_line "stdin twice message" "tfm: bleu: stdin ('-') can be only one of the files"
# Streamed: endless input with newlines stops at the end of the shorter file.
expect_exit 1 "endless hypothesis" -- sh -c "yes | timeout 20 \"$TFM\" bleu - \"$T/three\""
expect_err_line "endless hypothesis message" "tfm: line counts differ: stdin has more than 3 lines, $T/three has 3"
mkfifo "$T/fifo"
(cat "$T/three" >"$T/fifo" &)
expect_exit 0 "hypothesis from a FIFO" -- "$TFM" bleu "$T/fifo" "$T/three"
check "FIFO score" grep -q "^BLEU = 0.00 100.0/" "$T/out"
expect_exit 1 "missing file" -- "$TFM" bleu "$T/three" "$T/missing.txt"
expect_err_line "missing file message" "tfm: $T/missing.txt: cannot open: No such file or directory"
expect_exit 2 "unknown option" -- "$TFM" bleu "$T/three" "$T/three" --frobnicate
expect_err_line "unknown option message" "tfm: bleu: unknown option '--frobnicate' (see tfm bleu --help)"
expect_exit 2 "missing option value" -- "$TFM" bleu "$T/three" "$T/three" --tokenize
expect_err_line "missing value message" "tfm: bleu: option '--tokenize' needs a value"
expect_exit 2 "bad --tokenize" -- "$TFM" bleu "$T/three" "$T/three" --tokenize ja-mecab
expect_err_line "bad --tokenize message" "tfm: bleu: --tokenize: expected 13a, intl, zh, char or none, got 'ja-mecab'"
# zh spaces out each Chinese character: a one-character change costs one
# unigram, where 13a sees one long token (scores from scripts/bleu_oracle.py).
printf '我爱北京天安门。\n' >"$T/zh_ref"
printf '我爱北京天安门！\n' >"$T/zh_hyp"
expect_exit 0 "--tokenize zh" -- "$TFM" bleu "$T/zh_hyp" "$T/zh_ref" --tokenize zh
check "--tokenize zh score" grep -qx "BLEU = 84.09 87.5/85.7/83.3/80.0 (BP = 1.000 ratio = 1.000 hyp_len = 8 ref_len = 8)" "$T/out"
check "--tokenize zh signature" grep -q "|tok:zh|" "$T/err"
expect_exit 0 "13a on the same Chinese" -- "$TFM" bleu "$T/zh_hyp" "$T/zh_ref"
check "13a sees one token" grep -q "hyp_len = 1 ref_len = 1" "$T/out"
expect_exit 2 "bad --smooth" -- "$TFM" bleu "$T/three" "$T/three" --smooth=max
expect_err_line "bad --smooth message" "tfm: bleu: --smooth: expected exp, floor, add-k or none, got 'max'"
expect_exit 2 "bad --smooth-value" -- "$TFM" bleu "$T/three" "$T/three" --smooth floor --smooth-value x
expect_err_line "bad --smooth-value message" "tfm: bleu: --smooth-value: expected a non-negative number, got 'x'"
expect_exit 2 "missing reference" -- "$TFM" bleu "$T/three"
expect_err_line "missing reference message" "tfm: bleu: expected HYP REF [REF ...] (see tfm bleu --help)"
# Endless input without a newline: a line stops at 64 MiB instead of filling memory.
printf 'a b\n' >"$T/ref1"
expect_exit 1 "hyp over 64 MiB on one line" -- sh -c "head -c 70000000 /dev/zero | \"$TFM\" bleu - \"$T/ref1\""
expect_err_line "over-long line" "tfm: stdin: line 1: longer than 67108864 bytes"
expect_exit 1 "/dev/zero as hyp" -- timeout 20 "$TFM" bleu /dev/zero "$T/ref1"
expect_err_line "/dev/zero line" "tfm: /dev/zero: line 1: longer than 67108864 bytes"

# ---- chrF and TER (-m), against sacreBLEU 2.6.0's results in tests/data/metrics ----
M=tests/data/metrics/m30k
expect_exit 0 "-m chrf" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m chrf
check "chrF line" test "$(cat "$T/out")" = "chrF2 = 86.98"
check "chrF signature" grep -qx 'nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:tfm-[0-9.]*' "$T/err"
expect_exit 0 "-m ter" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m ter
check "TER line" test "$(cat "$T/out")" = "TER = 10.70"
check "TER signature" grep -qx 'nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:tfm-[0-9.]*' "$T/err"
expect_exit 0 "-m bleu chrf ter (sacreBLEU's form)" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m ter chrf bleu
check "three lines, in sacreBLEU's order" test "$(cut -d' ' -f1 "$T/out" | tr '\n' ' ')" = "BLEU chrF2 TER "
check "three signatures, in the same order" test "$(cut -c1-20 "$T/err" | tr '\n' ' ')" = \
    "nrefs:1|case:mixed|e nrefs:1|case:mixed|e nrefs:1|case:lc|tok: "
cp "$T/out" "$T/three_metrics"
expect_exit 0 "-m chrf -m ter -m bleu" -- "$TFM" bleu -m chrf -m ter -m bleu "$M/hyp.txt" "$M/ref1.txt"
check "repeated -m gives the same" cmp -s "$T/out" "$T/three_metrics"
expect_exit 0 "--metrics=bleu,chrf,ter" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" --metrics=bleu,chrf,ter
check "comma list gives the same" cmp -s "$T/out" "$T/three_metrics"
expect_exit 0 "chrF++" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m chrf --chrf-word-order 2
check "chrF++ line" test "$(cat "$T/out")" = "chrF2++ = 87.11"
check "chrF++ signature" grep -q '|nw:2|' "$T/err"
expect_exit 0 "chrF and TER, two references" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" tests/data/metrics/m30k/ref2.txt -m chrf ter
check "two-reference lines" test "$(tr '\n' ' ' <"$T/out")" = "chrF2 = 86.98 TER = 10.88 "
check "two-reference signatures" test "$(grep -c '^nrefs:2|' "$T/err")" = 2
expect_exit 0 "-m chrf ter --json" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m chrf ter --json
check "one JSON object a metric" /usr/bin/python3 -c '
import json, sys
c, t = [json.loads(l) for l in open(sys.argv[1])]
e = json.load(open(sys.argv[2]))["runs"]
assert c["name"] == "chrF2" and abs(c["score"] - e["chrf"]["score"]) < 1e-9, c
assert c["stats"] == e["chrf"]["stats"] and c["char_order"] == 6 and c["word_order"] == 0 and c["beta"] == 2
assert c["signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:tfm-")
assert t["name"] == "TER" and abs(t["score"] - e["ter"]["score"]) < 1e-9, t
assert [t["num_edits"], t["ref_length"]] == e["ter"]["stats"], t
' "$T/out" tests/data/metrics/m30k.json
check "--json: nothing on stderr" test ! -s "$T/err"
expect_exit 0 "-lc does not lowercase chrF (as sacreBLEU)" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m chrf -lc
check "-lc chrF line" test "$(cat "$T/out")" = "chrF2 = 86.98"
expect_exit 0 "--chrf-lowercase" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m chrf --chrf-lowercase
check "--chrf-lowercase line and signature" test "$(cat "$T/out")" = "chrF2 = 88.58" -a -n "$(grep '|case:lc|' "$T/err")"
expect_exit 0 "--ter-case-sensitive" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m ter --ter-case-sensitive
check "--ter-case-sensitive line and signature" test "$(cat "$T/out")" = "TER = 12.24" -a -n "$(grep '|case:mixed|' "$T/err")"
# every TER tokenizer option through the binary: the line and the signature
# (up to its version field) as sacreBLEU printed them
N=tests/data/metrics/ter_norm
for run in ter ter_cs ter_nopunct ter_norm ter_norm_asian ter_nopunct_asian ter_all; do
    read -r -a opts < <(/usr/bin/python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1]))["runs"][sys.argv[2]]["tfm_options"]))' "$N.json" "$run")
    expect_exit 0 "TER $run (${opts[*]:2})" -- "$TFM" bleu "$N/hyp.txt" "$N/ref.txt" "${opts[@]}"
    check "TER $run: line and signature as sacreBLEU's" /usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["runs"][sys.argv[2]]
line, sig = open(sys.argv[3]).read().strip(), open(sys.argv[4]).read().strip()
assert line == r["line"], (line, r["line"])
assert sig.split("|version:")[0] == r["signature"].split("|version:")[0], (sig, r["signature"])
' "$N.json" "$run" "$T/out" "$T/err"
done
expect_exit 0 "TER --sentence" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m ter --sentence
check "one TER a line" test "$(wc -l <"$T/out")" = 600
expect_exit 0 "chrF of empty files" -- "$TFM" bleu "$T/empty1" "$T/empty2" -m chrf ter
check "empty files: chrF and TER 0" test "$(tr '\n' ' ' <"$T/out")" = "chrF2 = 0.00 TER = 0.00 "
expect_exit 2 "--sentence with two metrics" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m chrf ter --sentence
expect_err_line "--sentence one metric message" "tfm: bleu: --sentence takes one metric (as sacreBLEU)"
expect_exit 2 "unknown metric" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m meteor
expect_err_line "unknown metric message" "tfm: bleu: -m: expected bleu, chrf or ter, got 'meteor'"
expect_exit 2 "-m without a value" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m
expect_err_line "-m without a value message" "tfm: bleu: option '-m' needs a value"
expect_exit 2 "bad --chrf-word-order" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m chrf --chrf-word-order -1
expect_err_line "bad --chrf-word-order message" "tfm: bleu: --chrf-word-order: expected an integer from 0 to 32, got '-1'"
expect_exit 2 "bad --chrf-char-order" -- "$TFM" bleu "$M/hyp.txt" "$M/ref1.txt" -m chrf --chrf-char-order=0
expect_err_line "bad --chrf-char-order message" "tfm: bleu: --chrf-char-order: expected an integer from 1 to 32, got '0'"
expect_exit 0 "help names the metrics" -- "$TFM" bleu --help
check "help: -m and chrF/TER options" test -n "$(grep -e '-m, --metrics' "$T/out")" -a -n "$(grep -e '--chrf-word-order' "$T/out")" -a -n "$(grep -e '--ter-case-sensitive' "$T/out")"

# Every run of every case in tests/data/metrics through the binary: the
# printed corpus line, the signature (but its version) and, for the
# single-reference cases, each --sentence line, against sacreBLEU.
check "all sacreBLEU metric runs through tfm bleu" /usr/bin/python3 - "$TFM" <<'PY'
import glob, json, subprocess, sys
tfm, bad, n = sys.argv[1], [], 0
for path in sorted(glob.glob("tests/data/metrics/*.json")):
    case = json.load(open(path, encoding="utf-8"))
    files = [case["hyp"]] + case["refs"]
    for name, run in case["runs"].items():
        if run["line"] is None:
            continue
        n += 1
        p = subprocess.run([tfm, "bleu", *files, *run["tfm_options"]], capture_output=True, text=True)
        sig = p.stderr.strip().rsplit("|version:", 1)[0]
        if p.stdout.strip() != run["line"] or sig != run["signature"].rsplit("|version:", 1)[0]:
            bad.append(f"{path} {name}: {p.stdout.strip()!r} {p.stderr.strip()!r} vs {run['line']!r}")
        if len(case["refs"]) == 1 and case["n_lines"] <= 2000:
            p = subprocess.run([tfm, "bleu", *files, *run["tfm_options"], "--sentence"],
                               capture_output=True, text=True)
            want = [f"{run['name']} = {s:.2f}" for s in run["sentence_scores"]]
            if p.stdout.splitlines() != want:
                bad.append(f"{path} {name} --sentence differs")
print(f"{n} runs", file=sys.stderr)
if bad or n < 180:
    print("\n".join(bad[:20]) or f"only {n} runs", file=sys.stderr)
    sys.exit(1)
PY

expect_exit 0 "--help" -- "$TFM" bleu --help
check "help text on stdout" grep -q '^usage: tfm bleu HYP REF' "$T/out"
expect_exit 0 "tfm help bleu" -- "$TFM" help bleu
check "help via tfm help" grep -q -- '--tokenize 13a|intl|zh|char|none' "$T/out"


# Significance (sacreBLEU's --confidence, --paired-bs, --paired-ar) on 300
# lines of Multi30k val with three en-de models' outputs; expected.json holds
# sacreBLEU 2.6.0's own figures (scripts/gen_significance_cases.py). Run from
# the case's folder so the system names are its file names.
G=tests/data/significance
expect_exit 0 "-ci" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" -ci -m bleu chrf ter
check "-ci: the interval after the score, as sacreBLEU" grep -qE \
    '^BLEU = 40\.60 \(μ = [0-9.]+ ± [0-9.]+\) [0-9.]+/[0-9.]+/[0-9.]+/[0-9.]+ \(BP = ' "$T/out"
check "-ci: signature with bs and seed" grep -q '^nrefs:1|bs:1000|seed:12345|case:mixed|eff:no|tok:13a|smooth:exp|version:tfm-' "$T/err"
check "-ci: chrF and TER lines" test "$(sed -n '2s/ (.*//p;3s/ (.*//p' "$T/out" | tr '\n' ,)" = "chrF2 = 63.89,TER = 45.37,"
check "-ci: sacreBLEU's means and intervals" /usr/bin/python3 - "$T/out" "$G/expected.json" <<'PY'
import json, re, sys
got = open(sys.argv[1], encoding="utf-8").read().splitlines()
want = json.load(open(sys.argv[2]))["confidence"]["systems"]["base.txt"]
for line, name in zip(got, ("BLEU", "chrF2", "TER")):
    w = want[name]
    assert f"{name} = {w['score']:.2f} (μ = {w['mean']:.2f} ± {w['ci']:.2f})" in line, (line, w)
PY
expect_exit 0 "--confidence --confidence-n 200 --json" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" --confidence --confidence-n=200 --json
check "--json: sacreBLEU's confidence keys, rounded as sacreBLEU -w 2 rounds them" /usr/bin/python3 - "$T/out" "$G/expected.json" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1], encoding="utf-8").read())
w = json.load(open(sys.argv[2]))["confidence_200"]["systems"]["base.txt"]["BLEU"]
assert d["confidence_mean"] == round(w["mean"], 2) and d["confidence_var"] == round(w["ci"], 2), d
assert d["confidence"] == f"μ = {w['mean']:.2f} ± {w['ci']:.2f}", d
assert "|bs:200|seed:12345|" in d["signature"], d
assert not d["verbose_score"].startswith("40.60"), d   # as sacreBLEU: the score is apart
PY
SACREBLEU_SEED=7 "$TFM" bleu "$G/base.txt" "$G/ref.txt" -ci >"$T/out" 2>"$T/err"
check "SACREBLEU_SEED sets the seed" grep -q '|bs:1000|seed:7|' "$T/err"
"$TFM" bleu "$G/base.txt" "$G/ref.txt" -ci >"$T/default" 2>/dev/null
check "another seed, other resamples" sh -c "! cmp -s '$T/default' '$T/out'"
SACREBLEU_SEED=none "$TFM" bleu "$G/base.txt" "$G/ref.txt" -ci >/dev/null 2>"$T/err"
check "SACREBLEU_SEED=none: seed:none" grep -q '|seed:none|' "$T/err"
SACREBLEU_SEED=-1 "$TFM" bleu "$G/base.txt" "$G/ref.txt" -ci >/dev/null 2>"$T/err"
check "a bad SACREBLEU_SEED is a usage error" test $? = 2 -a "$(cat "$T/err")" = \
    "tfm: bleu: SACREBLEU_SEED: expected a non-negative integer below 2^64 or 'none', got '-1'"

for test in bs ar; do
    n=$([ $test = bs ] && echo 1000 || echo 2000)
    (cd "$G" && "$TFM" bleu base.txt ref.txt -m bleu chrf ter --paired-$test ema.txt \
        --paired-$test=lin.txt --paired-$test-n $n) >"$T/out" 2>"$T/err"
    check "--paired-$test runs" test $? = 0
    check "--paired-$test: sacreBLEU's table" /usr/bin/python3 - "$T/out" "$G/expected.json" "paired_$test" <<'PY'
import json, sys
got = open(sys.argv[1], encoding="utf-8").read().splitlines()
rows = json.load(open(sys.argv[2]))[sys.argv[3]]["rows"]
bs = sys.argv[3] == "paired_bs"
head = got[0].split()
assert head[0] == "System" and ("BLEU (μ ± 95% CI)" in got[0]) == bs, got[0]
assert len(got) == 1 + len(rows), got
for line, row in zip(got[1:], rows):
    assert line.startswith(row["system"] + " "), (line, row["system"])
    for name in ("BLEU", "chrF2", "TER"):
        r = row[name]
        cell = f"{r['score']:.2f}"
        if r["mean"] is not None:
            cell += f" ({r['mean']:.2f} ± {r['ci']:.2f})"
        if r["p_value"] is not None:
            cell += f" (p = {r['p_value']:.4f})" + ("*" if r["p_value"] <= 0.05 else "")
        assert cell in line, (cell, line)
PY
    what=$([ $test = bs ] && echo "bootstrap resampling test with 1000 resamples" ||
           echo "approximate randomization test with 2000 trials")
    check "--paired-$test: the test named, then the signatures" grep -q "^paired $what: " "$T/err"
    check "--paired-$test: the signature names the test" grep -q "^nrefs:1|$test:$n|seed:12345|case:mixed|" "$T/err"
done
check "lin.txt differs significantly, ema.txt does not" sh -c \
    "grep -q '^lin.txt .*(p = 0.0005)\*' '$T/out' && ! grep -q '^ema.txt .*\*' '$T/out'"

# sacreBLEU's single-dash names: each gives what its long option gives.
same_as_long() {    # name, then the args with the short names -- the args with long ones
    local name=$1 short=() long=()
    shift
    while [ "$1" != -- ]; do short+=("$1"); shift; done
    shift
    long=("$@")
    (cd "$G" && "$TFM" bleu base.txt ref.txt "${short[@]}") >"$T/short" 2>&1
    local rs=$?
    (cd "$G" && "$TFM" bleu base.txt ref.txt "${long[@]}") >"$T/long" 2>&1
    check "sacreBLEU's $name: exit 0" test $rs = 0
    check "sacreBLEU's $name: the same output as the long form" cmp -s "$T/short" "$T/long"
}
same_as_long "-tok -s -sv" -tok intl -s floor -sv 0.2 -- --tokenize intl --smooth floor --smooth-value 0.2
same_as_long "--smooth-method" --smooth-method add-k -- --smooth add-k
same_as_long "-sl" -sl -- --sentence
same_as_long "-cc -cw" -m chrf -cc 4 -cw 2 -- -m chrf --chrf-char-order 4 --chrf-word-order 2
same_as_long "-ci -cin" -ci -cin 200 -- --confidence --confidence-n 200
same_as_long "-pbs -pbsn" -pbs ema.txt -pbsn 100 -- --paired-bs ema.txt --paired-bs-n 100
same_as_long "-par -parn" -par lin.txt -parn 100 -- --paired-ar lin.txt --paired-ar-n 100
check "the short names change the result (floor smoothing is not the default)" \
    bash -c "cd '$G' && ! cmp -s <('$TFM' bleu base.txt ref.txt -s floor -sv 0.2 --sentence 2>&1) \
        <('$TFM' bleu base.txt ref.txt --sentence 2>&1)"
expect_exit 2 "-tok without a value" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" -tok
check "-tok without a value: names the option" \
    grep -qx "tfm: bleu: option '--tokenize' needs a value" "$T/err"
# --score-only (-b) and --width (-w): the figures sacreBLEU 2.6.0 prints
# (sacrebleu ref.txt -i base.txt -b -w 1 -m bleu chrf ter; ... -b -w 3 -ci;
# ... -b -sl -w 1)
expect_exit 0 "-b" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" -b
check "-b: the score alone" test "$(cat "$T/out")" = "40.60"
check "-b: nothing on stderr" test ! -s "$T/err"
expect_exit 0 "-b -w 1, three metrics" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" -b -w 1 -m bleu chrf ter
check "-b -w 1: sacreBLEU's scores, a line each" test "$(cat "$T/out" | tr '\n' ,)" = "40.6,63.9,45.4,"
expect_exit 0 "-b -ci -w3" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" -b -ci -w3
check "-b -ci -w3: sacreBLEU's line" test "$(cat "$T/out")" = "40.602 (μ = 40.535 ± 3.207)"
expect_exit 0 "-b -sl -w 1" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" -b -sl --width=1
check "-b -sl: sacreBLEU's sentence scores" test "$(head -3 "$T/out" | tr '\n' ,)" = "45.2,100.0,100.0,"
expect_exit 0 "--width 4" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" --width 4 -m bleu chrf
check "--width 4: the score's decimals only" test "$(cat "$T/out" | tr '\n' ,)" = \
    "BLEU = 40.6022 70.3/47.6/34.2/25.7 (BP = 0.981 ratio = 0.981 hyp_len = 3597 ref_len = 3666),chrF2 = 63.8944,"
check "--width 4: the signatures stay" test "$(wc -l <"$T/err")" = 2
expect_exit 0 "-w 1 in the paired table" -- sh -c "cd '$G' && '$TFM' bleu base.txt ref.txt -pbs ema.txt -w 1"
check "-w 1: the table's cells" grep -q '^ema.txt  *40.7 (40.6 ± 3.2) (p = 0.3586)$' "$T/out"
expect_exit 0 "-b --json: -b wins, as in sacreBLEU" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" -b --json
check "-b --json: the score alone" test "$(cat "$T/out")" = "40.60"
expect_exit 0 "--json -ci -w 3" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" --json -ci -w 3 --confidence-n 1000
check "--json -ci -w 3: the score unrounded, the interval's keys to the width (sacreBLEU's)" \
    sh -c "grep -q '\"score\":40.6022116' '$T/out' && grep -q '\"confidence_mean\":40.535,' '$T/out' &&
           grep -q '\"confidence\":\"μ = 40.535 ± 3.207\"' '$T/out'"
same_as_long "-w=3 -tok=intl -sv=0.2" -w=3 -tok=intl -s=floor -sv=0.2 -- --width=3 --tokenize=intl --smooth=floor --smooth-value=0.2
expect_exit 2 "a flag given a value" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" -b=1
expect_err_line "a flag given a value: message" "tfm: bleu: option '-b' takes no value"
expect_exit 2 "-wx" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" -wx
expect_err_line "-wx: the value is named" "tfm: bleu: --width: expected an integer from 0 to 17, got 'x'"
# an option's value is never read as a short name: here the system file "-b"
cp "$G/ema.txt" "$T/-b"
expect_exit 0 "--paired-bs -b: the file -b" -- sh -c "cd '$T' && '$TFM' bleu '$PWD/$G/base.txt' '$PWD/$G/ref.txt' --paired-bs -b"
check "--paired-bs -b: its row" grep -q '^-b  *40.67 (40.61 ± 3.20) (p = 0.3586)$' "$T/out"
# a score of about 1e49 at 17 decimals: the table's cell is cut, not overrun
printf 'a b c d e\n' >"$T/h1"; printf 'a b x d e\n' >"$T/r1"; cp "$T/h1" "$T/h2"
expect_exit 0 "a huge score in the paired table" -- "$TFM" bleu "$T/h1" "$T/r1" -s floor -sv 1e300 -w 17 -pbs "$T/h2" -pbsn 10
check "a huge score: the table has its 3 lines" test "$(wc -l <"$T/out")" = 3
expect_exit 2 "--width out of range" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" -w 18
expect_err_line "--width out of range: message" "tfm: bleu: --width: expected an integer from 0 to 17, got '18'"

# -i HYP, sacreBLEU's order: the files without an option are the references
expect_exit 0 "-i HYP after the reference" -- "$TFM" bleu "$G/ref.txt" -i "$G/base.txt"
check "-i: the score of HYP against REF" grep -q '^BLEU = 40.60 70.3/47.6/34.2/25.7 ' "$T/out"
(cd "$G" && "$TFM" bleu ref.txt -m bleu chrf -ci -i base.txt) >"$T/short" 2>&1
(cd "$G" && "$TFM" bleu base.txt ref.txt -m bleu chrf -ci) >"$T/long" 2>&1
check "-i with two metrics and -ci: as HYP first" cmp -s "$T/short" "$T/long"
expect_exit 0 "--input=HYP, two references" -- "$TFM" bleu "$R/ref1.txt" "$R/ref2.txt" --input="$R/hyp.txt"
"$TFM" bleu "$R/hyp.txt" "$R/ref1.txt" "$R/ref2.txt" >"$T/want" 2>/dev/null
check "--input=HYP: as HYP first" cmp -s "$T/out" "$T/want"
expect_exit 2 "-i with two files (sacreBLEU's systems)" -- "$TFM" bleu "$G/ref.txt" -i "$G/base.txt" "$G/ema.txt"
expect_err_line "-i with two files: message" "tfm: bleu: -i takes one file, HYP ($G/base.txt); the references go before it, other systems after --paired-bs (see tfm bleu --help)"
expect_exit 2 "-i twice" -- "$TFM" bleu "$G/ref.txt" -i "$G/base.txt" -i "$G/ema.txt"
expect_err_line "-i twice: message" "tfm: bleu: -i/--input given twice: it takes one hypothesis (compare systems with --paired-bs SYS)"
expect_exit 2 "--inp HYP SYS (getopt's abbreviation)" -- "$TFM" bleu "$G/ref.txt" --inp "$G/base.txt" "$G/ema.txt"
expect_exit 2 "-i HYP - (a second system from stdin)" -- "$TFM" bleu "$G/ref.txt" -i "$G/base.txt" -
expect_exit 0 "--input=HYP before the references" -- "$TFM" bleu -b --input="$G/base.txt" "$G/ref.txt"
check "--input=HYP before the references: the score" test "$(cat "$T/out")" = 40.60
expect_exit 0 "-i HYP -- REF" -- "$TFM" bleu -b -i "$G/base.txt" -- "$G/ref.txt"
check "-i HYP -- REF: the score" test "$(cat "$T/out")" = 40.60
expect_exit 2 "-i without a reference" -- "$TFM" bleu -i "$G/base.txt"
expect_err_line "-i without a reference: message" "tfm: bleu: expected REF [REF ...] with -i HYP (see tfm bleu --help)"
expect_exit 0 "-i HYP with a paired test" -- sh -c "cd '$G' && '$TFM' bleu ref.txt -i base.txt -pbs ema.txt"
check "-i: HYP is the baseline" grep -q '^Baseline: base.txt  40.60 (40.53 ± 3.21)$' "$T/out"

cp "$G/base.txt" "$T/-sl"
expect_exit 0 "after --, -sl is a file name" -- sh -c "cd '$T' && '$TFM' bleu -- -sl '$PWD/$G/ref.txt'"
check "after --: the file's score" grep -q '^BLEU = ' "$T/out"
(cd "$G" && "$TFM" bleu base.txt ref.txt --paired-bs ema.txt --json) >"$T/out" 2>"$T/err"
check "--paired-bs --json: a row a system with sacreBLEU's keys" /usr/bin/python3 - "$T/out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert [r["system"] for r in rows] == ["Baseline: base.txt", "ema.txt"], rows
assert rows[0]["BLEU"]["p_value"] is None and isinstance(rows[1]["BLEU"]["p_value"], float), rows
assert set(rows[1]["BLEU"]) == {"score", "p_value", "mean", "ci"}, rows
PY
check "--json: nothing on stderr" test ! -s "$T/err"

expect_exit 2 "--paired-bs with --paired-ar" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" --paired-bs "$G/ema.txt" --paired-ar "$G/lin.txt"
expect_err_line "two tests" "tfm: bleu: --paired-bs and --paired-ar are two tests: choose one (as sacreBLEU)"
expect_exit 2 "-ci with a paired test" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" -ci --paired-bs "$G/ema.txt"
expect_err_line "-ci is for one system" "tfm: bleu: --confidence is for one system; the paired tests give each system's interval themselves"
expect_exit 2 "--sentence with -ci" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" --sentence -ci
expect_err_line "no tests per sentence" "tfm: bleu: --sentence has no significance tests (as sacreBLEU)"
expect_exit 2 "--paired-bs-n -1" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" --paired-bs "$G/ema.txt" --paired-bs-n -1
expect_err_line "resamples from 0" "tfm: bleu: --paired-bs-n: expected an integer from 0 to 10000000, got '-1'"
"$TFM" bleu "$G/base.txt" "$G/ref.txt" --paired-bs "$G/ema.txt" --paired-bs-n 0 >/dev/null 2>"$T/err"
check "--paired-bs-n 0: sacreBLEU's default" grep -q '|bs:1000|' "$T/err"
"$TFM" bleu "$G/base.txt" "$G/ref.txt" -ci --confidence-n 1 >"$T/out" 2>"$T/err"
check "--confidence-n 1: no bootstrap, as sacreBLEU" sh -c "! grep -q 'μ' '$T/out' && ! grep -q 'bs:' '$T/err'"
SACREBLEU_SEED=' 007' "$TFM" bleu "$G/base.txt" "$G/ref.txt" -ci --confidence-n 10 >/dev/null 2>"$T/err"
check "-ci: the seed as written, as sacreBLEU's signature" grep -q '|bs:10|seed: 007|' "$T/err"
SACREBLEU_SEED=' 007' "$TFM" bleu "$G/base.txt" "$G/ref.txt" --paired-ar "$G/ema.txt" --paired-ar-n 10 >/dev/null 2>"$T/err"
check "--paired-ar: the seed as a number, as sacreBLEU's signature" grep -q '|ar:10|seed:7|' "$T/err"
expect_exit 2 "the baseline as a system" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" --paired-bs "$G/base.txt"
expect_err_line "baseline as a system" "tfm: bleu: --paired-bs tests/data/significance/base.txt: that is HYP, the baseline"
expect_exit 2 "a system twice" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" --paired-ar "$G/ema.txt" --paired-ar="$G/ema.txt"
expect_err_line "system twice" "tfm: bleu: --paired-ar tests/data/significance/ema.txt: given twice"
: >"$T/empty.txt"
expect_exit 1 "-ci on empty files" -- "$TFM" bleu "$T/empty.txt" "$T/empty.txt" -ci
expect_err_line "nothing to resample" "tfm: bleu: the significance tests need at least one line (the files are empty)"
# sacreBLEU's `-i SYS1 SYS2` habit: the second file would be a reference
"$TFM" bleu "$G/base.txt" "$G/ref.txt" --paired-bs "$G/ema.txt" "$G/lin.txt" >/dev/null 2>"$T/err"
check "a note when a paired test has several references" grep -qx \
    "tfm: note: 2 references, the last $G/lin.txt; a system to compare needs its own --paired-bs" "$T/err"
expect_exit 1 "a missing system" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" --paired-bs "$T/nothing.txt"
expect_err_line "missing system" "tfm: $T/nothing.txt: cannot open: No such file or directory"
mkdir -p "$T/adir"
expect_exit 1 "a folder as the reference" -- "$TFM" bleu "$G/base.txt" "$T/adir"
expect_err_line "folder reference line" "tfm: $T/adir: is a folder, not a file"
head -n 299 "$G/ema.txt" >"$T/short.txt"
expect_exit 1 "a system one line short" -- "$TFM" bleu "$G/base.txt" "$G/ref.txt" --paired-ar "$T/short.txt"
expect_err_line "short system" "tfm: line counts differ: tests/data/significance/base.txt has 300 lines, $T/short.txt has 299"
expect_exit 1 "a short system on a pipe" -- sh -c "head -n 299 '$G/ema.txt' | '$TFM' bleu '$G/base.txt' '$G/ref.txt' --paired-bs -"
expect_err_line "short pipe" "tfm: line counts differ: tests/data/significance/base.txt has 300 lines, stdin has 299"

# Gzipped input, by its magic bytes (any name), on files and on stdin; a
# truncated file is a one-line error that names it.
gzip -c "$D/hyp.txt" >"$T/hyp.gz"
gzip -c "$D/ref.txt" >"$T/ref.any"
expect_exit 0 "gzipped hyp and ref" -- "$TFM" bleu "$T/hyp.gz" "$T/ref.any"
check "gzip: same score" test "$(cat "$T/out")" = \
    "BLEU = 71.51 88.2/85.6/83.3/81.7 (BP = 0.844 ratio = 0.855 hyp_len = 136 ref_len = 159)"
"$TFM" bleu - "$D/ref.txt" <"$T/hyp.gz" >"$T/out" 2>/dev/null
check "gzip stdin: same score" grep -q '^BLEU = 71.51 88.2/85.6/83.3/81.7 ' "$T/out"
head -c 40 "$T/hyp.gz" >"$T/cut.gz"
expect_exit 1 "truncated gzip" -- "$TFM" bleu "$T/cut.gz" "$D/ref.txt"
expect_err_line "truncated gzip message" "tfm: $T/cut.gz: gzip data ends early (truncated file?)"

cli_summary
