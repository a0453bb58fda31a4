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

expect_exit 0 "--help" -- "$TFM" bleu --help
check "help text on stdout" grep -q '^usage: tfm bleu HYP REF' "$T/out"
expect_exit 0 "tfm help bleu" -- "$TFM" help bleu
check "help via tfm help" grep -q -- '--tokenize 13a|intl|zh|char|none' "$T/out"

cli_summary
