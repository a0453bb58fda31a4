#!/usr/bin/env bash
# cli_config.sh: config errors and --dry-run through the real binary: exit 1
# and one exact "tfm: FILE: PATH: ..." line; nothing is trained.
cd "$(dirname "$0")/.." || exit 1
. tests/cli_lib.sh

for f in train.de train.en val.de val.en; do echo "ein satz" >"$T/$f"; done
DATA='"data": {"train_src": "train.de", "train_tgt": "train.en", "valid_src": "val.de", "valid_tgt": "val.en"}'

echo "{$DATA, \"train\": {\"lr\": {\"warmup\": -5}}}" >"$T/warmup.json"
expect_exit 1 warmup -- "$TFM" train "$T/warmup.json" --dry-run &&
    expect_err_line warmup "tfm: $T/warmup.json: train.lr.warmup: expected a positive integer, got -5"

echo "{$DATA, \"model\": {\"foo\": 1}}" >"$T/unknown.json"
expect_exit 1 unknown -- "$TFM" train "$T/unknown.json" --dry-run &&
    expect_err_line unknown "tfm: $T/unknown.json: model.foo: unknown key"

# The smallest vocabulary BPE can learn (specials, bytes, marker) is 261:
# 260 is refused at config time, naming the file and the key.
echo "{\"data\": {\"train_src\": \"train.de\", \"train_tgt\": \"train.en\", \"valid_src\": \"val.de\", \"valid_tgt\": \"val.en\", \"vocab_size\": 260}}" >"$T/vocab260.json"
expect_exit 1 vocab_size_260 -- "$TFM" train "$T/vocab260.json" --dry-run &&
    expect_err_line vocab_size_260 "tfm: $T/vocab260.json: data.vocab_size: expected an integer in [261, 1048576], got 260"

printf '{\n  %s,\n}\n' "$DATA" >"$T/syntax.json"
expect_exit 1 syntax -- "$TFM" train "$T/syntax.json" --dry-run &&
    expect_err_line syntax "tfm: $T/syntax.json: line 3 column 1: invalid JSON near '}'"

expect_exit 1 missing -- "$TFM" train "$T/none.json" --dry-run &&
    expect_err_line missing "tfm: $T/none.json: cannot open: No such file or directory"

mkdir "$T/sub"
echo "{\"data\": {\"train_src\": \"../train.de\", \"train_tgt\": \"../train.en\", \"valid_src\": \"../val.de\", \"valid_tgt\": \"../nope.en\"}}" >"$T/sub/c.json"
expect_exit 1 data_file -- "$TFM" train "$T/sub/c.json" --dry-run &&
    expect_err_line data_file "tfm: $T/sub/c.json: data.valid_tgt: cannot open $T/sub/../nope.en: No such file or directory"

# --dry-run prints the resolved config, and that output is itself a valid config.
echo "{$DATA}" >"$T/ok.json"
expect_exit 0 dry_run -- "$TFM" train "$T/ok.json" --dry-run
check dry_run_resolves grep -q "\"train_src\": \"$T/train.de\"" "$T/out"
check dry_run_defaults grep -q '"warmup": 4000' "$T/out"
mv "$T/out" "$T/again.json"
expect_exit 0 dry_run_again -- "$TFM" train "$T/again.json" --dry-run
check dry_run_fixed_point cmp -s <(sed '/^$/d' "$T/again.json") <(sed '/^$/d' "$T/out")

cli_summary
