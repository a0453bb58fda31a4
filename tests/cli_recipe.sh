# cli_recipe.sh: scripts/multi30k.sh, the whole run of a recipe, on a config
# pointed at other data (as a user with another language pair runs it): it
# trains, translates and scores the config's validation set and the --test
# set, and prints the lines docs/multi30k.md shows.
. "$(dirname "$0")/cli_lib.sh"
MINI=$PWD/tests/data/mini
ROOT=$PWD
export TFM
cp "$MINI"/train.* "$MINI"/valid.* "$T"/
sed 's/"max_steps": 30/"max_steps": 12/; s/"valid_every": 30/"valid_every": 12/' \
    "$MINI/mini.json" >"$T/mini.json"
cd "$T" || exit 1
mkdir held
head -n 20 valid.de >held/test.de
head -n 20 valid.en | gzip >held/test.en.gz

run() { bash "$ROOT/scripts/multi30k.sh" "$@" >"$T/out" 2>"$T/err"; echo $? >"$T/rc"; }
run mini.json --test held/test.de held/test.en --set train.ema=0.9 --set decode.beam=2 --threads 1
check "a config and --test: exit 0" test "$(cat "$T/rc")" = 0 || cat "$T/err" >&2
check "the model is where the config says" test -s model.tfm
check "the test set's hypotheses, one a line" test "$(wc -l <ck/test.hyp)" = 20
check "the validation set's, from data.valid_src" test "$(wc -l <ck/val.hyp)" = "$(wc -l <valid.de)"
check "the val line, with the --set beam" grep -qE '^valid \(beam 2\), cased: BLEU = [0-9.]+ ' "$T/out"
check "the test line, cased with its interval" grep -qE '^test cased: BLEU = [0-9.]+ \(μ = ' "$T/out"
check "the test line, -lc (a gzipped reference)" grep -qE '^test -lc: +BLEU = [0-9.]+ ' "$T/out"
check "the moving average's validation" grep -q '^valid (moving average of the weights, train.ema): loss ' "$T/out"
check "the steps" grep -q '^steps 12, epochs ' "$T/out"
# the test score is tfm bleu's on the same files
"$TFM" bleu -lc ck/test.hyp held/test.en.gz >"$T/bleu" 2>/dev/null
check "the test score is tfm bleu's" grep -qF -- "$(cat "$T/bleu")" "$T/out"

# a second run only re-scores: the same lines, no step trained
cp ck/log.jsonl log.before
cp "$T/out" out.before
run mini.json --test held/test.de held/test.en --set train.ema=0.9 --set decode.beam=2 --threads 1
check "a rerun: exit 0" test "$(cat "$T/rc")" = 0
check "a rerun trains nothing" cmp -s ck/log.jsonl log.before
# (all but the lines of times)
check "a rerun scores the same" cmp -s <(grep -v 'took\|: [0-9.]* s$' out.before) <(grep -v 'took\|: [0-9.]* s$' "$T/out")

# no --test: the validation set only, and says so
run mini.json --set train.ema=0.9 --threads 1
check "no --test: exit 0" test "$(cat "$T/rc")" = 0
check "no --test: says there is none" grep -qx 'test: none (--test SRC REF names one)' "$T/out"

# errors: one line and exit 1 for a bad file, 2 for usage
run mini.json --test held/none.de held/test.en
check "a missing test file: exit 1" test "$(cat "$T/rc")" = 1
check "its message" test "$(cat "$T/err")" = "multi30k.sh: held/none.de: cannot read"
run nothere.json
check "a missing config: exit 1" test "$(cat "$T/rc")" = 1
check "its message" test "$(cat "$T/err")" = "multi30k.sh: nothere.json: cannot read"
run
check "no arguments: usage, exit 2" test "$(cat "$T/rc")" = 2
run mini.json --test held/test.de
check "--test with one file: usage, exit 2" test "$(cat "$T/rc")" = 2
head -n 5 held/test.de >held/short.de
run mini.json --test held/short.de held/test.en --threads 1
check "a reference of another length: exit 1" test "$(cat "$T/rc")" = 1
check "its message is tfm bleu's" test "$(cat "$T/err" | tail -n 1)" = \
    "tfm: line counts differ: ck/short.hyp has 5 lines, held/test.en.gz has 20"
sed 's/"d_model": 32/"d_model": 31/' mini.json >bad.json
run bad.json
check "a bad config: tfm's error, exit 1" test "$(cat "$T/rc")" = 1
check "a bad config: one line" test "$(wc -l <"$T/err")" = 1
cli_summary
