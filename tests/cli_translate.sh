# cli_translate.sh: `tfm translate` through the real binary: line-for-line
# output, empty lines, determinism, batch independence, n-best format, errors.
. "$(dirname "$0")/cli_lib.sh"
MINI=$PWD/tests/data/mini
cd "$T" || exit 1
"$TFM" train "$MINI/mini.json" -q >/dev/null 2>&1 || { cli_fail "training the test model"; cli_summary; exit 1; }

printf 'Ein Hund läuft.\n\nZwei Männer stehen auf der Straße.\n  \nEine Frau mit einem roten Hut.\n' >in.txt
expect_exit 0 "translate" -- sh -c "\"$TFM\" translate < in.txt"
check "one output line per input line" test "$(wc -l <"$T/out")" = 5
check "empty line gives empty line" test "$(sed -n 2p "$T/out")" = ""
check "blank line (spaces) gives empty line" test "$(sed -n 4p "$T/out")" = ""
cp "$T/out" first.txt
# tfm bpe takes a model for -v: the vocabulary inside it
expect_exit 0 "bpe encode -v MODEL" -- sh -c "\"$TFM\" bpe encode -v model.tfm < in.txt"
cp "$T/out" bpe_model.txt
expect_exit 0 "bpe encode -v the run's vocabulary" -- sh -c "\"$TFM\" bpe encode -v ck/vocab.txt < in.txt"
check "bpe -v MODEL segments as the model's vocabulary file" cmp -s bpe_model.txt "$T/out"
check "... and not trivially (pieces)" grep -q '▁' bpe_model.txt
# and tfm info --vocab writes it out: the file the run wrote, byte for byte
expect_exit 0 "info --vocab MODEL" -- "$TFM" info --vocab model.tfm
check "info --vocab prints the run's vocab.txt" cmp -s "$T/out" ck/vocab.txt
expect_exit 1 "info --vocab to a full disk" -- sh -c "\"$TFM\" info --vocab model.tfm > /dev/full"
expect_err_line "its message" "tfm: stdout: write failed: No space left on device"
expect_exit 0 "translate again" -- sh -c "\"$TFM\" translate < in.txt"
check "output is byte-identical run to run" cmp -s first.txt "$T/out"
expect_exit 0 "batch size 1" -- sh -c "\"$TFM\" translate --batch-size 1 < in.txt"
check "output does not depend on the batch size" cmp -s first.txt "$T/out"
expect_exit 0 "greedy" -- sh -c "\"$TFM\" translate -b 1 < in.txt"
check "greedy gives a line per input" test "$(wc -l <"$T/out")" = 5
expect_exit 0 "model from TFM_MODEL" -- sh -c "cd / && TFM_MODEL=\"$T/model.tfm\" \"$TFM\" translate --beam=2 < \"$T/in.txt\""

# n-best: N lines per input line, Moses form "i ||| text ||| F0= logprob ||| score", best first.
expect_exit 0 "nbest" -- sh -c "\"$TFM\" translate --nbest 3 -b 4 < in.txt"
check "nbest line count" test "$(wc -l <"$T/out")" = 15
check "nbest format" awk -F' \\|\\|\\| ' 'NF != 4 || $1 !~ /^[0-9]+$/ || $3 !~ /^F0= -?[0-9.e+-]+$/ || $4 !~ /^-?[0-9.e+-]+$/ { bad = 1 } END { exit bad }' "$T/out"
check "nbest sorted per sentence" awk -F' \\|\\|\\| ' '$1 == prev && $4 > last + 1e-6 { bad = 1 } { prev = $1; last = $4 } END { exit bad }' "$T/out"
check "nbest empty line" grep -qx '1 |||  ||| F0= 0 ||| 0' "$T/out"
expect_exit 0 "nbest at alpha 0" -- sh -c "\"$TFM\" translate -q --nbest 2 -b 2 --alpha 0 < in.txt"
check "at alpha 0 the score is the log-probability" awk -F' \\|\\|\\| ' '{ sub(/^F0= /, "", $3) } $3 != $4 { bad = 1 } END { exit bad }' "$T/out"
# At a large alpha the scores are tiny: still told apart, not all -0.000000.
expect_exit 0 "nbest at alpha 10" -- sh -c "\"$TFM\" translate -q --nbest 2 -b 2 --alpha 10 --max-len-a 50 < in.txt"
check "nbest scores at alpha 10 are not rounded to zero" test -z "$(grep -v '|||  |||' "$T/out" | grep -E ' \|\|\| -?0(\.0+)?$')"
expect_exit 0 "nbest 1" -- sh -c "\"$TFM\" translate --nbest 1 < in.txt"
check "--nbest 1 uses the n-best format" test "$(grep -c ' ||| ' "$T/out")" = 5
head -n 20 "$MINI/valid.de" >twenty.de
expect_exit 0 "nbest 4 on 20 lines" -- sh -c "\"$TFM\" translate -q --nbest 4 -b 4 < twenty.de"
check "nbest gives exactly N lines per input line" test "$(wc -l <"$T/out")" = 80

# Streaming: a line is answered before the next one is written.
coproc TR { "$TFM" translate -b 1 2>/dev/null; }
tr_pid=$TR_PID     # bash unsets TR_PID once the coprocess has ended
echo "Ein Hund" >&"${TR[1]}"
if read -r -t 20 answer <&"${TR[0]}"; then cli_ok; else cli_fail "translate answers a line without waiting for more input"; fi
exec {TR[1]}>&-
wait "$tr_pid" 2>/dev/null
expect_exit 2 "nbest over beam" -- sh -c "\"$TFM\" translate --nbest 5 -b 4 < in.txt"

# A line over the model's max_len: a warning naming the line, still one output line.
awk 'BEGIN { for (i = 0; i < 300; i++) printf "Hund "; print "" }' >long.txt
"$TFM" translate <long.txt >"$T/out" 2>"$T/err"
check "long line translated" test "$(wc -l <"$T/out")" = 1
check "long line warning" grep -q "^tfm: warning: stdin: line 1: .*truncated" "$T/err"

# Errors.
printf 'gut\n\xff\xfe kaputt\n' >bad.txt
expect_exit 1 "invalid UTF-8" -- sh -c "\"$TFM\" translate < bad.txt"
expect_err_line "invalid UTF-8 message" "tfm: stdin: line 2: invalid UTF-8 at byte 1"
check "lines before the bad one are translated" test "$(wc -l <"$T/out")" = 1
# Endless input without a newline stops at once with an error (NULs are
# refused as they are read), instead of filling memory.
expect_exit 1 "3 MB of NULs" -- sh -c "head -c 3000000 /dev/zero | \"$TFM\" translate"
expect_err_line "NUL message" "tfm: stdin: line 1: contains a NUL byte at byte 1"
expect_exit 1 "/dev/zero" -- sh -c "timeout 20 \"$TFM\" translate < /dev/zero"
printf 'gut\n' >nonl.txt
head -c 70000000 /dev/zero | tr '\0' a >>nonl.txt
expect_exit 1 "a line over 64 MiB" -- sh -c "\"$TFM\" translate < nonl.txt"
expect_err_line "over-long line message" "tfm: stdin: line 2: longer than 67108864 bytes"
check "the line before the over-long one is translated" test "$(wc -l <"$T/out")" = 1
rm -f nonl.txt
expect_exit 1 "missing model" -- sh -c "\"$TFM\" translate -m nope.tfm < in.txt"
expect_err_line "missing model message" "tfm: nope.tfm: cannot open: No such file or directory (choose the model with -m MODEL or \$TFM_MODEL)"
mkdir -p nomodel
expect_exit 1 "no model.tfm in the current folder" -- sh -c "cd nomodel && env -u TFM_MODEL \"$TFM\" translate < ../in.txt"
expect_err_line "default model message" "tfm: model.tfm: cannot open: No such file or directory (choose the model with -m MODEL or \$TFM_MODEL)"

# -i / -o, the summary line, -q.
expect_exit 0 "translate -i -o" -- "$TFM" translate -i in.txt -o io.txt
check "-o gets what stdout gets" cmp -s first.txt io.txt
check "-o: nothing on stdout" test ! -s "$T/out"
check "summary line on stderr" grep -qE '^tfm: translated 5 lines \([0-9]+ source tokens, [0-9]+ output tokens\) in [0-9.]+ s, [0-9.]+ sentences/s$' "$T/err"
head -n 1 in.txt >in1.txt
expect_exit 0 "one line" -- "$TFM" translate -i in1.txt
check "one line: the summary says 1 line" grep -q '^tfm: translated 1 line (' "$T/err"
expect_exit 0 "-q: no summary" -- "$TFM" translate -q -i in.txt -o -
check "-o - is stdout" cmp -s first.txt "$T/out"
check "-q: nothing on stderr" test ! -s "$T/err"
expect_exit 0 "--input= --output=" -- "$TFM" translate --input=in.txt --output=io2.txt -q
check "long options" cmp -s first.txt io2.txt
echo "old content" >keep.txt
expect_exit 1 "-o with an input error" -- "$TFM" translate -i bad.txt -o keep.txt
expect_err_line "-i names the file" "tfm: bad.txt: line 2: invalid UTF-8 at byte 1"
check "-o keeps the old file after an error" test "$(cat keep.txt)" = "old content"
expect_exit 1 "-o new file with an input error" -- "$TFM" translate -i bad.txt -o new.txt
check "-o leaves no file after an error" test ! -e new.txt
check "-o leaves no temporary file" test -z "$(ls -a | grep -E '^\.?(keep|new)\.txt.+')"
expect_exit 1 "-i missing" -- "$TFM" translate -i missing.txt
expect_err_line "-i missing message" "tfm: missing.txt: cannot open: No such file or directory"
expect_exit 1 "-o into a missing folder" -- "$TFM" translate -i in.txt -o nodir/out.txt
mkfifo model.fifo
expect_exit 1 "model is a FIFO" -- sh -c "timeout 20 \"$TFM\" translate -m model.fifo < in.txt"
expect_err_line "model FIFO message" "tfm: model.fifo: not a regular file"
expect_exit 1 "empty model path" -- sh -c "\"$TFM\" translate -m '' < in.txt"
expect_err_line "empty model path message" "tfm: model path is empty"
expect_exit 2 "bad beam" -- "$TFM" translate -b 0
expect_err_line "bad value names the option and its range" "tfm: translate: -b: expected an integer in [1, 1024], got '0'"
expect_exit 2 "bad beam, long option" -- "$TFM" translate --beam 0
expect_err_line "--opt value names the option, not the value" "tfm: translate: --beam: expected an integer in [1, 1024], got '0'"
expect_exit 2 "alpha over 10" -- "$TFM" translate --alpha 100
expect_err_line "alpha range" "tfm: translate: --alpha: expected a number in [0, 10], got '100'"
expect_exit 2 "bad alpha" -- "$TFM" translate --alpha=abc
expect_exit 2 "unknown option" -- "$TFM" translate --frobnicate
expect_exit 2 "stray argument" -- "$TFM" translate in.txt
# -o naming a file the run reads: refused before it is replaced (the input
# was lost: -i in.txt -o in.txt wrote the translation over it)
cp in.txt self.txt
expect_exit 2 "-o is the input" -- "$TFM" translate -i self.txt -o self.txt
expect_err_line "-o is the input: message" "tfm: translate: -o 'self.txt' is also an input; it would be overwritten"
check "-o is the input: the input kept" cmp -s in.txt self.txt
ln -s self.txt self-link.txt
expect_exit 2 "-o is a link to the input" -- "$TFM" translate -i self.txt -o self-link.txt
cp model.tfm self.tfm
expect_exit 2 "-o is the model" -- "$TFM" translate -m self.tfm -i in.txt -o self.tfm
check "-o is the model: the model kept" cmp -s model.tfm self.tfm
expect_exit 2 "-o is the reference" -- "$TFM" translate -i in.txt --score-reference self.txt -o self.txt
expect_exit 0 "help" -- "$TFM" translate --help
expect_exit 0 "empty input" -- sh -c "\"$TFM\" translate < /dev/null"
check "empty input gives no output" test ! -s "$T/out"


# --no-repeat-ngram: accepted for greedy and beam, one line a line; a second
# -m is refused (ensembles are not built) instead of silently used.
expect_exit 0 "--no-repeat-ngram 2, beam" -- sh -c "\"$TFM\" translate --no-repeat-ngram 2 < in.txt"
check "--no-repeat-ngram keeps one line a line" test "$(wc -l <"$T/out")" = "$(wc -l <in.txt)"
expect_exit 0 "--no-repeat-ngram 1, greedy" -- sh -c "\"$TFM\" translate -b 1 --no-repeat-ngram=1 < in.txt"
expect_exit 2 "--no-repeat-ngram out of range" -- "$TFM" translate --no-repeat-ngram -1 -i in.txt
# Ensembles: a model with itself translates exactly as alone; weights are
# counted; models with another vocabulary are refused.
"$TFM" translate -m model.tfm --nbest 2 -b 3 -q <in.txt >alone.txt
expect_exit 0 "ensemble of a model with itself" -- "$TFM" translate -m model.tfm -m model.tfm --nbest 2 -b 3 -q -i in.txt
check "self-ensemble = the model alone (n-best and scores)" cmp -s alone.txt "$T/out"
expect_exit 0 "ensemble with --weights" -- "$TFM" translate -m model.tfm -m model.tfm --weights 0.3,0.7 -q -i in.txt
expect_exit 2 "--weights count" -- "$TFM" translate -m model.tfm -m model.tfm --weights 1 -i in.txt
expect_err_line "--weights count message" "tfm: translate: --weights has 1 values for 2 models (-m)"
expect_exit 2 "--weights not numbers" -- "$TFM" translate -m model.tfm -m model.tfm --weights 1,x -i in.txt
mkdir v400 && sed 's/"vocab_size": 500/"vocab_size": 400/; s/"max_steps": 30/"max_steps": 2/' "$MINI/mini.json" >v400/mini.json
cp "$MINI"/train.* "$MINI"/valid.* v400/
(cd v400 && "$TFM" train mini.json -q >/dev/null 2>&1)
expect_exit 1 "ensemble with another vocabulary" -- "$TFM" translate -m model.tfm -m v400/model.tfm -i in.txt
expect_err_line "another vocabulary message" "tfm: v400/model.tfm: its vocabulary differs from model.tfm's (an ensemble needs models with one vocabulary)"

# --shortlist (tfm shortlist): one holding every piece translates exactly as
# none; a real one gives the same lines for any batch size and thread count,
# in fp32 and int8; another vocabulary's, a damaged file, an ensemble and
# too few frequent pieces for the beam are refused.
expect_exit 0 "shortlist of every piece" -- "$TFM" shortlist -m model.tfm -o all.sl --frequent 100000 --top-k 1 "$MINI/train.de" "$MINI/train.en"
check "shortlist says what it wrote" grep -q '^tfm: shortlist: [0-9]* frequent pieces, up to 1 more per source piece ([0-9]* in all): all.sl$' "$T/err"
head -n 40 "$MINI/valid.de" >sl_in.txt
cat in.txt >>sl_in.txt
sl_precs="fp32 int8"
"$TFM" --version | grep -q '^bf16 products: none' || sl_precs="$sl_precs bf16"
for prec in $sl_precs; do
    "$TFM" translate -q -b 4 --nbest 2 --precision $prec -i sl_in.txt >sl_none.txt
    expect_exit 0 "$prec: translate --shortlist of every piece" -- "$TFM" translate -q -b 4 --nbest 2 --precision $prec --shortlist all.sl -i sl_in.txt
    check "$prec: every piece = no shortlist, bit for bit (n-best, scores)" cmp -s sl_none.txt "$T/out"
done
expect_exit 0 "shortlist, gzipped corpus" -- sh -c "gzip -c \"$MINI/train.de\" >c.de.gz && gzip -c \"$MINI/train.en\" >c.en.gz && \"$TFM\" shortlist -q -m model.tfm -o few.sl --top-k 3 --frequent 10 c.de.gz c.en.gz"
check "-q: no summary" test ! -s "$T/err"
for prec in $sl_precs; do
    expect_exit 0 "$prec: --shortlist, batch 64, 2 threads" -- "$TFM" translate -q -b 4 --nbest 2 --precision $prec --shortlist few.sl --batch-size 64 --threads 2 -i sl_in.txt
    cp "$T/out" sl_b64.txt
    check "$prec: the shortlist changed the search" not cmp -s sl_b64.txt sl_none.txt
    expect_exit 0 "$prec: --shortlist, batch 1, 1 thread" -- "$TFM" translate -q -b 4 --nbest 2 --precision $prec --shortlist=few.sl --batch-size 1 --threads 1 -i sl_in.txt
    check "$prec: with a shortlist, lines do not depend on the batch or threads" cmp -s sl_b64.txt "$T/out"
    expect_exit 0 "$prec: --shortlist greedy, batch 7 vs 1" -- sh -c "\"$TFM\" translate -q -b 1 --precision $prec --shortlist few.sl --batch-size 7 -i sl_in.txt >g7.txt && \"$TFM\" translate -q -b 1 --precision $prec --shortlist few.sl --batch-size 1 -i sl_in.txt"
    check "$prec: greedy with a shortlist, batch independent" cmp -s g7.txt "$T/out"
done
# the guard: greedy with a list too small for these lines still gives
# greedy's words without one, and the summary counts the lines it helped
"$TFM" shortlist -q -m model.tfm -o tiny.sl --top-k 1 --frequent 2 "$MINI/train.de" "$MINI/train.en"
for prec in $sl_precs; do
    "$TFM" translate -q -b 1 --precision $prec --batch-size 7 -i sl_in.txt >g_none.txt
    expect_exit 0 "$prec: greedy, a tiny shortlist" -- "$TFM" translate -q -b 1 --precision $prec --batch-size 7 --shortlist tiny.sl -i sl_in.txt
    check "$prec: greedy with a shortlist: greedy's words without one" cmp -s "$T/out" g_none.txt
done
expect_exit 0 "the summary counts the lines the guard gave the whole output" -- "$TFM" translate -b 1 --shortlist tiny.sl -i sl_in.txt
check "... in a line of its own" grep -Eq "^tfm: the shortlist's guard gave [1-9][0-9]* of them the whole output$" "$T/err"
# a model whose output layer covers the target side's pieces only
# (model.output_vocab "target"): the shortlist keeps to them
mkdir ov && sed 's/"dropout": 0.1/"dropout": 0.1, "output_vocab": "target"/' "$MINI/mini.json" >ov/mini.json
cp "$MINI"/train.* "$MINI"/valid.* ov/
(cd ov && "$TFM" train mini.json -q >/dev/null 2>&1)
check "an output_vocab target model trains" test -s ov/model.tfm
"$TFM" shortlist -q -m ov/model.tfm -o ov/all.sl --frequent 100000 "$MINI/train.de" "$MINI/train.en"
"$TFM" shortlist -q -m ov/model.tfm -o ov/few.sl --top-k 3 --frequent 10 "$MINI/train.de" "$MINI/train.en"
"$TFM" translate -q -m ov/model.tfm -b 4 --nbest 2 -i sl_in.txt >ov_none.txt
expect_exit 0 "output_vocab target: every piece" -- "$TFM" translate -q -m ov/model.tfm -b 4 --nbest 2 --shortlist ov/all.sl -i sl_in.txt
check "output_vocab target: every piece = no shortlist" cmp -s ov_none.txt "$T/out"
expect_exit 0 "output_vocab target: a shortlist, batch 64" -- "$TFM" translate -q -m ov/model.tfm -b 4 --nbest 2 --shortlist ov/few.sl --batch-size 64 --threads 2 -i sl_in.txt
cp "$T/out" ov_b64.txt
expect_exit 0 "output_vocab target: a shortlist, batch 1" -- "$TFM" translate -q -m ov/model.tfm -b 4 --nbest 2 --shortlist ov/few.sl --batch-size 1 --threads 1 -i sl_in.txt
check "output_vocab target: batch independent" cmp -s ov_b64.txt "$T/out"
check "output_vocab target: the shortlist changed the search" not cmp -s ov_b64.txt ov_none.txt
expect_exit 0 "--shortlist with --sample" -- "$TFM" translate -q --sample --seed 3 --shortlist few.sl -i sl_in.txt
cp "$T/out" sl_sample.txt
expect_exit 0 "--shortlist with --sample, batch 1" -- "$TFM" translate -q --sample --seed 3 --shortlist few.sl --batch-size 1 -i sl_in.txt
check "sampling with a shortlist, batch independent" cmp -s sl_sample.txt "$T/out"
expect_exit 1 "shortlist for another vocabulary" -- "$TFM" translate -m v400/model.tfm --shortlist few.sl -i in.txt
check "... says so" grep -q "^tfm: few.sl: a shortlist for another vocabulary (500 pieces, fingerprint [0-9a-f]*; the model's: 400, [0-9a-f]*); make it with tfm shortlist -m MODEL$" "$T/err"
cp few.sl bad.sl
printf 'X' | dd of=bad.sl bs=1 seek=100 conv=notrunc 2>/dev/null
expect_exit 1 "damaged shortlist" -- "$TFM" translate --shortlist bad.sl -i in.txt
expect_err_line "damaged shortlist message" "tfm: bad.sl: damaged shortlist (checksum mismatch)"
head -c 20 few.sl >cut.sl
expect_exit 1 "truncated shortlist" -- "$TFM" translate --shortlist cut.sl -i in.txt
expect_err_line "truncated shortlist message" "tfm: cut.sl: damaged shortlist (20 bytes, shorter than its header)"
expect_exit 1 "not a shortlist" -- "$TFM" translate --shortlist in.txt -i in.txt
expect_err_line "not a shortlist message" "tfm: in.txt: not a tfm shortlist (make one with tfm shortlist)"
expect_exit 1 "missing shortlist" -- "$TFM" translate --shortlist nope.sl -i in.txt
expect_err_line "missing shortlist message" "tfm: nope.sl: cannot open: No such file or directory"
"$TFM" translate -q -b 4 --nbest 2 --shortlist few.sl -i sl_in.txt >sl_alone.txt
expect_exit 0 "--shortlist with a self-ensemble" -- "$TFM" translate -q -m model.tfm -m model.tfm -b 4 --nbest 2 --shortlist few.sl -i sl_in.txt
check "a self-ensemble with a shortlist = the model alone with it (n-best, scores)" cmp -s sl_alone.txt "$T/out"
expect_exit 0 "weighted ensemble with a shortlist, batch 64" -- "$TFM" translate -q -m model.tfm -m v400/../model.tfm --weights 0.3,0.7 -b 4 --nbest 2 --shortlist few.sl --batch-size 64 --threads 2 -i sl_in.txt
cp "$T/out" sl_ens64.txt
expect_exit 0 "weighted ensemble with a shortlist, batch 1" -- "$TFM" translate -q -m model.tfm -m model.tfm --weights 0.3,0.7 -b 4 --nbest 2 --shortlist few.sl --batch-size 1 --threads 1 -i sl_in.txt
check "an ensemble with a shortlist: batch and thread independent" cmp -s sl_ens64.txt "$T/out"
expect_exit 2 "ensemble with a shortlist, other output pieces" -- "$TFM" translate -m model.tfm -m ov/model.tfm -b 4 --shortlist few.sl -i in.txt
expect_err_line "other output pieces message" "tfm: translate: few.sl: a shortlist needs the ensemble's models to output the same pieces (model 2's model.output_vocab differs)"
expect_exit 2 "--shortlist with --score-reference" -- "$TFM" translate --shortlist few.sl --score-reference in.txt -i in.txt
expect_err_line "score-reference message" "tfm: translate: --shortlist does not apply to --score-reference (it scores the whole vocabulary)"
"$TFM" shortlist -q -m model.tfm -o two.sl --frequent 2 "$MINI/train.de" "$MINI/train.en"
expect_exit 2 "too few frequent pieces for the beam" -- "$TFM" translate -b 4 --shortlist two.sl -i in.txt
expect_err_line "too few message" "tfm: translate: two.sl: the shortlist gives every line 4 candidates, too few for beam 4 (at least 8: make it with a larger --frequent)"
# tfm shortlist's own errors
expect_exit 2 "shortlist without -o" -- "$TFM" shortlist -m model.tfm "$MINI/train.de" "$MINI/train.en"
expect_err_line "missing -o message" "tfm: shortlist: missing -o OUT (see tfm shortlist --help)"
expect_exit 2 "shortlist with one file" -- "$TFM" shortlist -m model.tfm -o x.sl "$MINI/train.de"
expect_err_line "one file message" "tfm: shortlist: expected SRC and TGT, the two sides of a parallel corpus (1 given)"
expect_exit 2 "shortlist --top-k 0" -- "$TFM" shortlist -m model.tfm -o x.sl --top-k 0 "$MINI/train.de" "$MINI/train.en"
expect_err_line "--top-k message" "tfm: shortlist: --top-k: expected an integer in [1, 100000], got '0'"
expect_exit 2 "shortlist unknown option" -- "$TFM" shortlist --topk 3 -m model.tfm -o x.sl "$MINI/train.de" "$MINI/train.en"
head -n 10 "$MINI/train.en" >ten.en
expect_exit 1 "shortlist of sides of other lengths" -- "$TFM" shortlist -m model.tfm -o x.sl "$MINI/train.de" ten.en
expect_err_line "lengths message" "tfm: $MINI/train.de has 400 lines, ten.en has 10 (a parallel corpus needs one line a sentence on each side)"
check "... and wrote nothing" test ! -e x.sl
expect_exit 1 "shortlist -o over a model" -- "$TFM" shortlist -m model.tfm -o v400/model.tfm "$MINI/train.de" "$MINI/train.en"
expect_err_line "-o over a model message" "tfm: v400/model.tfm: exists and is not a tfm shortlist; not replacing it"
expect_exit 2 "shortlist -o an input" -- "$TFM" shortlist -m model.tfm -o ten.en "$MINI/train.de" ten.en
expect_exit 0 "shortlist over an older shortlist" -- "$TFM" shortlist -q -m model.tfm -o two.sl "$MINI/train.de" "$MINI/train.en"

# --sample: seeded draws that do not depend on the batch size or threads;
# top-k 1 and a tiny top-p are greedy; another seed draws other text.
"$TFM" translate -b 1 -q <in.txt >greedy.txt
expect_exit 0 "--sample" -- sh -c "\"$TFM\" translate --sample -q < in.txt"
cp "$T/out" sample1.txt
check "--sample: a line per line" test "$(wc -l <sample1.txt)" = 5
check "--sample: empty lines stay empty" test "$(sed -n 2p sample1.txt)" = ""
expect_exit 0 "--sample, batch 1, 1 thread" -- sh -c "\"$TFM\" translate --sample --batch-size 1 --threads 1 -q < in.txt"
check "--sample: same draws for any batch size" cmp -s sample1.txt "$T/out"
expect_exit 0 "--sample --top-k 1" -- sh -c "\"$TFM\" translate --sample --top-k 1 -q < in.txt"
check "--top-k 1 is greedy" cmp -s greedy.txt "$T/out"
expect_exit 0 "--sample --top-p tiny" -- sh -c "\"$TFM\" translate --sample --top-p 0.000001 -q < in.txt"
check "a tiny --top-p is greedy" cmp -s greedy.txt "$T/out"
expect_exit 0 "--sample --seed 2 --temperature 1.5" -- sh -c "\"$TFM\" translate --sample --seed 2 --temperature 1.5 -q < in.txt"
check "another seed draws other text" not cmp -s sample1.txt "$T/out"
expect_exit 2 "--top-k without --sample" -- "$TFM" translate --top-k 5 -i in.txt
expect_err_line "--top-k without --sample message" "tfm: translate: --top-k, --top-p, --temperature and --seed go with --sample"
expect_exit 2 "--sample with a beam" -- "$TFM" translate --sample -b 4 -i in.txt
expect_exit 2 "--temperature 0" -- "$TFM" translate --sample --temperature 0 -i in.txt

# --score-reference: one log-probability a line, negative; a reference with
# fewer lines than the input is an error naming both.
head -n 3 in.txt >ref3.txt
printf 'Ein Hund.\n\nZwei Männer.\n  \nEine Frau.\n' | gzip >ref5.gz
expect_exit 0 "--score-reference" -- "$TFM" translate -i in.txt --score-reference ref5.gz -q
check "--score-reference: a number a line" test "$(grep -c '^-[0-9]*\.[0-9]*$' "$T/out")" = 5
expect_exit 0 "--score-reference, summary" -- "$TFM" translate -i in.txt --score-reference ref5.gz
check "--score-reference: the summary counts the reference's tokens" \
    grep -qE '^tfm: scored 5 lines \([1-9][0-9]* source tokens, [1-9][0-9]* reference tokens\) in ' "$T/err"
expect_exit 1 "--score-reference, short reference" -- "$TFM" translate -i in.txt --score-reference ref3.txt -q
expect_err_line "--score-reference: short reference message" "tfm: translate: --score-reference: ref3.txt ends after 3 lines, in.txt goes on"
head -n 1 in.txt >in1.txt
expect_exit 1 "--score-reference, short input" -- "$TFM" translate -i in1.txt --score-reference ref5.gz -q
expect_err_line "--score-reference: short input message" "tfm: translate: --score-reference: in1.txt ends after 1 line, ref5.gz goes on"

# Interrupted while writing -o FILE: the temporary file is removed, FILE is
# left as it was, and stderr says so. The input is a FIFO held open, so the
# signal comes while translate waits for more.
for sig in INT TERM; do
    rm -f sigin && mkfifo sigin && echo old >sigout.txt
    "$TFM" translate -o sigout.txt <sigin 2>sigerr.txt &
    pid=$!
    exec 3<>sigin
    echo 'Ein Hund läuft.' >&3
    for _ in $(seq 100); do compgen -G 'sigout.txt.tmp.*' >/dev/null && break; sleep 0.1; done
    sleep 0.3
    kill -s "$sig" "$pid"
    # (a background job ignores SIGINT unless tfm handles it: no hang then)
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid"
    rc=$?
    exec 3>&-
    check "SIG$sig during -o: exit 128+signal" test "$rc" = "$((128 + $(kill -l "$sig")))"
    check "SIG$sig during -o: no temporary file left" test -z "$(compgen -G 'sigout.txt.tmp.*')"
    check "SIG$sig during -o: the output is as it was" test "$(cat sigout.txt)" = old
    check "SIG$sig during -o: stderr says so" grep -qx "tfm: interrupted: sigout.txt was not written" sigerr.txt
done

# On a terminal, with the output going to a file, a live progress line for a
# long input (at most twice a second: 20000 lines take seconds), cleared
# before the summary; nothing of it in the output file.
if command -v script >/dev/null; then
    for i in $(seq 500); do cat "$MINI/valid.de"; done | head -n 20000 >long_in.txt
    script -qec "\"$TFM\" translate -i long_in.txt -o long_out.txt --batch-size 8" /dev/null \
        | tr '\r' '\n' >pty.txt
    check "progress line on a terminal, with the total and ETA of -i FILE" \
        grep -aqE '^.*translated [0-9]+/20000 lines, [0-9.]+ sentences/s, ETA ([0-9]+s|[0-9]+m[0-9]+s)$' pty.txt
    check "then the summary" grep -aq 'tfm: translated 20000 lines' pty.txt
    check "progress is not in the output" test "$(grep -c 'sentences/s' long_out.txt)" = 0
    check "all lines translated" test "$(wc -l <long_out.txt)" = 20000
fi

# --precision: fp32, bf16 or int8; bf16 is refused on a CPU without a bf16 unit
# (forced through oneDNN's ISA cap, so every machine checks it).
expect_exit 2 "--precision takes fp32, bf16 or int8" -- "$TFM" translate --precision fp16 -i in.txt
expect_err_line "--precision message" "tfm: translate: --precision must be fp32, bf16 or int8, got 'fp16'"
expect_exit 1 "--precision bf16 refused without a bf16 unit" -- env ONEDNN_MAX_CPU_ISA=AVX2 "$TFM" translate --precision bf16 -i in.txt
expect_err_line "bf16 refusal message" \
    "tfm: translate: --precision bf16: bf16 needs a CPU with AVX512-BF16 or AMX, and this one has neither (use \"fp32\")"
expect_exit 0 "--precision fp32" -- "$TFM" translate --precision fp32 -i in.txt -q
check "fp32 is the fp32 model's default" cmp -s first.txt "$T/out"
if "$TFM" --version | grep -q '^bf16 products: none'; then
    echo "  (no bf16 unit on this CPU: bf16 translation not run)"
else
    head -n 40 "$MINI/valid.de" >bf_in.txt
    expect_exit 0 "bf16 beam, batch 32" -- "$TFM" translate --precision bf16 -b 4 --nbest 2 -i bf_in.txt -q
    cp "$T/out" bf_b32.txt
    check "bf16 translates every line" test "$(wc -l <bf_b32.txt)" = 80
    expect_exit 0 "bf16 beam, batch 1, 1 thread" -- "$TFM" translate --precision bf16 -b 4 --nbest 2 --batch-size 1 --threads 1 -i bf_in.txt -q
    check "bf16: output does not depend on the batch size or threads" cmp -s bf_b32.txt "$T/out"
    expect_exit 0 "fp32 beam on the same lines" -- "$TFM" translate -b 4 --nbest 2 -i bf_in.txt -q
    check "bf16 scores differ from fp32 ones (bf16 really ran)" test -n "$(cmp bf_b32.txt "$T/out" 2>&1)"
    # a model trained in bf16 translates in bf16 by default, and in fp32
    # (with a note) where there is no bf16 unit
    sed 's/"keep": 2,/"keep": 2, "precision": "bf16",/; s/"out_dir": "ck"/"out_dir": "bfck"/; s/"model": "model.tfm"/"model": "bf.tfm"/' \
        "$MINI/mini.json" | sed "s#\"\\(train\\|valid\\)\\.\\(de\\|en\\)\"#\"$MINI/\\1.\\2\"#g" >bf.json
    "$TFM" train bf.json -q >/dev/null 2>&1
    check "a bf16 model trains" test -s bf.tfm
    expect_exit 0 "bf16 model, default precision" -- "$TFM" translate -m bf.tfm -b 4 --nbest 2 -i bf_in.txt -q
    cp "$T/out" bf_default.txt
    expect_exit 0 "bf16 model, --precision bf16" -- "$TFM" translate -m bf.tfm -b 4 --nbest 2 -i bf_in.txt -q --precision bf16
    check "a bf16 model translates in bf16 by default" cmp -s bf_default.txt "$T/out"
    expect_exit 0 "bf16 model, --precision fp32" -- "$TFM" translate -m bf.tfm -b 4 --nbest 2 -i bf_in.txt -q --precision fp32
    cp "$T/out" bf_fp32.txt
    expect_exit 0 "bf16 model without a bf16 unit" -- env ONEDNN_MAX_CPU_ISA=AVX2 "$TFM" translate -m bf.tfm -b 4 --nbest 2 -i bf_in.txt
    check "... falls back to fp32" cmp -s bf_fp32.txt "$T/out"
    check "... with a note" grep -q "^tfm: note: bf.tfm was trained in bf16; this CPU has no bf16 unit (AVX512-BF16 or AMX), so it translates in fp32$" "$T/err"
fi

cli_summary
