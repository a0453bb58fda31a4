# cli_corpus.sh: training corpora as lists of files (data.train_src /
# train_tgt / train_weights), read in chunks (data.shuffle_buffer), through
# the real binary: same batches when the corpus fits, exact resume when it
# does not, clear errors.
. "$(dirname "$0")/cli_lib.sh"
MINI=$PWD/tests/data/mini
cp "$MINI"/train.* "$MINI"/valid.* "$MINI"/mini.json "$T"/
cd "$T" || exit 1
sed 's/"max_steps": 30/"max_steps": 40/; s/"valid_every": 30/"valid_every": 40/' mini.json >m.json
no_times() { sed 's/"tok_per_s": [^,}]*//; s/"elapsed_s": [^,}]*//' "$1"; }
losses() { grep -o '"train_loss": [^,]*' "$1"; }

# The reference: one file, read whole, a log row each step.
mkdir ref && (cd ref && "$TFM" train ../m.json -q --set train.log_every=1 >/dev/null 2>&1)
check "reference run" test -s ref/model.tfm

# A corpus that fits in the buffer trains exactly as before chunks: the same
# batches, hence the same loss at every step (the buffer exactly full too).
for b in 400 100000; do
    mkdir fit$b && (cd fit$b && "$TFM" train ../m.json -q --set train.log_every=1 --set data.shuffle_buffer=$b >/dev/null 2>&1)
    check "shuffle_buffer $b: the same losses as one read" test -n "$(losses ref/ck/log.jsonl)" -a "$(losses ref/ck/log.jsonl)" = "$(losses fit$b/ck/log.jsonl)"
done

# The buffer's edge (the corpus has 400 pairs): 400 and more read it once
# and keep it (no empty second chunk); 399 reads it in two chunks.
for b in 399 400 401; do
    mkdir edge$b && (cd edge$b && "$TFM" train ../m.json --set train.max_steps=1 --set data.shuffle_buffer=$b >/dev/null 2>"$T/err$b")
done
check "buffer 399: two chunks" grep -q "^train: read in chunks of 399 pairs (data.shuffle_buffer); chunk 1 of epoch 1: [0-9]* pairs of 399 lines, " "$T/err399"
check "buffer 400: read once" grep -q "^train: [0-9]* pairs of 400 lines (" "$T/err400"
check "buffer 401: read once" grep -q "^train: [0-9]* pairs of 400 lines (" "$T/err401"
# One pair, one line: said in the singular.
head -n 1 train.de >one.de; head -n 1 train.en >one.en
mkdir one && (cd one && expect_exit 0 "a corpus of one pair" -- "$TFM" train ../m.json --set train.max_steps=1 --set data.train_src=../one.de --set data.train_tgt=../one.en --set data.vocab=../ref/ck/vocab.txt)
check "one pair of one line" grep -q "^train: 1 pair of 1 line (0 empty, " "$T/err"
head -n 2 train.en >two.en
mkdir one2 && (cd one2 && expect_exit 1 "files of 1 and 2 lines" -- "$TFM" train ../m.json --set data.train_src=../one.de --set data.train_tgt=../two.en --set data.vocab=../ref/ck/vocab.txt -q)
expect_err_line "1 line, 2 lines" "tfm: $T/one2/../one.de has 1 line, $T/one2/../two.en has 2 lines"

# Two pairs of files (one gzipped) read one after the other: the same pairs
# in the same order, the same vocabulary (learning pools the lines): the same run.
head -n 150 train.de >a.de; head -n 150 train.en >a.en
tail -n +151 train.de | gzip >b.de.gz; tail -n +151 train.en | gzip >b.en.gz
mkdir two && (cd two && expect_exit 0 "two corpora" -- "$TFM" train ../m.json --set train.log_every=1 --set 'data.train_src=["../a.de", "../b.de.gz"]' --set 'data.train_tgt=["../a.en", "../b.en.gz"]')
check "two corpora: said so" grep -q "^learning a 500-token BPE vocabulary from the 4 training files$" "$T/err"
check "two corpora: the vocabulary of one file" cmp -s ref/ck/vocab.txt two/ck/vocab.txt
check "two corpora: the run of one file" test "$(losses ref/ck/log.jsonl)" = "$(losses two/ck/log.jsonl)"
"$TFM" train m.json --dry-run --set 'data.train_src=["a.de", "b.de.gz"]' --set 'data.train_tgt=["a.en", "b.en.gz"]' --set 'data.train_weights=[1, 2.5]' >"$T/out"
check "--set takes a list" grep -q "^    \"train_src\": \\[\"$T/a.de\", \"$T/b.de.gz\"\\],$" "$T/out"
check "weights written back" grep -q '^    "train_weights": \[1, 2.5\],$' "$T/out"
check "one file stays a string" grep -q '^    "valid_src": "valid.de",$' "$T/out"
expect_exit 1 "lists of other lengths" -- "$TFM" train m.json --dry-run --set 'data.train_src=["a.de", "b.de.gz"]'
expect_err_line "lists of other lengths named" "tfm: m.json with --set data.train_src=[\"a.de\", \"b.de.gz\"]: data.train_tgt: 1 file for the 2 of data.train_src (pairs are by position)"
expect_exit 1 "weights of another count" -- "$TFM" train m.json --dry-run --set 'data.train_weights=[1, 2]'
expect_err_line "weights of another count named" "tfm: --set data.train_weights: 2 weights for 1 training corpus (one each)"
expect_exit 1 "a zero weight" -- "$TFM" train m.json --dry-run --set 'data.train_src=["a.de", "b.de.gz"]' --set 'data.train_tgt=["a.en", "b.en.gz"]' --set 'data.train_weights=[1, 0]'
expect_err_line "a zero weight named" "tfm: --set data.train_weights: expected null or a list of positive numbers, got 0 in the list"
expect_exit 1 "an empty list" -- "$TFM" train m.json --dry-run --set 'data.train_src=[]'
expect_err_line "an empty list named" "tfm: --set data.train_src: expected a non-empty string or a list of them, got an empty list"
expect_exit 1 "a missing file in a list" -- "$TFM" train m.json --dry-run --set 'data.train_src=["a.de", "nothing.de"]' --set 'data.train_tgt=["a.en", "b.en.gz"]'
expect_err_line "a missing file in a list named" "tfm: --set data.train_src: cannot open $T/nothing.de: No such file or directory"

# Chunks of 150 pairs (the 400 don't fit): batches within each chunk, the
# epochs as before, and an interrupted run resumes bit for bit, mid-chunk.
S='--set data.shuffle_buffer=150'
mkdir sa sb && (cd sa && expect_exit 0 "chunks of 150" -- "$TFM" train ../m.json $S --set train.log_every=1)
check "chunks: said so" grep -q "^train: read in chunks of 150 pairs (data.shuffle_buffer); chunk 1 of epoch 1: [0-9]* pairs of 150 lines, [0-9]* kB encoded and batched (two chunks while the next is read); valid: [0-9]* pairs$" "$T/err"
check "chunks: a second epoch" grep -q '"epoch": 2,' sa/ck/log.jsonl
(cd sb && TFM_TEST_SIGNAL_AT_STEP=13 expect_exit 143 "chunks: SIGTERM" -- "$TFM" train ../m.json $S --set train.log_every=1 -q)
(cd sb && expect_exit 0 "chunks: resumed" -- "$TFM" train ../m.json $S --set train.log_every=1 -q)
check "chunks: resumed model equals uninterrupted" cmp -s sa/model.tfm sb/model.tfm
check "chunks: resumed log equals uninterrupted" test "$(no_times sa/ck/log.jsonl)" = "$(no_times sb/ck/log.jsonl)"
# model.output_vocab "target" read in chunks: the output pieces are the
# targets' of the whole corpus (a sample within data.bpe_sample: every
# line), not the first chunk's; the same as when it is read once; exact resume.
O='--set model.output_vocab=target --set data.max_len=200'   # no pair left out: the same targets
mkdir oa ob oc && (cd oa && expect_exit 0 "output_vocab target in chunks" -- "$TFM" train ../m.json $S $O --set train.log_every=1)
check "output_vocab target in chunks: from the sample" grep -q '^model.output_vocab "target": the output layer scores [0-9]* of the 500 pieces (those of 400 target lines of data.bpe_sample)$' "$T/err"
(cd oc && "$TFM" train ../m.json $O --set train.max_steps=1 -q >/dev/null 2>&1)
"$TFM" info oa/model.tfm >"$T/info_a" 2>&1; "$TFM" info oc/model.tfm >"$T/info_c" 2>&1
check "output_vocab target in chunks: the pieces of the whole" test -n "$(grep '^vocabulary:' "$T/info_a")" -a "$(grep '^vocabulary:' "$T/info_a")" = "$(grep '^vocabulary:' "$T/info_c")"
(cd ob && TFM_TEST_SIGNAL_AT_STEP=13 expect_exit 143 "output_vocab target in chunks: SIGTERM" -- "$TFM" train ../m.json $S $O --set train.log_every=1 -q)
(cd ob && expect_exit 0 "output_vocab target in chunks: resumed" -- "$TFM" train ../m.json $S $O --set train.log_every=1 -q)
check "output_vocab target in chunks: resumed model equals uninterrupted" cmp -s oa/model.tfm ob/model.tfm
mkdir se && (cd se && expect_exit 0 "chunks: max_epochs" -- "$TFM" train ../m.json $S --set train.max_steps=0 --set train.max_epochs=2)
check "chunks: max_epochs ends the run" grep -q "^finished: train.max_epochs (2) reached at step [0-9]* (epoch 3)" "$T/err"

# Weights: the corpora mixed at random, upsampled; exact resume too.
W=(--set "data.train_src=[\"$T/a.de\", \"$T/b.de.gz\"]" --set "data.train_tgt=[\"$T/a.en\", \"$T/b.en.gz\"]" --set 'data.train_weights=[3, 1]' --set data.shuffle_buffer=100)
mkdir wa wb && (cd wa && expect_exit 0 "weighted corpora" -- "$TFM" train ../m.json "${W[@]}" -q)
(cd wb && TFM_TEST_SIGNAL_AT_STEP=17 expect_exit 143 "weighted: SIGTERM" -- "$TFM" train ../m.json "${W[@]}" -q)
(cd wb && expect_exit 0 "weighted: resumed" -- "$TFM" train ../m.json "${W[@]}" -q)
check "weighted: resumed model equals uninterrupted" cmp -s wa/model.tfm wb/model.tfm

# A pair of files ending early, met in a later chunk: both files and both
# line counts; the checkpoint before it stays whole.
head -n 350 train.en >short.en
sed 's/"save_every": 5/"save_every": 2/' m.json >short.json
mkdir sh && (cd sh && expect_exit 1 "a pair of files ending early, late" -- "$TFM" train ../short.json $S --set data.train_tgt=../short.en --set data.vocab=../ref/ck/vocab.txt -q)
expect_err_line "both files and counts named" "tfm: ../train.de has 400 lines, $T/sh/../short.en has 350 lines"
(cd sh && expect_exit 0 "the checkpoint before it loads" -- "$TFM" info ck/last.tfm)
check "the checkpoint before it is of a later step" grep -q "^step:        [1-9][0-9]* " "$T/out"
# data.bpe_sample: learning reads a sample of the lines, the same each time;
# a corpus within the sample is learned from whole (the reference's vocabulary).
for k in 1 2; do
    mkdir bs$k && (cd bs$k && expect_exit 0 "bpe_sample run $k" -- "$TFM" train ../m.json --set data.bpe_sample=300 --set train.max_steps=1)
done
check "bpe_sample: said how many" grep -q "^data.bpe_sample: learned from [23][0-9][0-9] of the 800 lines$" "$T/err"
check "bpe_sample: the same sample each time" cmp -s bs1/ck/vocab.txt bs2/ck/vocab.txt
check "bpe_sample: another vocabulary than all lines'" not cmp -s bs1/ck/vocab.txt ref/ck/vocab.txt
# More than 4x the sample: runs of lines from stripes of the files (not read whole).
mkdir bs4 && (cd bs4 && expect_exit 0 "bpe_sample in stripes" -- "$TFM" train ../m.json --set data.bpe_sample=50 --set train.max_steps=1)
check "bpe_sample in stripes: said so" grep -q "^data.bpe_sample: learned from [45][0-9] of about 800 lines (runs of lines spread over the files)$" "$T/err"
mkdir bs3 && (cd bs3 && "$TFM" train ../m.json --set data.bpe_sample=800 --set train.max_steps=1 -q >/dev/null 2>&1)
check "bpe_sample: a corpus within it is read whole" cmp -s bs3/ck/vocab.txt ref/ck/vocab.txt
cli_summary
