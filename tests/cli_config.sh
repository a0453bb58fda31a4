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
# a model given where the config goes (it said "line 1 column 10: NUL byte in file")
printf 'TFMMODEL\001\000\000\000\000\000\000\000' >"$T/first.tfm"
expect_exit 1 "a model as the config" -- "$TFM" train "$T/first.tfm" --dry-run &&
    expect_err_line model_as_config "tfm: $T/first.tfm: a tfm model, not a JSON config (to start from it: a config and --set train.init=$T/first.tfm)"
# a FIFO is refused at once, not waited on (the config is read as every named input is)
mkfifo "$T/fifo.json"
expect_exit 1 config_fifo -- timeout 20 "$TFM" train "$T/fifo.json" --dry-run
expect_err_line config_fifo "tfm: $T/fifo.json: not a regular file"

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


# --set KEY=VALUE: overrides checked like the file, errors name the key, a
# typo gets a suggestion, data paths are relative to the current folder.
expect_exit 0 set_values -- "$TFM" train "$T/ok.json" --dry-run --set train.max_steps=500 \
    --set model.dropout=0.3 --set train.lr.schedule=linear --set train.out_dir=o/p --set train.max_steps=6000
check "--set: a number, the last one wins" grep -q '"max_steps": 6000,' "$T/out"
check "--set: a real" grep -q '"dropout": 0.3,' "$T/out"
check "--set: an enum" grep -q '"schedule": "linear",' "$T/out"
check "--set: a bare string" grep -q '"out_dir": "o/p",' "$T/out"
(cd "$T/sub" && "$TFM" train ../ok.json --dry-run --set data.valid_tgt=../val.en >"$T/out" 2>&1)
check "--set: data path from the current folder" grep -q "\"valid_tgt\": \"$T/sub/../val.en\"" "$T/out"
expect_exit 1 set_range -- "$TFM" train "$T/ok.json" --dry-run --set train.max_steps=-5
expect_err_line set_range "tfm: --set train.max_steps: expected a non-negative integer, got -5"
expect_exit 1 set_type -- "$TFM" train "$T/ok.json" --dry-run --set model.share_embeddings=yes
expect_err_line set_type "tfm: --set model.share_embeddings: expected true or false, got \"yes\""
expect_exit 1 set_typo -- "$TFM" train "$T/ok.json" --dry-run --set train.validate_every=5
expect_err_line set_typo "tfm: --set train.validate_every: unknown key (did you mean train.valid_every?)"
expect_exit 1 set_section -- "$TFM" train "$T/ok.json" --dry-run --set train.dropout=0.1
expect_err_line set_section "tfm: --set train.dropout: unknown key (did you mean model.dropout?)"
# a check of the whole config (decode's limits, lr.final against lr.peak)
# blames the --set that gave the key it names, not the file
expect_exit 1 set_decode_range -- "$TFM" train "$T/ok.json" --dry-run --set decode.alpha=11
expect_err_line set_decode_range "tfm: --set decode.alpha: expected a number in [0, 10], got 11"
expect_exit 1 set_lr_final -- "$TFM" train "$T/ok.json" --dry-run --set train.lr.schedule=linear \
    --set train.max_steps=1000 --set train.lr.warmup=10 --set train.lr.peak=0.001 --set train.lr.final=0.01
expect_err_line set_lr_final "tfm: --set train.lr.final: 0.01 is above train.lr.peak 0.001"
# the file's key clashes with one a --set gave: both are named
echo "{$DATA, \"model\": {\"attn_dropout\": 0.1}}" >"$T/attn.json"
expect_exit 1 set_clash -- "$TFM" train "$T/attn.json" --dry-run --set train.seed=2 --set model.attention=linear
expect_err_line set_clash "tfm: $T/attn.json with --set model.attention=linear: model.attn_dropout: 0.1 needs model.attention \"softmax\" (linear attention has no attention weights to drop); use 0"
echo "{$DATA, \"train\": {\"max_steps\": 5000, \"lr\": {\"schedule\": \"linear\"}}}" >"$T/lin.json"
expect_exit 1 set_clash_short -- "$TFM" train "$T/lin.json" --dry-run --set train.lr.warmup=60000
expect_err_line set_clash_short "tfm: $T/lin.json with --set train.lr.warmup=60000: train.lr.schedule: \"linear\" decays to lr.final at train.max_steps, which must be above lr.warmup (60000), got 5000"
# a key the message mentions in passing is not one the check is about:
# lr.final is where the decay ends, but the clash is max_steps and warmup
expect_exit 1 set_named_in_passing -- "$TFM" train "$T/lin.json" --dry-run --set train.lr.warmup=6000 --set train.lr.final=0
expect_err_line set_named_in_passing "tfm: $T/lin.json with --set train.lr.warmup=6000: train.lr.schedule: \"linear\" decays to lr.final at train.max_steps, which must be above lr.warmup (6000), got 5000"
echo "{$DATA, \"train\": {\"max_steps\": 3000, \"lr\": {\"schedule\": \"linear\"}}}" >"$T/lin3k.json"
expect_exit 1 set_only_in_passing -- "$TFM" train "$T/lin3k.json" --dry-run --set train.lr.final=0
expect_err_line set_only_in_passing "tfm: $T/lin3k.json: train.lr.schedule: \"linear\" decays to lr.final at train.max_steps, which must be above lr.warmup (4000), got 3000"
# only a check of keys together blames a --set: a typo's hint names a key too
echo "{$DATA, \"model\": {\"atention\": \"linear\"}}" >"$T/typo.json"
expect_exit 1 set_typo_hint -- "$TFM" train "$T/typo.json" --dry-run --set model.attention=softmax
expect_err_line set_typo_hint "tfm: $T/typo.json: model.atention: unknown key (did you mean model.attention?)"
expect_exit 2 set_form -- "$TFM" train "$T/ok.json" --dry-run --set max_steps
expect_err_line set_form "tfm: --set: expected KEY=VALUE, got 'max_steps'"
expect_exit 2 option_hint -- "$TFM" train "$T/ok.json" --max-steps 500
expect_err_line option_hint "tfm: train: unknown option '--max-steps' (did you mean --set train.max_steps=...?)"
expect_exit 2 option_typo -- "$TFM" train "$T/ok.json" --restrat
expect_err_line option_typo "tfm: train: unknown option '--restrat' (did you mean --restart?)"
echo "{$DATA, \"train\": {\"validate_every\": 5}}" >"$T/typo.json"
expect_exit 1 file_typo -- "$TFM" train "$T/typo.json" --dry-run
expect_err_line file_typo "tfm: $T/typo.json: train.validate_every: unknown key (did you mean train.valid_every?)"
# a section's name mistyped, as Marian and fairseq users write it
echo "{$DATA, \"decoder\": {\"beam\": 5}}" >"$T/section.json"
expect_exit 1 section_typo -- "$TFM" train "$T/section.json" --dry-run
expect_err_line section_typo "tfm: $T/section.json: decoder: unknown key (did you mean decode?)"

cli_summary
