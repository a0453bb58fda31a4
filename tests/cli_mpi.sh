# cli_mpi.sh: data-parallel training under mpirun (docs/distributed.md),
# with an MPI build of tfm made here (make MPI=1, in build-mpi/): 2 ranks
# train the same model as 1 process on the same global batches; a 2-rank run
# stopped by a signal and resumed ends with the uninterrupted run's model,
# byte for byte; stops are collective; a killed rank ends the job; errors
# are one line. Needs mpirun (openmpi-bin, libopenmpi-dev): without it the
# checks are reported as skipped, not passed.
. "$(dirname "$0")/cli_lib.sh"
ROOT=$PWD
if ! command -v mpirun >/dev/null || ! pkg-config --exists ompi-c; then
    echo "  (no mpirun or no Open MPI headers: MPI checks skipped; apt-get install openmpi-bin libopenmpi-dev)" >&2
    cli_summary
    exit
fi
# (the plain build's flags: not those of a `make asan` this may run under)
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" MPI=1 BUILD=build-mpi BIN=build-mpi/tfm >"$T/build.log" 2>&1 ||
    { cli_fail "make MPI=1: $(tail -5 "$T/build.log")"; cli_summary; exit; }
MTFM=$ROOT/build-mpi/tfm
# As root, Open MPI wants --allow-run-as-root; --oversubscribe lets 2 ranks
# run where fewer cores are free; -q keeps mpirun's own notices out.
mpi() { local n=$1; shift; mpirun -q --allow-run-as-root --oversubscribe -np "$n" "$@"; }
MINI=$ROOT/tests/data/mini
cp "$MINI"/train.* "$MINI"/valid.* "$T"/
cd "$T" || exit 1
# a fixed log_every: the automatic one depends on the speed of the first
# steps, which a loaded machine changes between the runs compared below
sed 's/"keep": 2,/"keep": 2, "log_every": 10,/' "$MINI/mini.json" >mini.json
linear_adam mini.json >linear.json
sed 's/"max_steps": 30/"max_steps": 100000/' mini.json >long.json

expect_exit 0 "an MPI build still trains alone" -- "$MTFM" train mini.json -q --set train.out_dir=alone
"$MTFM" --version >"$T/out"
check "--version names the MPI library" grep -q '^MPI: Open MPI v[0-9]' "$T/out"
"$ROOT/tfm" --version >"$T/out"
check "--version of the default build: no MPI" grep -q '^MPI: not built in (make MPI=1)$' "$T/out"

# The same global batches on 2 ranks as in 1 process: without dropout (whose
# masks each rank draws for its own sentences) and under linear_adam
# (cli_lib.sh says why) the weights agree to float rounding (the gradient
# sums add in another order), the key biases aside (tests/model_diff.py).
mkdir one two
(cd one && expect_exit 0 "1 process" -- "$MTFM" train ../linear.json -q)
(cd two && expect_exit 0 "2 ranks" -- mpi 2 "$MTFM" train ../linear.json -q)
check "2 ranks: one model path printed (rank 0's)" test "$(cat "$T/out")" = model.tfm
python3 "$ROOT/tests/model_diff.py" one/model.tfm two/model.tfm >"$T/diff"
check "2 ranks train the 1-process model (max_rel < 1e-5: $(cat "$T/diff"))" \
    awk '{ exit !($4 < 1e-5) }' "$T/diff"
check "rank 0 alone writes the run folder" test -f two/ck/last.tfm -a -f two/ck/log.jsonl
check "the log has each row once (steps 10, 20, 30)" test "$(grep -c '"train_loss"' two/ck/log.jsonl)" = 3

# Stopped by SIGTERM at step 13 on every rank (the signal mpirun forwards),
# then resumed with the same command: the uninterrupted run's model, byte
# for byte, dropout included.
mkdir a b
(cd a && expect_exit 0 "2 ranks with dropout" -- mpi 2 "$MTFM" train ../mini.json -q)
(cd b && TFM_TEST_SIGNAL_AT_STEP=13 expect_exit 143 "2 ranks: SIGTERM exits 143" -- mpi 2 "$MTFM" train ../mini.json -q)
expect_err_line "interrupt message, once" "tfm: interrupted at step 13; run the same command to resume"
"$ROOT/tfm" info b/ck/last.tfm >"$T/out" 2>&1
check "last.tfm is at step 13" grep -q "step:        13 " "$T/out"
(cd b && expect_exit 0 "2 ranks: resumed run finishes" -- mpi 2 "$MTFM" train ../mini.json -q)
check "2 ranks: resumed model equals uninterrupted" cmp -s a/model.tfm b/model.tfm
check "2 ranks: resumed log equals uninterrupted" \
    test "$(sed 's/"tok_per_s": [^,}]*//; s/"elapsed_s": [^,}]*//' a/ck/log.jsonl)" = \
         "$(sed 's/"tok_per_s": [^,}]*//; s/"elapsed_s": [^,}]*//' b/ck/log.jsonl)"
# Summing each layer's gradients while the layers below run their backward
# pass (TFM_MPI_OVERLAP=1, the default across machines) gives the model of
# one sum after the whole backward pass (the default on one machine), byte
# for byte (with 2 ranks every sum is a + b).
mkdir o
(cd o && expect_exit 0 "2 ranks, sums per layer" -- mpi 2 -x TFM_MPI_OVERLAP=1 "$MTFM" train ../mini.json -q)
check "2 ranks: per-layer sums = one sum after the backward" cmp -s a/model.tfm o/model.tfm
# train.parallel "sentences": 2 threads of one process run the 2 ranks'
# shares with the 2 ranks' masks, and sum the same way: the model of 2
# one-thread ranks, bit for bit, dropout included (the default build runs
# it; cli_train.sh checks it without MPI against the products model).
mkdir sp r1
(cd r1 && expect_exit 0 "2 ranks, 1 thread each" -- mpi 2 "$MTFM" train ../mini.json -q --threads 1)
(cd sp && expect_exit 0 "train.parallel sentences, 2 threads" -- \
    "$ROOT/tfm" train ../mini.json -q --threads 2 --set train.parallel=sentences)
check "2 threads, train.parallel sentences: the 2-rank model, bit for bit" \
    python3 "$ROOT/tests/model_diff.py" --exact r1/model.tfm sp/model.tfm
# Read in chunks (data.shuffle_buffer 150 of the 400 pairs): every rank
# reads the same chunks, so the job is still the 2-thread model bit for bit,
# and a resumed job the uninterrupted one.
mkdir ch1 ch2 chs
CH='--set data.shuffle_buffer=150'
(cd ch1 && expect_exit 0 "2 ranks, chunks of 150 pairs" -- mpi 2 "$MTFM" train ../mini.json -q --threads 1 $CH)
(cd chs && "$ROOT/tfm" train ../mini.json -q --threads 2 --set train.parallel=sentences $CH >/dev/null 2>&1)
check "chunks: 2 ranks = 2 threads, bit for bit" \
    python3 "$ROOT/tests/model_diff.py" --exact ch1/model.tfm chs/model.tfm
(cd ch2 && TFM_TEST_SIGNAL_AT_STEP=13 mpi 2 "$MTFM" train ../mini.json -q --threads 1 $CH 2>/dev/null)
(cd ch2 && expect_exit 0 "chunks, 2 ranks: resumed" -- mpi 2 "$MTFM" train ../mini.json -q --threads 1 $CH)
check "chunks, 2 ranks: resumed model equals uninterrupted" cmp -s ch1/model.tfm ch2/model.tfm
# Fine-tuning (train.init) on 2 ranks: rank 0 loads the model and sends its
# weights, so the job is the 2-thread fine-tuning run, bit for bit.
mkdir fi1 fis
FI='--set train.init=../r1/model.tfm'
(cd fi1 && expect_exit 0 "train.init, 2 ranks" -- mpi 2 "$MTFM" train ../mini.json -q --threads 1 $FI)
(cd fis && "$ROOT/tfm" train ../mini.json -q --threads 2 --set train.parallel=sentences $FI >/dev/null 2>&1)
check "train.init: 2 ranks = 2 threads, bit for bit" \
    python3 "$ROOT/tests/model_diff.py" --exact fi1/model.tfm fis/model.tfm
check "train.init, 2 ranks: the log names the initial model" grep -q '"init"' fi1/ck/log.jsonl
# Each rank encodes its third of a chunk's lines and fetches the ids of the
# sentences it trains on (its third of every batch), not the whole chunk;
# the lengths of all are gathered, so the skipped pairs are counted as one
# process counts them (80 of the 400 pairs are over max_len 40 tokens).
mkdir ch3
(cd ch3 && expect_exit 0 "3 ranks, chunks of 150 pairs" -- mpi 3 "$MTFM" train ../linear.json --threads 1 $CH)
enc=$(sed -n "s/.*each rank encoded at most \([0-9]*\) of the chunk's 150 lines and fetched the ids of at most \([0-9]*\) of its \([0-9]*\) pairs.*/\1 \2 \3/p" "$T/err")
check "3 ranks: a rank encodes 50 of a chunk's 150 lines and holds a third of its pairs ($enc)" \
    awk -v e="$enc" 'BEGIN { split(e, x, " "); exit !(x[1] == 50 && x[2] < x[3] / 2 && x[3] > 100) }'
"$MTFM" train linear.json --threads 1 $CH --set train.out_dir=ch3/one --set train.model=ch3/one.tfm 2>"$T/one.err" >/dev/null
check "3 ranks: the chunk's skip counts are one process's" \
    test "$(grep '^train: ' "$T/err" | sed 's/ [0-9.]* [kM]B encoded.*//')" = \
         "$(grep '^train: ' "$T/one.err" | sed 's/ [0-9.]* [kM]B encoded.*//')"
python3 "$ROOT/tests/model_diff.py" ch3/one.tfm ch3/model.tfm >"$T/diff"
check "chunks: 3 ranks train the 1-process model (max_rel < 1e-5: $(cat "$T/diff"))" \
    awk '{ exit !($4 < 1e-5) }' "$T/diff"
# ... stopped at step 13 and resumed by 2 ranks: the same global batches
mkdir ch4
(cd ch4 && TFM_TEST_SIGNAL_AT_STEP=13 mpi 3 "$MTFM" train ../linear.json -q --threads 1 $CH 2>/dev/null)
(cd ch4 && expect_exit 0 "chunks: 3 ranks resumed by 2" -- mpi 2 "$MTFM" train ../linear.json -q --threads 1 $CH)
python3 "$ROOT/tests/model_diff.py" ch3/one.tfm ch4/model.tfm >"$T/diff"
check "chunks: 3 ranks resumed by 2 train the 1-process model (max_rel < 1e-5: $(cat "$T/diff"))" \
    awk '{ exit !($4 < 1e-5) }' "$T/diff"
# A list of files read in chunks of 110 pairs, with BPE-dropout (each rank
# segments its part again every epoch and the new lengths are gathered) and
# the output pieces of the targets (from rank 0's sample); and the corpus
# kept, with the pieces of every rank's part: the 2-thread model, bit for bit.
head -n 250 train.de >a.de; head -n 250 train.en >a.en
tail -n 150 train.de >b.de; tail -n 150 train.en >b.en
for kept in 0 1; do
    if [ $kept = 1 ]; then L=''; else
        L='--set data.train_src=["../a.de","../b.de"] --set data.train_tgt=["../a.en","../b.en"] --set data.shuffle_buffer=110'; fi
    X="--set data.bpe_dropout=0.1 --set model.output_vocab=target --set train.max_steps=40 $L"
    mkdir l$kept ls$kept
    (cd l$kept && expect_exit 0 "2 ranks, BPE-dropout, output pieces (kept $kept)" -- mpi 2 "$MTFM" train ../mini.json -q --threads 1 $X)
    (cd ls$kept && "$ROOT/tfm" train ../mini.json -q --threads 2 --set train.parallel=sentences $X >/dev/null 2>&1)
    check "BPE-dropout, output pieces (kept $kept): 2 ranks = 2 threads, bit for bit" \
        python3 "$ROOT/tests/model_diff.py" --exact l$kept/model.tfm ls$kept/model.tfm
done
# A pair of files ending early, read in chunks: the ranks that only read
# through the line find it too; one line, once.
head -n 399 train.en >short.en
(cd ch3 && expect_exit 1 "2 ranks: a pair of files ending early" -- mpi 2 "$MTFM" train ../mini.json -q --restart \
    --set train.max_steps=1000 $CH --set data.train_tgt=../short.en)
expect_err_line "2 ranks: both files and both line counts, once" "tfm: ../train.de has 400 lines, $T/ch3/../short.en has 399 lines"
# Batches of 1-2 sentences on 3 ranks: a rank with no sentence still takes
# part in every per-layer sum (with zeros), and the job trains the 1-process
# model.
mkdir few1 few3
(cd few1 && expect_exit 0 "1 process, 1-2 sentences a batch" -- "$MTFM" train ../linear.json -q --set train.batch_tokens=90)
(cd few3 && expect_exit 0 "3 ranks, 1-2 sentences a batch" -- mpi 3 -x TFM_MPI_OVERLAP=1 "$MTFM" train ../linear.json -q --set train.batch_tokens=90)
python3 "$ROOT/tests/model_diff.py" few1/model.tfm few3/model.tfm >"$T/diff"
check "3 ranks with idle ranks train the 1-process model (max_rel < 1e-5: $(cat "$T/diff"))" \
    awk '{ exit !($4 < 1e-5) }' "$T/diff"

# another rank count resumes too (rank 0 sends its state to every rank)
mkdir c
(cd c && TFM_TEST_SIGNAL_AT_STEP=13 mpi 2 "$MTFM" train ../mini.json -q 2>/dev/null)
(cd c && expect_exit 0 "resumed by 1 process" -- "$MTFM" train ../mini.json -q)

# Rank 0's limits stop every rank at the same step: the time limit and
# patience (validation is rank 0's alone), without a hang.
mkdir lim
(cd lim && expect_exit 0 "2 ranks: train.max_time_s stops the job" -- mpi 2 "$MTFM" train ../long.json --set train.max_time_s=1)
check "2 ranks: the time limit is the reason" grep -q '^finished: train.max_time_s (1 s) reached at step' "$T/err"
check "2 ranks: the ranks' weights agree at the end" not grep -q "weights differ" "$T/err"
# lr.horizon "time": the rate follows rank 0's clock on every rank (each
# rank's own clock would give rates, and so weights, that differ)
(cd lim && expect_exit 0 "2 ranks: lr.horizon time" -- mpi 2 "$MTFM" train ../long.json --restart \
    --set train.max_time_s=2 --set train.max_steps=0 --set train.valid_every=100000 \
    --set train.lr.schedule=linear --set train.lr.horizon=time)
check "2 ranks, lr.horizon time: ended by the time limit" grep -q '^finished: train.max_time_s (2 s) reached at step' "$T/err"
check "2 ranks, lr.horizon time: the ranks' weights agree" not grep -q "weights differ" "$T/err"
(cd lim && expect_exit 0 "2 ranks: patience stops the job" -- mpi 2 "$MTFM" train ../long.json --restart \
    --set train.valid_every=2 --set train.patience=1 --set train.lr.peak=0.5)
check "2 ranks: early stopping is the reason" grep -q '^early stopping: no improvement in 1 validation$' "$T/err"

# A real SIGTERM to mpirun: every rank stops at the same step, last.tfm is
# saved once and the run resumes. mpirun sends SIGKILL 1 s after the SIGTERM
# it forwards (odls_base_sigkill_timeout): on a loaded machine a step and
# the save took longer once and the ranks died without a word, so the test
# gives them 60 s, as docs/distributed.md tells users to.
mkdir s
(cd s && exec mpirun -q --allow-run-as-root --oversubscribe --mca odls_base_sigkill_timeout 60 \
    -np 2 "$MTFM" train ../long.json -q 2>"$T/s.err") &
pid=$!
# (up to 120 s: on a loaded machine the two ranks' start took over the 10 s
# this once allowed, and the signal came before the run had a step to stop at)
for _ in $(seq 1200); do [ -f s/ck/last.tfm ] && break; sleep 0.1; done
kill -TERM $pid
wait $pid
check "SIGTERM to mpirun: one message" test "$(grep -c 'interrupted at step' "$T/s.err")" = 1
"$ROOT/tfm" info s/ck/last.tfm >"$T/out" 2>&1
check "SIGTERM to mpirun: last.tfm at the step of the message" \
    grep -q "step: *$(sed -n 's/.*interrupted at step \([0-9]*\);.*/\1/p' "$T/s.err") " "$T/out"

# kill -9 of one rank: mpirun ends the job with its error; last.tfm (written
# atomically by rank 0) loads and the run resumes from it.
mkdir k
(cd k && exec mpirun --allow-run-as-root --oversubscribe -np 2 "$MTFM" train ../long.json -q >/dev/null 2>"$T/k.err") &
pid=$!
for _ in $(seq 1200); do [ -f k/ck/last.tfm ] && break; sleep 0.1; done
sleep 0.5
kill -9 "$(pgrep -f -P $pid "build-mpi/tfm train ../long.json" | tail -n 1)"
wait $pid
check "a killed rank ends the job (exit $?)" test $? != 0
check "mpirun names the killed rank" grep -q 'signal 9' "$T/k.err"
(cd k && expect_exit 0 "after a killed rank: last.tfm loads" -- "$ROOT/tfm" info ck/last.tfm)
at=$(sed -n 's/^step: *\([0-9]*\) .*/\1/p' "$T/out")
(cd k && expect_exit 0 "after a killed rank: resumes" -- mpi 2 "$MTFM" train ../long.json --set train.max_steps=$((at + 5)))
check "after a killed rank: resumed from last.tfm" grep -q "^resuming from ck/last.tfm at step $at " "$T/err"

# Errors are one line, printed once.
expect_exit 1 "a bad config under mpirun" -- mpi 2 "$MTFM" train nonexistent.json
expect_err_line "bad config message, once" "tfm: nonexistent.json: cannot open: No such file or directory"
expect_exit 2 "only train runs on several ranks" -- mpi 2 "$MTFM" bleu a b
expect_err_line "only train message" "tfm: bleu: only \`tfm train\` runs on several MPI ranks"
expect_exit 2 "a build without MPI under mpirun" -- mpi 2 "$ROOT/tfm" train mini.json
expect_err_line "no-MPI message" "tfm: started by mpirun with 2 ranks, but this tfm is built without MPI: build it with \`make MPI=1\`"

cli_summary
