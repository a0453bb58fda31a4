#!/usr/bin/env bash
# multi30k.sh: the whole run of a recipe, for one direction.
# Trains configs/multi30k-PAIR.json (or any CONFIG.json: a recipe pointed at
# other data), translates the validation set and a test set with the recipe's
# beam, scores them with tfm bleu (the test set cased with its bootstrap 95%
# interval, and -lc) and draws the learning curves. The model is what the
# recipe makes: the moving average of the weights (train.ema), or with
# train.average_last the average of the last checkpoints.
#   scripts/multi30k.sh en-de|de-en|CONFIG.json [--test SRC REF]
#                       [--set KEY=VALUE ...] [--threads N] [--restart]
# en-de and de-en test on data/test_2016_flickr.*; --test names another test
# set (a CONFIG.json has none unless given). --set changes a key of the recipe
# for this run, decode.* included; the other options go to tfm train.
# The validation set is the config's data.valid_src and valid_tgt: the score
# recipe changes are chosen by (the test set is scored, never chosen on).
# Like tfm, it runs in the current folder: outputs go where the config's
# train.out_dir (checkpoints, log.jsonl, the hypotheses, curves.png) and
# train.model say, relative to it (for the Multi30k recipes, run it from the
# repository's root: runs/multi30k-PAIR/ and runs/multi30k-PAIR.tfm).
# Running it again resumes an interrupted training, or only re-scores a
# finished one; --restart trains from scratch. TFM names another tfm binary.
set -euo pipefail
usage="usage: scripts/multi30k.sh en-de|de-en|CONFIG.json [--test SRC REF] [--set KEY=VALUE ...] [--threads N] [--restart]"
die() { echo "multi30k.sh: $*" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
pair="" test_src="" test_ref=""
case "${1:-}" in
    en-de|de-en)
        pair=$1; shift
        config=$root/configs/multi30k-$pair.json
        test_src=$root/data/test_2016_flickr.${pair%-*}
        test_ref=$root/data/test_2016_flickr.${pair#*-} ;;
    -h|--help) echo "$usage"; exit 0 ;;
    -*|"") echo "$usage" >&2; exit 2 ;;
    *) config=$1; shift
       [ -r "$config" ] || die "$config: cannot read" ;;
esac

# --test is the script's; everything else goes to tfm train, and the --set
# options also to the dry run that reads the recipe's paths and decoding
train_args=() sets=()
while [ $# -gt 0 ]; do
    case $1 in
        --test)
            [ $# -ge 3 ] || { echo "$usage" >&2; exit 2; }
            test_src=$2 test_ref=$3; shift 3 ;;
        --set)
            [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
            sets+=(--set "$2"); train_args+=(--set "$2"); shift 2 ;;
        --set=*) sets+=("$1"); train_args+=("$1"); shift ;;
        *) train_args+=("$1"); shift ;;
    esac
done
for f in "$test_src" "$test_ref"; do
    [ -z "$f" ] || [ -r "$f" ] || [ -r "${f%.gz}.gz" ] || die "$f: cannot read"
done

if [ -n "${TFM:-}" ]; then
    tfm=$TFM
else
    make -s -C "$root" tfm data >&2
    tfm=$root/tfm
fi
# the Multi30k test files are unpacked by `make data`; another test set may be
# gzipped (tfm reads either)
[ -z "$test_src" ] || [ -r "$test_src" ] || test_src=$test_src.gz
[ -z "$test_ref" ] || [ -r "$test_ref" ] || test_ref=$test_ref.gz

# the recipe as the config and the --set options make it: its paths and its
# decoding (a model keeps the decode settings it was trained with)
recipe=$("$tfm" train "$config" "${sets[@]}" --dry-run)
{ mapfile -t r; } < <(python3 -c '
import json, sys
d = json.load(sys.stdin)
for v in (d["train"]["out_dir"], d["train"]["model"], d["data"]["valid_src"] or "-",
          d["data"]["valid_tgt"] or "-", d["decode"]["beam"], d["decode"]["alpha"]):
    print(v)' <<<"$recipe")
out=${r[0]} model=${r[1]} valid_src=${r[2]} valid_tgt=${r[3]} beam=${r[4]} alpha=${r[5]}

# the name of a text file without its language and .gz: val.en.gz -> val
set_name() { local b; b=$(basename "${1%.gz}"); echo "${b%.*}"; }
# score HYP REF [OPTION]: tfm bleu's line; its error (a reference of another
# length, say) stops the script with tfm's message, its signature is dropped
bleu_err=$(mktemp)
trap 'rm -f "$bleu_err"' EXIT
score() {
    "$tfm" bleu "$@" 2>"$bleu_err" || { tail -n 1 "$bleu_err" >&2; return 1; }
}

echo "== training $config (${train_args[*]})" >&2
start=$(date +%s.%N)
"$tfm" train "$config" "${train_args[@]}" >/dev/null
end=$(date +%s.%N)
train_s=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.0f", e - s }')

test_line="" lower="" translate_s=""
if [ -n "$test_src" ]; then
    test_set=$(set_name "$test_src")
    echo "== translating $test_src (beam $beam, alpha $alpha)" >&2
    start=$(date +%s.%N)
    "$tfm" translate -m "$model" -q -b "$beam" --alpha "$alpha" -i "$test_src" -o "$out/$test_set.hyp"
    end=$(date +%s.%N)
    translate_s=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }')
    # -ci: the bootstrap 95% interval says how far a test set of this size
    # can move a score by chance (sacreBLEU's --confidence)
    test_line=$(score "$out/$test_set.hyp" "$test_ref" -ci)
    lower=$(score "$out/$test_set.hyp" "$test_ref" -lc)
fi

# the validation set, decoded as the test set is: the recipes are chosen on it
val=""
if [ "$valid_src" != - ]; then
    echo "== translating $valid_src (beam $beam, alpha $alpha)" >&2
    "$tfm" translate -m "$model" -q -b "$beam" --alpha "$alpha" -i "$valid_src" -o "$out/val.hyp"
    val=$(score "$out/val.hyp" "$valid_tgt")
fi

plot=""
if command -v gnuplot >/dev/null; then
    plot=$("$root/scripts/plot_log.sh" "$out/log.jsonl" "$out/curves.png" \
        "${pair:+Multi30k $pair }($(basename "$config"))")
else
    plot="(none: scripts/deps.sh plot installs gnuplot)"
fi
# the figures of the run, from its log: the last training record and the
# validation of the averaged model
summary=$(python3 - "$root/scripts" "$out/log.jsonl" <<'PY' 2>/dev/null || true
import sys
sys.path.insert(0, sys.argv[1])
from runlog import records
last = avg = ema = None
for r in records(sys.argv[2], "multi30k.sh"):
    if r.get("averaged"):
        avg = r
    elif r.get("ema"):
        ema = r
    elif "train_loss" in r:
        last = r
if last:
    print(f"steps {last['step']}, epochs {last['epoch']}, training time in the log "
          f"{last['elapsed_s'] / 60:.1f} min")
if avg:
    print(f"valid (averaged model): loss {avg['valid_loss']:.4f}, "
          f"greedy BLEU {avg.get('valid_bleu', float('nan')):.2f}")
if ema:
    print(f"valid (moving average of the weights, train.ema): loss {ema['valid_loss']:.4f}, "
          f"greedy BLEU {ema.get('valid_bleu', float('nan')):.2f}")
PY
)

echo "${pair:+Multi30k $pair, }${config#"$root"/}"
echo "tfm train took ${train_s} s ($(awk -v s="$train_s" 'BEGIN { printf "%.1f", s / 60 }') min, BPE learning included; a rerun of a finished run only copies the model)"
[ -n "$summary" ] && echo "$summary"
if [ -n "$val" ]; then
    echo "$(set_name "$valid_src") (beam $beam), cased: $val"
else
    echo "validation: none (the config has no data.valid_src)"
fi
if [ -n "$test_src" ]; then
    echo "translating $test_set (beam $beam, alpha $alpha): ${translate_s} s"
    echo "$test_set cased: $test_line"
    echo "$test_set -lc:   $lower"
else
    echo "test: none (--test SRC REF names one)"
fi
echo "curves: $plot"
