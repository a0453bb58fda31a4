# cli_train.sh: `tfm train`, `tfm info` and `tfm average` through the real
# binary: outputs, exact resume after a signal, damaged files, error lines.
. "$(dirname "$0")/cli_lib.sh"
MINI=$PWD/tests/data/mini
ROOT=$PWD
cp "$MINI"/train.* "$MINI"/valid.* "$T"/
sed 's/"max_steps": 30/"max_steps": 40/; s/"valid_every": 30/"valid_every": 40/' \
    "$MINI/mini.json" >"$T/mini.json"

cd "$T" || exit 1
mkdir a b c

# A full run: last stdout line is the model path; the files SPEC.md names exist.
(cd a && expect_exit 0 "train runs" -- "$TFM" train ../mini.json -q)
check "last stdout line is the model path" test "$(tail -n 1 "$T/out")" = model.tfm
for f in a/model.tfm a/ck/last.tfm a/ck/best.tfm a/ck/log.jsonl a/ck/vocab.txt; do
    check "$f exists" test -s "$f"
done
check "keep=2 numbered checkpoints" test "$(ls a/ck/ckpt.*.tfm | wc -l)" = 2
check "log.jsonl has train and valid records" \
    grep -q '"train_loss"' a/ck/log.jsonl
check "log.jsonl valid record" grep -q '"valid_ppl"' a/ck/log.jsonl
# The trained model records its step (the best validation's, the only one here).
expect_exit 0 "info on the trained model" -- "$TFM" info a/model.tfm
check "info shows the model's step" grep -q "^step:        40 (epoch [0-9]*)$" "$T/out"
check "a model is not a checkpoint" grep -q "^kind:        model$" "$T/out"
check "info shows the best validation" grep -q "^best valid:  nll [0-9.]*, ppl [0-9.]*$" "$T/out"

# A fresh run refused on its data leaves nothing it made: no out_dir it
# created, and in an existing one only what was there before.
mkdir nul && cp train.de nul/train.de && printf 'a\0b\n' >>nul/train.de
sed 's/"train\.de"/"nul\/train.de"/; s/"out_dir": "ck"/"out_dir": "nul\/new\/ck"/' mini.json >nul.json
expect_exit 1 "a NUL byte in the data" -- "$TFM" train nul.json -q
check "refused run: the new out_dir is gone" test ! -e nul/new
mkdir nul/old && touch nul/old/mine
sed 's/"out_dir": "nul\/new\/ck"/"out_dir": "nul\/old"/' nul.json >nul_old.json
expect_exit 1 "a NUL byte, existing out_dir" -- "$TFM" train nul_old.json -q
check "refused run: the existing out_dir holds what it held" test "$(ls nul/old)" = mine

# Gzipped training and validation data train the same model as plain text.
mkdir gz
for f in train.de train.en valid.de valid.en; do gzip -c "$f" >"gz/$f.gz"; done
sed 's/"train\.de"/"gz\/train.de.gz"/; s/"train\.en"/"gz\/train.en.gz"/; s/"valid\.de"/"gz\/valid.de.gz"/; s/"valid\.en"/"gz\/valid.en.gz"/' \
    mini.json >gz.json
(cd gz && expect_exit 0 "train on gzipped data" -- "$TFM" train ../gz.json -q)
no_t() { sed 's/"tok_per_s": [^,}]*//; s/"elapsed_s": [^,}]*//' "$1"; }
check "gzipped data: same log as plain text" test "$(no_t a/ck/log.jsonl)" = "$(no_t gz/ck/log.jsonl)"
check "gzipped data: same vocabulary" cmp -s a/ck/vocab.txt gz/ck/vocab.txt

# train.log_every: a plain progress line and a log row every N steps.
mkdir le
sed 's/"keep": 2,/"keep": 2, "log_every": 7,/' mini.json >le.json
(cd le && "$TFM" train ../le.json >/dev/null 2>"$T/le.err")
check "log_every 7: rows at 7, 14, ... and the validation" \
    test "$(grep -o '"step": [0-9]*, "epoch": [0-9]*, "train_loss"' le/ck/log.jsonl | cut -d' ' -f2 | tr -d , | tr '\n' ' ')" = "7 14 21 28 35 40 "
check "log_every 7: a progress line at step 35" grep -q '^step 35  epoch ' "$T/le.err"
check "log_every 7: none at step 36" not grep -q '^step 36 ' "$T/le.err"
check "the progress line says which loss is which" \
    grep -qE '^step 35  epoch [0-9]+  smoothed loss [0-9.]+  nll [0-9.]+  ppl [0-9.]+  lr ' "$T/le.err"
check "validation reports the NLL" grep -qE '^step 40: valid nll [0-9.]+ ppl [0-9.]+' "$T/le.err"
(cd le && "$TFM" train ../mini.json --restart >/dev/null 2>"$T/le.err")
check "log_every 0 says what it picked and the time to go" \
    grep -qE '^[0-9.]* s a step \([0-9]* s per 1000\): about [0-9]+s to go; progress every ([0-9]+ steps|step) \(train.log_every\)$' "$T/le.err"
(cd le && "$TFM" train ../mini.json --restart --set train.log_every=1 >/dev/null 2>"$T/le.err")
check "log_every 1: progress every step" grep -q 'progress every step (train.log_every)$' "$T/le.err"
# A run longer than a day says how to make it shorter (stopped at step 7,
# after the estimate).
(cd le && TFM_TEST_SIGNAL_AT_STEP=7 "$TFM" train ../mini.json --restart \
    --set train.max_steps=900000000 >/dev/null 2>"$T/le.err")
check "more than a day: how to make it shorter" \
    grep -q 'to go (more than a day: train.max_time_s or train.max_steps sets a shorter run, a smaller model (configs/tiny.json) a faster one)' "$T/le.err"

# train.lr.horizon "time": with no step limit the rate decays with the
# training time, from the peak after warm-up to lr.final as max_time_s ends.
mkdir hz
(cd hz && expect_exit 0 "lr.horizon time: trains to max_time_s" -- "$TFM" train ../mini.json \
    --set train.max_steps=0 --set train.max_time_s=3 --set train.valid_every=100000 \
    --set train.log_every=5 --set train.lr.schedule=linear --set train.lr.horizon=time)
check "lr.horizon time: the time limit ended it" grep -q 'train.max_time_s (3 s) reached' "$T/err"
grep -o '"lr": [^,]*' hz/ck/log.jsonl | cut -d' ' -f2 >hz/lr.txt
check "lr.horizon time: rates fall after the warm-up, below 15% of the peak at the end" \
    awk 'NR == 2 { top = $1 } NR > 2 && $1 > prev + 1e-12 { bad = 1 } { prev = $1 }
         END { exit !(NR > 8 && !bad && top > 0.0025 && prev < 0.15 * 0.003) }' hz/lr.txt

# model.norm_type rmsnorm: trains, the file records it, info shows it, it
# translates; the SPEC keys not built yet are refused with a clear line.
mkdir rms
sed 's/"dropout": 0.1/"dropout": 0.1, "norm_type": "rmsnorm"/' mini.json >rms.json
(cd rms && expect_exit 0 "train with RMSNorm" -- "$TFM" train ../rms.json -q)
expect_exit 0 "info on an RMSNorm model" -- "$TFM" info rms/model.tfm
check "info shows RMSNorm" grep -q 'post-norm RMSNorm, softmax attention' "$T/out"
head -n 3 valid.de >rms/in.txt
expect_exit 0 "translate with an RMSNorm model" -- "$TFM" translate -m rms/model.tfm -i rms/in.txt -q
check "RMSNorm model translates every line" test "$(wc -l <"$T/out")" = 3

# model.attention linear: trains, the file records it, info shows it, it
# translates with beam and in a batch; attention dropout is refused with it.
mkdir linattn
sed 's/"dropout": 0.1/"dropout": 0.1, "attention": "linear"/' mini.json >linattn.json
(cd linattn && expect_exit 0 "train with linear attention" -- "$TFM" train ../linattn.json -q)
expect_exit 0 "info on a linear-attention model" -- "$TFM" info linattn/model.tfm
check "info shows linear attention" grep -q 'post-norm LayerNorm, linear attention' "$T/out"
head -n 5 valid.de >linattn/in.txt
expect_exit 0 "translate with a linear-attention model, beam 3" -- "$TFM" translate -m linattn/model.tfm -b 3 -i linattn/in.txt -o linattn/b3.txt -q
check "linear-attention model translates every line" test "$(wc -l <linattn/b3.txt)" = 5
for i in 1 2 3 4 5; do sed -n "${i}p" linattn/in.txt | "$TFM" translate -m linattn/model.tfm -b 3 -q; done >linattn/one.txt
check "linear attention: one line at a time = the batch" cmp -s linattn/b3.txt linattn/one.txt
expect_exit 1 "linear attention with attention dropout refused" -- "$TFM" train mini.json --dry-run --set model.attention=linear --set model.attn_dropout=0.1
expect_err_line "linear attention dropout message" \
    "tfm: --set model.attn_dropout: 0.1 needs model.attention \"softmax\" (linear attention has no attention weights to drop); use 0"

# train.precision bf16: refused with a clear line on a CPU without a bf16
# unit (forced here through oneDNN's ISA cap, so every machine checks it);
# where there is one, a run interrupted by SIGTERM and resumed ends with the
# uninterrupted run's model, byte for byte, and the file records bf16.
expect_exit 1 "bf16 refused without a bf16 unit" -- env ONEDNN_MAX_CPU_ISA=AVX2 "$TFM" train mini.json --set train.precision=bf16 --set train.out_dir=nobf16
expect_err_line "bf16 refusal names what is missing" \
    "tfm: train.precision: bf16 needs a CPU with AVX512-BF16 or AMX, and this one has neither (use \"fp32\")"
check "bf16 refusal leaves no folder" test ! -e nobf16
# oneDNN is loaded only for bf16, not linked: without it fp32 runs and bf16
# says what is missing (TFM_DNNL_LIB: a library file that is not there)
# (make asan links it at start: LeakSanitizer cannot scan a dlopen'ed oneDNN)
if ldd "$TFM" | grep -q libasan; then
    echo "  (AddressSanitizer build: oneDNN is linked there; the not-linked check is skipped)" >&2
else
    check "oneDNN is not linked" not grep -q libdnnl <<<"$(ldd "$TFM")"
fi
expect_exit 0 "--version without oneDNN" -- env TFM_DNNL_LIB=/nonexistent/libdnnl.so "$TFM" --version
check "--version says oneDNN is missing" grep -qx "bf16 products: none (oneDNN not installed)" "$T/out"
expect_exit 1 "bf16 without oneDNN" -- env TFM_DNNL_LIB=/nonexistent/libdnnl.so "$TFM" train mini.json --set train.precision=bf16 --set train.out_dir=nodnnl
expect_err_line "bf16 without oneDNN names it" \
    "tfm: train.precision: bf16 runs on oneDNN (libdnnl.so.2), which is not installed (use \"fp32\", or install libdnnl: make deps)"
(mkdir nodnnl_fp32 && cd nodnnl_fp32 && expect_exit 0 "fp32 training without oneDNN" -- env TFM_DNNL_LIB=/nonexistent/libdnnl.so "$TFM" train ../mini.json -q --set train.max_steps=2)
# train.precision auto: bf16 only where its products measure faster; a CPU
# without a bf16 unit trains in fp32, and the model records what ran.
mkdir auto
(cd auto && env ONEDNN_MAX_CPU_ISA=AVX2 "$TFM" train ../mini.json --set train.precision=auto >/dev/null 2>"$T/auto.err")
check "auto without a bf16 unit: fp32, said once" \
    test "$(grep -c '^train.precision auto: fp32 (no bf16 unit: none)$' "$T/auto.err")" = 1
"$TFM" info auto/model.tfm >"$T/out" 2>&1
check "auto: the model records fp32" grep -q 'precision: *fp32' "$T/out"
(cd auto && "$TFM" train ../mini.json --set train.precision=auto --set train.out_dir=ck2 --set train.model=m2.tfm >/dev/null 2>"$T/auto.err")
check "auto: says what it picked and why" grep -q '^train.precision auto: \(bf16\|fp32\) (\(bf16 products ran [0-9.]*x float32.s speed here\|no bf16 unit: none\))$' "$T/auto.err"
"$TFM" info auto/m2.tfm >"$T/out" 2>&1
check "auto: the model records fp32 or bf16" grep -q '^precision: *\(fp32\|bf16\) (trained with' "$T/out"
"$TFM" train mini.json --set train.precision=auto --dry-run >"$T/out"
check "auto: --dry-run keeps auto" grep -q '"precision": "auto"' "$T/out"
if "$TFM" --version | grep -q '^bf16 products: none'; then
    echo "  (no bf16 unit on this CPU: bf16 training not run)"
else
    mkdir bfa bfb
    sed 's/"keep": 2,/"keep": 2, "precision": "bf16",/' mini.json >bf.json
    (cd bfa && expect_exit 0 "bf16 training" -- "$TFM" train ../bf.json -q)
    (cd bfb && TFM_TEST_SIGNAL_AT_STEP=13 expect_exit 143 "bf16: SIGTERM exits 143" -- "$TFM" train ../bf.json -q)
    (cd bfb && expect_exit 0 "bf16: resumed run finishes" -- "$TFM" train ../bf.json -q)
    check "bf16: resumed model equals uninterrupted" cmp -s bfa/model.tfm bfb/model.tfm
    check "bf16: differs from the fp32 model" test -n "$(cmp a/model.tfm bfa/model.tfm 2>&1)"
    expect_exit 0 "info on a bf16 model" -- "$TFM" info bfa/model.tfm
    check "info shows bf16" grep -q 'precision: *bf16' "$T/out"
fi

# data.bpe_dropout: every epoch its own segmentation, from the seed and the
# epoch, so an interrupted and resumed run still ends with the uninterrupted
# run's model, byte for byte; the model differs from the plain run's.
mkdir bda bdb
(cd bda && expect_exit 0 "BPE-dropout training" -- "$TFM" train ../mini.json -q --set data.bpe_dropout=0.1)
(cd bdb && TFM_TEST_SIGNAL_AT_STEP=13 expect_exit 143 "BPE-dropout: SIGTERM exits 143" -- "$TFM" train ../mini.json -q --set data.bpe_dropout=0.1)
(cd bdb && expect_exit 0 "BPE-dropout: resumed run finishes" -- "$TFM" train ../mini.json -q --set data.bpe_dropout=0.1)
check "BPE-dropout: resumed model equals uninterrupted" cmp -s bda/model.tfm bdb/model.tfm
# (the files would differ anyway: each holds its config; the validations tell)
valid_losses() { grep -o '"valid_loss": [^,]*' "$1"; }
check "BPE-dropout: validated" test -n "$(valid_losses bda/ck/log.jsonl)"
check "BPE-dropout: other validation losses than the plain run" \
    test "$(valid_losses a/ck/log.jsonl)" != "$(valid_losses bda/ck/log.jsonl)"
expect_exit 1 "BPE-dropout of 1 refused" -- "$TFM" train mini.json --dry-run --set data.bpe_dropout=1
expect_err_line "BPE-dropout range message" "tfm: --set data.bpe_dropout: expected a number in [0, 1), got 1"

# The end of a run says why it stopped and what it kept; a rerun says the
# run had already finished.
mkdir sm
(cd sm && "$TFM" train ../mini.json >/dev/null 2>"$T/sm.err")
check "start: the parameter count and the memory plan" grep -q '^model: 37376 parameters; [0-9]* MB in use with the optimizer, gradients and activations for 600 tokens ([0-9]* MB available)$' "$T/sm.err"
check "summary: why it stopped" grep -q '^finished: train.max_steps (40) reached at step 40 (epoch [0-9]*) after 0h00m[0-9][0-9]s of training$' "$T/sm.err"
check "summary: the best validation" grep -q '^best validation at step 40: nll [0-9.]* ppl [0-9.]*; model: best.tfm -> model.tfm$' "$T/sm.err"
(cd sm && "$TFM" train ../mini.json >/dev/null 2>"$T/sm.err")
check "rerun: already finished" grep -q '^this run had already finished: train.max_steps (40) reached at step 40 ' "$T/sm.err"

# Interrupted at step 13 by SIGTERM (through the real handler), then resumed:
# the final model must equal the uninterrupted run's, byte for byte.
(cd b && TFM_TEST_SIGNAL_AT_STEP=13 expect_exit 143 "SIGTERM exits 143" -- "$TFM" train ../mini.json -q)
expect_err_line "interrupt message" "tfm: interrupted at step 13; run the same command to resume"
(cd b && expect_exit 0 "info on interrupted last.tfm" -- "$TFM" info ck/last.tfm)
check "last.tfm is at step 13" grep -q "step:        13 " "$T/out"
(cd b && "$TFM" train ../mini.json >"$T/out" 2>"$T/err")
check "resumed run succeeds" test $? = 0
check "resume is announced" grep -q "resuming from ck/last.tfm at step 13" "$T/err"
check "resumed model equals uninterrupted" cmp -s a/model.tfm b/model.tfm
# The log too: the step-40 train record sums steps 1-40 in both (the sums
# are in the checkpoint), and it is there once. Times differ.
no_times() { sed 's/"tok_per_s": [^,}]*//; s/"elapsed_s": [^,}]*//' "$1"; }
check "resumed log equals uninterrupted" test "$(no_times a/ck/log.jsonl)" = "$(no_times b/ck/log.jsonl)"

# Rerunning a finished run is harmless; --restart starts over and ends the same.
# A train.model temp of a killed run (dead pid) goes; a live writer's stays.
: >a/model.tfm.tmp.2147483646
: >a/model.tfm.tmp.$$
: >a/other.tfm.tmp.2147483646
cp a/ck/last.tfm a/last.before; cp a/ck/log.jsonl a/log.before
(cd a && expect_exit 0 "rerun finished" -- "$TFM" train ../mini.json -q)
check "rerun finished: last.tfm unchanged" cmp -s a/ck/last.tfm a/last.before
check "rerun finished: no validation again" cmp -s a/ck/log.jsonl a/log.before
check "rerun finished: model copied" cmp -s a/model.tfm b/model.tfm
check "stale train.model temp removed" test ! -e a/model.tfm.tmp.2147483646
check "a live writer's temp is kept" test -e a/model.tfm.tmp.$$
check "another file's temp is kept" test -e a/other.tfm.tmp.2147483646
rm -f a/model.tfm.tmp.$$ a/other.tfm.tmp.2147483646
# The rerun's copy checks best.tfm first: a damaged one is not copied over
# train.model, and a deleted one is named as such.
cp a/ck/best.tfm a/best.before
printf '\377' | dd of=a/ck/best.tfm bs=1 seek=5000 conv=notrunc status=none
# With stderr closed, progress notes go nowhere, not into a file tfm opened.
mkdir e0 && (cd e0 && "$TFM" train ../mini.json 2>&- >/dev/null)
check "stderr closed: the run succeeds" test -s e0/model.tfm
check "stderr closed: the lock file stays empty" test ! -s e0/ck/lock
check "stderr closed: log.jsonl is only JSON" test -z "$(grep -v '^{' e0/ck/log.jsonl)"
(cd a && expect_exit 1 "rerun with a damaged best.tfm" -- "$TFM" train ../mini.json -q)
expect_err_line "damaged best.tfm named" "tfm: ck/best.tfm: checksum mismatch (corrupted file)"
check "damaged best.tfm not copied" cmp -s a/model.tfm b/model.tfm
# A deleted best.tfm: the last weights are validated and become the best,
# so a finished run always ends with a model (here the same one: the run's
# only validation was its last step).
rm a/ck/best.tfm
(cd a && "$TFM" train ../mini.json >"$T/out" 2>"$T/err")
check "rerun with best.tfm deleted succeeds" test $? = 0
check "deleted best.tfm: said so" grep -q "^ck/best.tfm is missing: the next validation's model becomes the best$" "$T/err"
check "deleted best.tfm: the model is written again" cmp -s a/model.tfm b/model.tfm
mv a/best.before a/ck/best.tfm
(cd b && expect_exit 0 "restart" -- "$TFM" train ../mini.json -q --restart)
check "restart reproduces the run" cmp -s a/model.tfm b/model.tfm
check "restart starts a fresh log" test "$(grep -c valid_ppl b/ck/log.jsonl)" = 1

# A real SIGTERM at an arbitrary moment leaves a loadable, resumable last.tfm.
sed 's/"max_steps": 40/"max_steps": 100000/; s/"save_every": 5/"save_every": 3/' mini.json >long.json
(cd c || exit 1
 "$TFM" train ../long.json -q >/dev/null 2>&1 &
 pid=$!
 until_true test -e ck/last.tfm
 kill -TERM $pid; wait $pid; echo $? >rc)
check "kill -TERM exits 143" test "$(cat c/rc)" = 143
(cd c && expect_exit 0 "killed run's last.tfm loads" -- "$TFM" info ck/last.tfm)
sed 's/"max_steps": 100000/"max_steps": 60/; s/"save_every": 5/"save_every": 3/' mini.json >short.json
check "killed run is past step 0" test -s c/ck/last.tfm
(cd c && expect_exit 0 "killed run resumes and finishes" -- "$TFM" train ../short.json -q)
# A resumed run redoes the steps after its checkpoint: their lines in
# log.jsonl, left by a run killed later, go (a line cut short too).
kept=$(grep -c . c/ck/log.jsonl)
printf '{"step": 61, "epoch": 99}\n{"step": 62, "ep' >>c/ck/log.jsonl
sed 's/"max_steps": 60/"max_steps": 62/' short.json >short62.json
(cd c && expect_exit 0 "resume past the end of a log" -- "$TFM" train ../short62.json -q)
check "log lines of redone steps dropped" test -z "$(grep '"epoch": 99\|"ep$' c/ck/log.jsonl)"
check "log lines up to the checkpoint kept" test "$(grep -c . c/ck/log.jsonl)" -ge "$kept"
check "log lines whole" test "$(grep -vc '}$' c/ck/log.jsonl)" = 0

# kill -9 at an arbitrary moment: last.tfm is whole (atomic saves), a stale
# temp file is cleaned up, and the run resumes.
mkdir g
(cd g || exit 1
 "$TFM" train ../long.json -q >/dev/null 2>&1 &
 pid=$!
 until_true test -e ck/last.tfm
 sleep 0.3
 kill -KILL $pid; wait $pid 2>/dev/null
 : >ck/last.tfm.tmp.999999
 : >ck/log.jsonl.tmp.999999)
(cd g && expect_exit 0 "last.tfm after kill -9 loads" -- "$TFM" info ck/last.tfm)
(cd g && expect_exit 0 "run resumes after kill -9" -- "$TFM" train ../short.json -q)
check "stale temp file removed" test ! -e g/ck/last.tfm.tmp.999999
check "stale log temp removed" test ! -e g/ck/log.jsonl.tmp.999999

# Signals. One SIGTERM sent twice (coreutils timeout signals the process and
# then its group) still saves; SIGHUP saves and exits 129; a second SIGINT
# stops at once; progress lines to a reader that went away do not kill the
# run (SIGPIPE); before the first step a signal exits at once.
# run_then NAME CONFIG SIGNALS...: starts CONFIG in $T/NAME, waits for its
# first save, sends the signals 0.05 s apart, leaves the exit code in NAME/rc.
# slow.json's steps are long (about 0.1 s here): a second SIGTERM mostly comes
# mid-step.
sed 's/"d_model": 32/"d_model": 128/; s/"d_ff": 64/"d_ff": 4096/; s/"save_every": 3/"save_every": 2/
     s/"enc_layers": 1, "dec_layers": 1/"enc_layers": 2, "dec_layers": 2/' long.json >slow.json
run_then() {
    local dir=$1 config=$2; shift 2
    mkdir "$dir"
    (cd "$dir" || exit 1
     "$TFM" train "../$config" -q >/dev/null 2>err &
     pid=$!
     until_true test -e ck/last.tfm
     for s in "$@"; do kill -"$s" $pid; sleep 0.05; done
     wait $pid; echo $? >rc)
}
run_then sig_tt slow.json TERM TERM
check "SIGTERM twice exits 143" test "$(cat sig_tt/rc)" = 143
check "SIGTERM twice still saves" grep -q "^tfm: interrupted at step" sig_tt/err
run_then sig_hup long.json HUP
check "SIGHUP exits 129" test "$(cat sig_hup/rc)" = 129
check "SIGHUP saves" grep -q "^tfm: interrupted at step" sig_hup/err
# interrupt_on NAME CONFIG PATTERN...: runs CONFIG in $T/NAME, reads its
# progress through a fifo as it is written and sends SIGINT as each line that
# matches a PATTERN comes (no sleep: a run on a fast or a loaded machine is
# signalled at the same point); leaves stderr in NAME/err, the exit code in NAME/rc.
interrupt_on() {
    local dir=$1 config=$2; shift 2
    mkdir -p "$dir"
    (cd "$dir" || exit 1
     mkfifo progress
     "$TFM" train "../$config" --set train.log_every=1 2>progress >/dev/null &
     pid=$!
     while IFS= read -r -t 120 line; do
         printf '%s\n' "$line" >>err
         for p in "$@"; do
             # shellcheck disable=SC2053
             [[ $line == $p ]] && kill -INT $pid
         done
     done <progress
     kill -KILL $pid 2>/dev/null        # stuck for two minutes: fails below
     wait $pid; echo $? >rc)
}
# The second SIGINT must come after the first was handled (two pending
# SIGINTs are one) and before the run has finished its step and saved: the
# first as step 3's line is read (step 4, one of slow.json's long steps, has
# just begun), the second as the run says it is stopping.
interrupt_on sig_ii slow.json "step 3 *" "tfm: stopping: *"
check "SIGINT twice exits 130" test "$(cat sig_ii/rc)" = 130
check "SIGINT twice stops at once" grep -qx "tfm: stopped at once, without saving" sig_ii/err
mkdir sig_pipe
(cd sig_pipe || exit 1
 mkfifo progress
 head -c 1 <progress >/dev/null &
 "$TFM" train ../long.json 2>progress >/dev/null &
 pid=$!
 until_true test -e ck/last.tfm
 sleep 0.5
 kill -TERM $pid; wait $pid; echo $? >rc)
check "a closed progress pipe does not kill training" test "$(cat sig_pipe/rc)" = 143
check "... and the run saved" test -s sig_pipe/ck/last.tfm
# set-up: BPE learning on 20k lines of random words takes about a second
mkdir sig_setup
awk 'BEGIN { srand(7); for (i = 0; i < 20000; i++) { l = ""
       for (j = 0; j < 12; j++) { n = 3 + int(rand() * 6)
         for (k = 0; k < n; k++) l = l sprintf("%c", 97 + int(rand() * 26)); l = l " " }
       print l } }' >sig_setup/words.txt
sed 's/"vocab_size": 500/"vocab_size": 8000/; s/"train\.de"/"sig_setup\/words.txt"/; s/"train\.en"/"sig_setup\/words.txt"/' \
    long.json >setup.json
interrupt_on sig_setup setup.json "*learning a *"
check "SIGINT in set-up exits 130" test "$(cat sig_setup/rc)" = 130
check "SIGINT in set-up: nothing saved" test ! -e sig_setup/ck/last.tfm
check "SIGINT in set-up message" grep -qx "tfm: interrupted before the first step; nothing was saved" sig_setup/err

# A train.model that cannot be written is refused before training.
sed 's|"model": "model.tfm"|"model": "/proc/tfm-test-m.tfm"|' mini.json >proc.json
mkdir pm
(cd pm && expect_exit 1 "train.model not writable" -- "$TFM" train ../proc.json -q)
check "train.model not writable: refused before training" test ! -e pm/ck/last.tfm
sed 's|"model": "model.tfm"|"model": "m19/"|' mini.json >slash.json
(cd pm && expect_exit 1 "train.model names a folder" -- "$TFM" train ../slash.json -q)
expect_err_line "train.model folder message" "tfm: m19/: names a folder, not a file"
ln -s loop1 loop2; ln -s loop2 loop1
sed 's|"out_dir": "ck"|"out_dir": "../loop1"|' mini.json >loop.json
(cd pm && expect_exit 1 "out_dir is a symlink loop" -- "$TFM" train ../loop.json -q)
expect_err_line "symlink loop message" "tfm: ../loop1: cannot use as a folder: Too many levels of symbolic links"

# Numbered checkpoints without last.tfm belong to an earlier run: a fresh
# run would prune its own and keep theirs. Refused; --restart clears them.
mkdir orphan && cp -r a/ck orphan/ck && rm orphan/ck/last.tfm
(cd orphan && expect_exit 1 "numbered checkpoints without last.tfm" -- "$TFM" train ../mini.json -q)
expect_err_line "orphan checkpoints message" "tfm: ck: holds 2 numbered checkpoints of an earlier run but no last.tfm to resume from; --restart removes them"
(cd orphan && expect_exit 0 "--restart clears them" -- "$TFM" train ../mini.json -q --restart)

# Two runs cannot share an out_dir.
mkdir h
(cd h || exit 1
 "$TFM" train ../long.json -q >/dev/null 2>&1 &
 pid=$!
 until_true test -e ck/last.tfm
 expect_exit 1 "second run on a busy out_dir" -- "$TFM" train ../long.json -q
 kill -TERM $pid; wait $pid 2>/dev/null)
expect_err_line "busy out_dir message" "tfm: ck: in use by another tfm train"

# tfm average: two checkpoints of one run.
(cd a && expect_exit 0 "average" -- "$TFM" average -o avg.tfm ck/last.tfm ck/best.tfm)
expect_exit 0 "average output loads" -- "$TFM" info a/avg.tfm
check "an averaged model has no step" grep -q "^step:        not recorded" "$T/out"
expect_exit 2 "average needs two models" -- "$TFM" average -o x.tfm a/model.tfm
# Resuming with another model config names each differing key, both values.
sed 's/"d_ff": 64/"d_ff": 48/; s/"heads": 2/"heads": 4/' mini.json >other_model.json
(cd b && expect_exit 1 "resume with another model config" -- "$TFM" train ../other_model.json)
expect_err_line "resume names the keys" \
    "tfm: ck/last.tfm: was trained with another model config: model.heads 2 -> 4, model.d_ff 64 -> 48 (use --restart to start over)"
# Each architecture key (every model.* key, data.max_len) on its own: a
# resume that changes it is refused, naming the key and both values (a run
# resumed as linear attention once wrote "linear" over softmax weights).
mkdir arch
(cd arch && expect_exit 0 "a 2-step run to resume" -- "$TFM" train ../mini.json -q --set train.max_steps=2)
cp arch/ck/last.tfm arch/last.before
(cd arch && expect_exit 1 "resume with another attention" -- "$TFM" train ../mini.json -q --set train.max_steps=4 --set model.attention=linear)
expect_err_line "resume with another attention: the key and both values" \
    "tfm: ck/last.tfm: was trained with another model config: model.attention softmax -> linear (use --restart to start over)"
arch_sets="model.d_model=64:32:64 model.heads=4:2:4 model.enc_layers=2:1:2 model.dec_layers=2:1:2
model.d_ff=48:64:48 model.dropout=0.2:0.1:0.2 model.attn_dropout=0.1:0:0.1
model.relu_dropout=0.1:0:0.1 model.word_dropout=0.1:0:0.1 model.norm=pre:post:pre
model.norm_type=rmsnorm:layernorm:rmsnorm model.attention=linear:softmax:linear
model.output_vocab=target:all:target model.share_embeddings=false:true:false data.max_len=30:40:30"
for a in $arch_sets; do
    set_=${a%%:*}; key=${set_%%=*}; vals=${a#*:}
    # (docs/errors.md takes its row from the case above, not from this loop)
    (cd arch || exit 1; expect_exit 1 "resume with --set $set_ refused" -- "$TFM" train ../mini.json -q --set train.max_steps=4 --set "$set_")
    expect_err_line "resume with --set $set_: the key and both values" \
        "tfm: ck/last.tfm: was trained with another model config: $key ${vals%%:*} -> ${vals#*:} (use --restart to start over)"
done
# ... and that list is every model key the config has (a new one joins it)
"$TFM" train mini.json --dry-run >"$T/dry.json"
check "every model.* key is tested above" test \
    "$(python3 -c 'import json,sys; print(" ".join(sorted("model." + k for k in json.load(open(sys.argv[1]))["model"])))' "$T/dry.json")" = \
    "$(for a in $arch_sets; do k=${a%%=*}; case $k in model.*) echo "$k";; esac; done | sort | tr '\n' ' ' | sed 's/ $//')"
check "the refused resumes left last.tfm as it was" cmp -s arch/ck/last.tfm arch/last.before

expect_exit 2 "average needs -o" -- "$TFM" average a/model.tfm a/model.tfm
# Same shapes and vocabulary, but 4 heads instead of 2: not one model's checkpoints.
sed 's/"heads": 2/"heads": 4/; s/"max_steps": 40/"max_steps": 2/' mini.json >heads4.json
mkdir h4 && (cd h4 && "$TFM" train ../heads4.json -q >/dev/null 2>&1)
expect_exit 1 "average of models with other heads" -- "$TFM" average -o x.tfm a/model.tfm h4/model.tfm
expect_err_line "average names the key" "tfm: h4/model.tfm: model.heads differs from a/model.tfm's"

# train.average_last: train.model is the mean of the newest checkpoints,
# the same bytes as `tfm average` of them, validated and logged once.
sed 's/"keep": 2/"keep": 3, "average_last": 3/; s/"valid_every": 40,/"valid_every": 20, "valid_bleu": true,/' \
    mini.json >avg_last.json
mkdir al
(cd al && expect_exit 0 "train with average_last" -- "$TFM" train ../avg_last.json -q)
(cd al && expect_exit 0 "average of the same checkpoints" -- \
    "$TFM" average -o manual.tfm ck/ckpt.30.tfm ck/ckpt.35.tfm ck/ckpt.40.tfm)
check "train.model is the average of the last 3" cmp -s al/model.tfm al/manual.tfm
check "out_dir/average.tfm is it too" cmp -s al/model.tfm al/ck/average.tfm
check "the average is not best.tfm" not cmp -s al/model.tfm al/ck/best.tfm
check "log records the averaged model" \
    grep -q '"step": 40, .*"valid_bleu": [0-9.e+-]*, .*"averaged": 3}' al/ck/log.jsonl
cp al/ck/log.jsonl al/log.before
(cd al && expect_exit 0 "rerun with average_last" -- "$TFM" train ../avg_last.json -q)
check "rerun: no second average" cmp -s al/ck/log.jsonl al/log.before
rm al/ck/average.tfm al/model.tfm
(cd al && expect_exit 0 "rerun remakes a deleted average" -- "$TFM" train ../avg_last.json -q)
check "remade average is the same" cmp -s al/model.tfm al/manual.tfm
# lr.schedule linear: the rate reaches lr.final (0) at max_steps, and the run
# is still exactly resumable (the rate is a function of the step alone).
sed 's/"inverse_sqrt"/"linear"/; s/"valid_every": 40,/"valid_every": 20,/' mini.json >lin.json
mkdir lin lin2
(cd lin && expect_exit 0 "train with a linear schedule" -- "$TFM" train ../lin.json -q)
check "linear: lr is a third of the way down at step 20" grep -q '"step": 20, .*"lr": 0.002000' lin/ck/log.jsonl
check "linear: lr is 0 at max_steps" grep -q '"step": 40, .*"lr": 0,' lin/ck/log.jsonl
(cd lin2 && TFM_TEST_SIGNAL_AT_STEP=27 "$TFM" train ../lin.json -q >/dev/null 2>&1)
(cd lin2 && expect_exit 0 "resume a linear-schedule run" -- "$TFM" train ../lin.json -q)
check "linear: resumed model equals uninterrupted" cmp -s lin/model.tfm lin2/model.tfm
# train.dropout_warmup: the dropouts rise from 0 over the first steps, a
# function of the step alone, so a run stopped inside the rise resumes to the
# uninterrupted model; a rise of 1 step is no rise at all.
mkdir dw dw2 dw1
(cd dw && expect_exit 0 "train with dropout_warmup" -- "$TFM" train ../mini.json -q --set train.dropout_warmup=30)
(cd dw2 && TFM_TEST_SIGNAL_AT_STEP=13 expect_exit 143 "dropout_warmup: SIGTERM inside the rise" -- "$TFM" train ../mini.json -q --set train.dropout_warmup=30)
(cd dw2 && expect_exit 0 "dropout_warmup: resume inside the rise" -- "$TFM" train ../mini.json -q --set train.dropout_warmup=30)
check "dropout_warmup: resumed model equals uninterrupted" cmp -s dw/model.tfm dw2/model.tfm
# (the logs' rows every 5 steps, not at the interval the speed would pick)
(cd dw1 && expect_exit 0 "dropout_warmup: the plain run beside it" -- "$TFM" train ../mini.json -q --set train.log_every=5 --set train.out_dir=plain)
(cd dw1 && expect_exit 0 "dropout_warmup of 1 step" -- "$TFM" train ../mini.json -q --set train.log_every=5 --set train.dropout_warmup=1)
check "dropout_warmup 1: the plain run's losses" test "$(no_times dw1/plain/log.jsonl)" = "$(no_times dw1/ck/log.jsonl)"
(cd dw1 && expect_exit 0 "dropout_warmup 30, logged every 5 steps" -- "$TFM" train ../mini.json -q --set train.log_every=5 --set train.dropout_warmup=30 --set train.out_dir=w30)
check "dropout_warmup 30: the same rows" test "$(grep -c '"step"' dw1/plain/log.jsonl)" = "$(grep -c '"step"' dw1/w30/log.jsonl)"
check "dropout_warmup 30: other losses" test "$(no_times dw1/plain/log.jsonl)" != "$(no_times dw1/w30/log.jsonl)"
expect_exit 1 "dropout_warmup below 0 refused" -- "$TFM" train mini.json --dry-run --set train.dropout_warmup=-5
expect_err_line "dropout_warmup range message" "tfm: --set train.dropout_warmup: expected a non-negative integer, got -5"
# train.rdrop (R-Drop): every sentence runs twice under two dropout masks.
# Without dropout the copies agree to float rounding (the products over the
# doubled batch round a copy's rows apart by about 1e-7), so the KL term and
# its gradient all but vanish and the model is the plain run's (under
# linear_adam, cli_lib.sh: the weights to max_rel 1e-5, the validation loss
# to 1e-6); with dropout, a run under train.parallel sentences stopped by
# SIGTERM resumes to the uninterrupted model, and the losses differ from the
# plain run's.
linear_adam mini.json >rd0.json
mkdir rd rd2 rdn rdn1
(cd rdn1 && expect_exit 0 "rdrop: the plain run without dropout" -- "$TFM" train ../rd0.json -q --threads 1)
(cd rdn && expect_exit 0 "rdrop 5 without dropout" -- "$TFM" train ../rd0.json --threads 1 --set train.rdrop=5)
check "rdrop: the workspace holds the batch twice" grep -q 'activations for [0-9]* tokens run twice (train.rdrop)' "$T/err"
python3 "$ROOT/tests/model_diff.py" rdn1/model.tfm rdn/model.tfm >"$T/diff"
check "rdrop without dropout: the plain model's weights (max_rel < 1e-5: $(cat "$T/diff"))" awk '{ exit !($4 < 1e-5) }' "$T/diff"
va=$(grep -o '"valid_loss": [0-9.]*' rdn1/ck/log.jsonl | tail -n 1 | cut -d' ' -f2)
vb=$(grep -o '"valid_loss": [0-9.]*' rdn/ck/log.jsonl | tail -n 1 | cut -d' ' -f2)
check "rdrop without dropout: the plain run's validation loss ($va, $vb)" \
    awk -v a="$va" -v b="$vb" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d < 1e-6 * a) }'
(cd rd && expect_exit 0 "rdrop 1, train.parallel sentences" -- "$TFM" train ../mini.json -q --threads 2 --set train.parallel=sentences --set train.rdrop=1)
(cd rd2 && TFM_TEST_SIGNAL_AT_STEP=13 expect_exit 143 "rdrop: SIGTERM at step 13" -- "$TFM" train ../mini.json -q --threads 2 --set train.parallel=sentences --set train.rdrop=1)
(cd rd2 && expect_exit 0 "rdrop: resumed" -- "$TFM" train ../mini.json -q --threads 2 --set train.parallel=sentences --set train.rdrop=1)
check "rdrop: resumed model equals uninterrupted" cmp -s rd/model.tfm rd2/model.tfm
(cd rd && expect_exit 0 "rdrop: the plain run beside it" -- "$TFM" train ../mini.json -q --threads 2 --set train.parallel=sentences --set train.out_dir=plain --set train.model=plain.tfm)
check "rdrop: both runs logged" test -s rd/ck/log.jsonl -a -s rd/plain/log.jsonl
check "rdrop: other losses than the plain run" test "$(no_times rd/ck/log.jsonl)" != "$(no_times rd/plain/log.jsonl)"
expect_exit 1 "rdrop below 0 refused" -- "$TFM" train mini.json --dry-run --set train.rdrop=-1
expect_err_line "rdrop range message" "tfm: --set train.rdrop: expected a non-negative number, got -1"
# model.output_vocab "target": the output layer scores the pieces the
# training targets use. The model file keeps them; a run stopped midway
# resumes to the uninterrupted model; it translates, scores, and averages
# only with models of the same output pieces.
mkdir ov ov2 ovb
(cd ov && expect_exit 0 "output_vocab target trains" -- "$TFM" train ../mini.json -q --set model.output_vocab=target)
expect_exit 0 "info on an output_vocab model" -- "$TFM" info ov/model.tfm
check "info counts the output pieces" grep -q '^vocabulary:  [0-9]* tokens, [0-9]* of them outputs (model.output_vocab "target")$' "$T/out"
n_all=$(sed -n 's/^vocabulary:  \([0-9]*\) tokens.*/\1/p' "$T/out")
n_out=$(sed -n 's/.* tokens, \([0-9]*\) of them outputs.*/\1/p' "$T/out")
check "fewer outputs than pieces, and at least the bytes" test "$n_out" -lt "$n_all" -a "$n_out" -ge 261
(cd ov2 && TFM_TEST_SIGNAL_AT_STEP=13 expect_exit 143 "output_vocab: SIGTERM" -- "$TFM" train ../mini.json -q --set model.output_vocab=target)
(cd ov2 && expect_exit 0 "output_vocab: resume" -- "$TFM" train ../mini.json -q --set model.output_vocab=target)
check "output_vocab: resumed model equals uninterrupted" cmp -s ov/model.tfm ov2/model.tfm
(cd ov2 && expect_exit 1 "output_vocab: resume as \"all\" refused" -- "$TFM" train ../mini.json -q)
expect_err_line "output_vocab resume message" "tfm: ck/last.tfm: was trained with another model config: model.output_vocab target -> all (use --restart to start over)"
head -n 5 valid.de >ov5.de
head -n 5 valid.en >ov5.en
expect_exit 0 "output_vocab: translate" -- "$TFM" translate -m ov/model.tfm -q -b 2 -i ov5.de
check "output_vocab: a line per input" test "$(wc -l <"$T/out")" = 5
expect_exit 0 "output_vocab: score references" -- "$TFM" translate -m ov/model.tfm -q --score-reference ov5.en -i ov5.de
check "output_vocab: finite scores" test "$(grep -c '^-[0-9]*\.[0-9]*$' "$T/out")" = 5
expect_exit 0 "output_vocab: an ensemble with an \"all\" model" -- "$TFM" translate -m ov/model.tfm -m a/model.tfm -q --score-reference ov5.en -i ov5.de
check "output_vocab ensemble: finite scores" test "$(grep -c '^-[0-9]*\.[0-9]*$' "$T/out")" = 5
# a member of weight 0 has no say, not even over the pieces it cannot write
"$TFM" translate -m a/model.tfm -q --score-reference ov5.en -i ov5.de >ov_alone.txt 2>&1
expect_exit 0 "output_vocab: in an ensemble with weight 0" -- "$TFM" translate -m ov/model.tfm -m a/model.tfm --weights 0,1 -q --score-reference ov5.en -i ov5.de
check "weight 0: the other model's scores" cmp -s "$T/out" ov_alone.txt
"$TFM" translate -m a/model.tfm -q -b 3 -i valid.de >ov_alone.txt 2>&1
expect_exit 0 "output_vocab: translate in an ensemble with weight 0" -- "$TFM" translate -m ov/model.tfm -m a/model.tfm --weights 0,1 -q -b 3 -i valid.de
check "weight 0: the other model's translations" cmp -s "$T/out" ov_alone.txt
expect_exit 0 "output_vocab: average its checkpoints" -- "$TFM" average -o ov/avg.tfm ov/ck/ckpt.35.tfm ov/ck/ckpt.40.tfm
expect_exit 1 "output_vocab: average with an \"all\" model refused" -- "$TFM" average -o ov/bad.tfm ov/model.tfm a/model.tfm
expect_err_line "average output_vocab message" "tfm: a/model.tfm: model.output_vocab differs from ov/model.tfm's"
(cd ovb && expect_exit 0 "output_vocab with BPE-dropout" -- "$TFM" train ../mini.json -q --set model.output_vocab=target --set data.bpe_dropout=0.2)
# train.parallel "sentences" (each thread a replica on its share of a batch;
# its equality with a 2-rank mpirun job is in cli_mpi.sh): without dropout
# it trains the products run's model to float rounding (the gradients add
# in another order; under linear_adam, cli_lib.sh says why), with 2 threads
# and with 3 on batches of 1-2 sentences
# (an idle thread adds zeros); with dropout, its own masks, and stopped by
# SIGTERM and resumed, the uninterrupted run's model; "auto" picks it for 2
# fp32 threads and says so, not for 1; bf16 beside it is refused.
linear_adam mini.json >linear.json
mkdir sp sp2 spa spa1 spn spn1 spf spf1
(cd spn1 && expect_exit 0 "no dropout, products, 1 thread" -- "$TFM" train ../linear.json -q --threads 1)
(cd spn && expect_exit 0 "no dropout, train.parallel sentences, 2 threads" -- "$TFM" train ../linear.json --threads 2 --set train.parallel=sentences)
check "train.parallel sentences: it says so" grep -q '^train.parallel sentences: 2 threads, each on its share' "$T/err"
python3 "$ROOT/tests/model_diff.py" spn1/model.tfm spn/model.tfm >"$T/diff"
check "sentences, 2 threads: the products model (max_rel < 1e-5: $(cat "$T/diff"))" awk '{ exit !($4 < 1e-5) }' "$T/diff"
(cd spf1 && expect_exit 0 "products, 1-2 sentences a batch" -- "$TFM" train ../linear.json -q --threads 1 --set train.batch_tokens=90)
(cd spf && expect_exit 0 "sentences, 3 threads, 1-2 sentences a batch" -- "$TFM" train ../linear.json -q --threads 3 --set train.batch_tokens=90 --set train.parallel=sentences)
python3 "$ROOT/tests/model_diff.py" spf1/model.tfm spf/model.tfm >"$T/diff"
check "sentences, 3 threads with idle ones: the products model (max_rel < 1e-5: $(cat "$T/diff"))" awk '{ exit !($4 < 1e-5) }' "$T/diff"
(cd sp && expect_exit 0 "train.parallel sentences, 2 threads" -- "$TFM" train ../mini.json -q --threads 2 --set train.parallel=sentences)
(cd sp2 && TFM_TEST_SIGNAL_AT_STEP=13 expect_exit 143 "train.parallel sentences: SIGTERM at step 13" -- "$TFM" train ../mini.json -q --threads 2 --set train.parallel=sentences)
(cd sp2 && expect_exit 0 "train.parallel sentences: resumed" -- "$TFM" train ../mini.json -q --threads 2 --set train.parallel=sentences)
check "train.parallel sentences: resumed model equals uninterrupted" cmp -s sp/model.tfm sp2/model.tfm
python3 "$ROOT/tests/model_diff.py" --exact a/model.tfm sp/model.tfm >"$T/diff" 2>&1
check "train.parallel sentences: its own dropout masks (not the 1-thread model)" grep -q ' differs$' "$T/diff"
(cd spa && expect_exit 0 "train.parallel auto, 2 threads" -- "$TFM" train ../mini.json --threads 2 --set train.parallel=auto)
check "train.parallel auto, 2 fp32 threads: sentences" grep -q '^train.parallel sentences: 2 threads' "$T/err"
"$TFM" info spa/model.tfm >"$T/out" 2>&1
check "train.parallel auto: the model records the choice" grep -q '"parallel": "sentences"' "$T/out"
(cd spa1 && expect_exit 0 "train.parallel auto, 1 thread" -- "$TFM" train ../mini.json --threads 1 --set train.parallel=auto)
check "train.parallel auto, 1 thread: products" not grep -q '^train.parallel sentences' "$T/err"
expect_exit 1 "train.parallel sentences with bf16 refused" -- "$TFM" train mini.json --dry-run --set train.parallel=sentences --set train.precision=bf16
expect_err_line "train.parallel with bf16: message" 'tfm: --set train.parallel: "sentences" runs float32 products and cannot be combined with train.precision "bf16" (use "products" or "auto")'
# train.ema: train.model is out_dir/ema.tfm, validated and logged once; the
# average is kept in checkpoints, so a resumed run ends with the same one.
sed 's/"valid_every": 40,/"valid_every": 10, "valid_bleu": true, "ema": 0.9,/' mini.json >ema.json
mkdir ema ema2
(cd ema && expect_exit 0 "train with ema" -- "$TFM" train ../ema.json)
check "ema: train.model is ema.tfm" cmp -s ema/model.tfm ema/ck/ema.tfm
check "ema: the average is not the last weights" not cmp -s ema/model.tfm ema/ck/best.tfm
check "ema: it says so" grep -q "moving average of the weights (train.ema 0.9): valid nll" "$T/err"
expect_exit 0 "ema: info of a checkpoint" -- "$TFM" info ema/ck/last.tfm
check "ema: info names the average" grep -q "^kind: .*moving average, train.ema)" "$T/out"
check "ema: log records it once" test "$(grep -c '"step": 40, .*"valid_bleu": [0-9.e+-]*, .*"ema": true}' ema/ck/log.jsonl)" = 1
(cd ema2 && TFM_TEST_SIGNAL_AT_STEP=17 "$TFM" train ../ema.json -q >/dev/null 2>&1)
(cd ema2 && expect_exit 0 "ema: resume" -- "$TFM" train ../ema.json -q)
check "ema: resumed average equals uninterrupted" cmp -s ema/model.tfm ema2/model.tfm
cp ema/ck/log.jsonl ema/log.before
(cd ema && expect_exit 0 "ema: rerun of a finished run" -- "$TFM" train ../ema.json -q)
check "ema: rerun validates nothing again" cmp -s ema/ck/log.jsonl ema/log.before
check "ema: rerun copies the same model" cmp -s ema/model.tfm ema2/model.tfm
# with a decay of ~0 the average is the last step's weights: ema_update runs
# every step (the checks above pass with an average stuck at the start)
sed 's/"ema": 0.9,/"ema": 1e-9,/' ema.json >ema0.json
mkdir ema0
(cd ema0 && expect_exit 0 "ema ~0" -- "$TFM" train ../ema0.json -q)
python3 "$ROOT/tests/model_diff.py" ema0/ck/ema.tfm ema0/ck/last.tfm >"$T/diff"
check "ema ~0: the average is the last weights" \
    python3 -c 'import sys; v = open(sys.argv[1]).read().split(); sys.exit(not float(v[1]) < 1e-6)' "$T/diff"
# a run extended past its end drops the old ema.tfm at its first step, so a
# failure before the new one is made cannot hand the old one over
cp -r ema ema_ext
(cd ema_ext && TFM_TEST_SIGNAL_AT_STEP=45 "$TFM" train ../ema.json --set train.max_steps=50 -q >/dev/null 2>&1)
check "ema: an extended run's first step removes the old ema.tfm" test ! -e ema_ext/ck/ema.tfm
(cd ema_ext && expect_exit 0 "ema: the extended run finishes" -- "$TFM" train ../ema.json --set train.max_steps=50 -q)
check "ema: and makes it again" cmp -s ema_ext/model.tfm ema_ext/ck/ema.tfm
# ema turned on for a finished run without one: nothing was averaged, so no ema.tfm
mkdir ema_late
(cd ema_late && "$TFM" train ../mini.json -q >/dev/null 2>&1)
(cd ema_late && expect_exit 0 "ema turned on after the end" -- "$TFM" train ../mini.json --set train.ema=0.9)
check "ema turned on after the end: says so" grep -q "train.ema: no step was averaged" "$T/err"
check "ema turned on after the end: no ema.tfm" test ! -e ema_late/ck/ema.tfm
check "ema turned on after the end: the model is best.tfm" cmp -s ema_late/model.tfm ema_late/ck/best.tfm
# with average_last too, train.model is the average; ema.tfm stays beside it
sed 's/"ema": 0.9,/"ema": 0.9, "keep": 3, "average_last": 3,/; s/"keep": 2,//' ema.json >ema_avg.json
mkdir ema3
(cd ema3 && expect_exit 0 "ema with average_last" -- "$TFM" train ../ema_avg.json -q)
check "ema + average_last: train.model is the average" cmp -s ema3/model.tfm ema3/ck/average.tfm
"$TFM" translate -m ema/ck/ema.tfm -i valid.de -o ema/valid.hyp -q
"$TFM" translate -m ema3/ck/ema.tfm -i valid.de -o ema3/valid.hyp -q
check "ema + average_last: ema.tfm translates as without" cmp -s ema/valid.hyp ema3/valid.hyp
# scripts/compare_runs.sh puts the two runs' validations side by side
expect_exit 0 "compare_runs.sh" -- bash "$ROOT/scripts/compare_runs.sh" ema/ck/log.jsonl both=ema3/ck/log.jsonl
check "compare_runs.sh: one row a step, named columns" \
    grep -qE '^\| 40 \| [0-9.]+ / [0-9.]+ \| [0-9.]+ / [0-9.]+ \|$' "$T/out"
check "compare_runs.sh: the header names the columns" grep -qx '| step | ck: NLL / BLEU | both: NLL / BLEU |' "$T/out"
check "compare_runs.sh: the average only where there is one" grep -qE '^\| average of 3 \|  \| [0-9.]+ / [0-9.]+ \|$' "$T/out"
check "compare_runs.sh: the ema of both" grep -qE '^\| moving average \(ema\) \| [0-9.]+ / [0-9.]+ \| [0-9.]+ / [0-9.]+ \|$' "$T/out"
check "compare_runs.sh: steps of each" grep -qE '^\| steps, median tok/s, minutes \| 40, ' "$T/out"
bash "$ROOT/scripts/compare_runs.sh" ema/ck/log.jsonl >/dev/null 2>&1
check "compare_runs.sh: one log is a usage error" test $? = 2
printf '{"step": 1}\n' >nolog.jsonl
bash "$ROOT/scripts/compare_runs.sh" nolog.jsonl ema/ck/log.jsonl >/dev/null 2>"$T/err"
check "compare_runs.sh: a log without validations" test $? = 1
expect_err_line "compare_runs.sh: its message" "compare_runs.sh: nolog.jsonl: no validation records"
# Fewer checkpoints than asked (a short run) average what there is.
sed 's/"max_steps": 40/"max_steps": 5/' avg_last.json >avg_short.json
mkdir as
(cd as && expect_exit 0 "average_last with one checkpoint" -- "$TFM" train ../avg_short.json)
check "it says how many were averaged" grep -q "average of the last 1 checkpoint (steps 5-5)" "$T/err"
(cd as && expect_exit 0 "--restart with average_last" -- "$TFM" train ../avg_short.json --restart -q)
sed 's/"average_last": 3/"average_last": 4/' avg_last.json >avg_keep.json
expect_exit 1 "average_last over keep" -- "$TFM" train avg_keep.json --dry-run
expect_err_line "average_last over keep message" \
    "tfm: avg_keep.json: train.average_last: 4 checkpoints to average need train.keep >= 4, got 3"

# Validation BLEU picks the best model and is logged.
sed 's/"valid_every": 40,/"valid_every": 20, "valid_bleu": true,/' mini.json >bleu.json
mkdir e
(cd e && expect_exit 0 "train with valid_bleu" -- "$TFM" train ../bleu.json -q)
check "log.jsonl has valid_bleu" grep -q '"valid_bleu"' e/ck/log.jsonl

# --restart removes the previous run's checkpoints; the model's folder is
# created; files in out_dir that are not tfm's are left alone.
sed 's/"max_steps": 40/"max_steps": 20/; s|"model": "model.tfm"|"model": "sub/dir/m.tfm"|' mini.json >short20.json
: >a/ck/report.tmp.csv
(cd a && expect_exit 0 "restart with fewer steps" -- "$TFM" train ../short20.json -q --restart)
check "old numbered checkpoints removed" test "$(cd a/ck && ls ckpt.*.tfm | tr '\n' ' ')" = "ckpt.15.tfm ckpt.20.tfm "
check "model folder created" test -s a/sub/dir/m.tfm
check "foreign temp-like file kept" test -e a/ck/report.tmp.csv

# Resuming needs the same seed and batch budget (the data position means
# nothing otherwise).
sed 's/"max_steps": 40/"max_steps": 60/' mini.json >longer.json
(cd a && expect_exit 1 "resume with another seed" -- "$TFM" train ../longer.json -q --seed 4)
check "resume seed message" grep -q "was trained with train.seed 3 and train.batch_tokens 600, the config says 4 and 600 (use --restart to start over)" "$T/err"
sed 's/"vocab_size": 500/"vocab_size": 400/' longer.json >vocab400.json
(cd a && expect_exit 1 "resume with another vocab_size" -- "$TFM" train ../vocab400.json -q)
expect_err_line "resume vocab_size message" "tfm: ck/last.tfm: was trained with data.vocab_size 500, the config says 400 (use --restart to start over)"

# A vocab.txt in out_dir that tfm did not write is not overwritten.
mkdir v && mkdir v/ck && echo "my notes" >v/ck/vocab.txt
(cd v && expect_exit 1 "foreign vocab.txt" -- "$TFM" train ../mini.json -q)
check "foreign vocab.txt kept" test "$(cat v/ck/vocab.txt)" = "my notes"

# A train.model that is not a regular file is refused before training, and
# kept; a symlink is followed (the link stays a link).
mkfifo fifo.tfm
sed 's|"model": "model.tfm"|"model": "../fifo.tfm"|' mini.json >fifo.json
mkdir m
(cd m && expect_exit 1 "train.model is a FIFO" -- timeout 60 "$TFM" train ../fifo.json -q)
expect_err_line "train.model FIFO message" "tfm: ../fifo.tfm: exists and is not a regular file; not replacing it"
check "the FIFO is still a FIFO" test -p fifo.tfm
mkdir -p n/ck && mkfifo n/ck/log.jsonl
(cd n && expect_exit 1 "log.jsonl is a FIFO" -- timeout 60 "$TFM" train ../mini.json -q)
expect_err_line "log.jsonl FIFO message" "tfm: ck/log.jsonl: exists and is not a regular file; not replacing it"
expect_exit 1 "info on a FIFO" -- timeout 20 "$TFM" info fifo.tfm
expect_err_line "info on a FIFO message" "tfm: fifo.tfm: not a regular file"
check "refused before training" test ! -e m/ck/last.tfm
expect_exit 1 "average -o FIFO" -- timeout 20 "$TFM" average -o fifo.tfm a/model.tfm a/model.tfm
expect_err_line "average -o FIFO message" "tfm: fifo.tfm: exists and is not a regular file; not replacing it"
: >linked.tfm
ln -s linked.tfm link.tfm
expect_exit 0 "average -o symlink" -- "$TFM" average -o link.tfm a/model.tfm a/model.tfm
check "the model symlink is still a link" test -L link.tfm
check "its target holds the model" test -s linked.tfm

# A model too big for this machine (~830 GB to train) is refused up front
# with one line, before anything big is allocated, instead of an OOM kill,
# and before a vocabulary is learned (which may take minutes).
sed 's/"d_model": 32,/"d_model": 65536,/' mini.json >huge.json
mkdir o
(cd o && expect_exit 1 "model too big to train" -- "$TFM" train ../huge.json -q)
check "memory message" grep -Eq '^tfm: training this model \(at least 51575062656 parameters, batches of 600 tokens\) needs about [0-9.]+ GB of memory, this machine has [0-9.]+ GB available \(lower model.d_model, model.d_ff, the layers, data.vocab_size or train.batch_tokens\)$' "$T/err"
check "nothing trained" test ! -e o/ck/last.tfm
check "refused before the vocabulary is learned" test ! -e o/ck/vocab.txt

# Early stopping: a learning rate of ~0 never improves the validation loss, so
# training stops after `patience` validations without improvement.
sed 's/"valid_every": 40/"valid_every": 5, "patience": 2/; s/"schedule": "inverse_sqrt"/"schedule": "constant"/; s/"peak": 0.003/"peak": 1e-30/' mini.json >patience.json
mkdir f
(cd f && "$TFM" train ../patience.json >"$T/out" 2>"$T/err")
check "early stopping exits 0" test $? = 0
check "early stopping is announced" grep -q "early stopping: no improvement in 2 validations" "$T/err"
check "early stopping at step 15" grep -q "step 15: valid" "$T/err"
(cd f && expect_exit 0 "rerun after early stopping" -- "$TFM" train ../patience.json -q)
(cd f && "$TFM" info ck/last.tfm >"$T/out")
check "rerun after early stopping trains no further" grep -q "step:        15 " "$T/out"

# Damaged model files: one clear line, exit 1.
head -c 1000 a/model.tfm >trunc.tfm
expect_exit 1 "truncated model" -- "$TFM" info trunc.tfm
expect_err_line "truncated model message" "tfm: trunc.tfm: truncated file"
: >empty.tfm
expect_exit 1 "empty model" -- "$TFM" info empty.tfm
expect_err_line "empty model message" "tfm: empty.tfm: not a tfm model file (bad magic)"
head -c 12 a/model.tfm >short.tfm
expect_exit 1 "model cut inside the header" -- "$TFM" info short.tfm
expect_err_line "a cut header is a truncated file" "tfm: short.tfm: truncated file"
cp a/model.tfm hflags.tfm
printf '\x07' | dd of=hflags.tfm bs=1 seek=12 conv=notrunc status=none
expect_exit 1 "unknown header flags" -- "$TFM" info hflags.tfm
expect_err_line "unknown header flags message" "tfm: hflags.tfm: unknown header flags 0x7 (damaged file)"
cp a/model.tfm flip.tfm
printf '\x55' | dd of=flip.tfm bs=1 seek=3000 conv=notrunc status=none
expect_exit 1 "bit-flipped model" -- "$TFM" info flip.tfm
expect_err_line "bit-flip message" "tfm: flip.tfm: checksum mismatch (corrupted file)"
# A damaged last.tfm: the message says how to go on.
mkdir dmg && cp -r a/ck dmg/ck && cp flip.tfm dmg/ck/last.tfm
(cd dmg && expect_exit 1 "damaged last.tfm" -- "$TFM" train ../mini.json -q)
expect_err_line "damaged last.tfm message" "tfm: ck/last.tfm: checksum mismatch (corrupted file); \
copy a ckpt.STEP.tfm of ck over it to resume from there, or start over with --restart"
# train.model and average -o replace tfm models only (or empty files).
echo "my notes" >notes.txt
sed 's|"model": "model.tfm"|"model": "../notes.txt"|' mini.json >notes.json
mkdir nt
(cd nt && expect_exit 1 "train.model is a text file" -- "$TFM" train ../notes.json -q)
expect_err_line "train.model text file message" "tfm: ../notes.txt: exists and is not a tfm model; not replacing it"
check "refused before training" test ! -e nt/ck/last.tfm
# ... and --restart removes nothing when it is refused
mkdir nt2 && cp -r a/ck nt2/ck
(cd nt2 && expect_exit 1 "--restart with a text file as train.model" -- "$TFM" train ../notes.json -q --restart)
check "a refused --restart keeps the checkpoints" test -e nt2/ck/last.tfm
expect_exit 1 "average -o a text file" -- "$TFM" average -o notes.txt a/model.tfm b/model.tfm
check "the text file is kept" test "$(cat notes.txt)" = "my notes"
: >empty_out.tfm
expect_exit 0 "average -o an empty file" -- "$TFM" average -o empty_out.tfm a/model.tfm b/model.tfm
expect_exit 1 "empty model path" -- "$TFM" info ""
expect_err_line "empty model path message" "tfm: model path is empty"
expect_exit 1 "missing model" -- "$TFM" info nope.tfm
expect_err_line "missing model message" "tfm: nope.tfm: cannot open: No such file or directory"

# Usage and config errors.
expect_exit 2 "train without config" -- "$TFM" train
expect_exit 2 "train unknown option" -- "$TFM" train mini.json --bogus
expect_exit 2 "train bad --threads" -- "$TFM" train mini.json --threads=-3
expect_exit 2 "train --threads needs a value" -- "$TFM" train mini.json --threads
expect_exit 1 "train missing config" -- "$TFM" train missing.json
expect_err_line "missing config message" "tfm: missing.json: cannot open: No such file or directory"
expect_exit 0 "train --help" -- "$TFM" train --help
expect_exit 0 "help train" -- "$TFM" help train
expect_exit 0 "dry run" -- "$TFM" train mini.json --dry-run --seed=9
check "dry run prints the seed override" grep -q '"seed": 9' "$T/out"
expect_exit 2 "--seed over 2^53-1" -- "$TFM" train mini.json --dry-run --seed 9007199254740993
expect_err_line "--seed names its range" "tfm: train: --seed: expected an integer in [0, 9007199254740991], got '9007199254740993'"

# Data that leaves nothing to train or validate on.
: >empty.de
: >empty.en
sed 's|"valid_src": "valid.de", "valid_tgt": "valid.en"|"valid_src": "empty.de", "valid_tgt": "empty.en"|' mini.json >novalid.json
expect_exit 1 "empty validation set" -- "$TFM" train novalid.json -q
expect_err_line "empty validation message" "tfm: empty.de: no usable validation pairs (0 lines: 0 empty, 0 over data.max_len 40 tokens, 0 over train.batch_tokens 600)"
sed 's/"max_len": 40/"max_len": 1/' mini.json >maxlen1.json
expect_exit 1 "every pair over max_len" -- "$TFM" train maxlen1.json -q
expect_err_line "the message names the key that skipped them" "tfm: train.de: no usable training pairs (400 lines: 0 empty, 400 over data.max_len 1 tokens, 0 over train.batch_tokens 600)"
sed 's|"train_src": "train.de", "train_tgt": "train.en"|"train_src": "valid.de", "train_tgt": "train.en"|' mini.json >mismatch.json
expect_exit 1 "line counts differ" -- "$TFM" train mismatch.json -q
expect_err_line "line count message" "tfm: valid.de has 40 lines, train.en has 400 lines"

# An out_dir that cannot be created.
sed 's|"out_dir": "ck"|"out_dir": "/proc/nope/ck"|' mini.json >badout.json
expect_exit 1 "unwritable out_dir" -- "$TFM" train badout.json -q

# Diverging training (a huge learning rate) stops with a numeric error, and
# last.tfm (saved before) still loads.
sed 's/"peak": 0.003/"peak": 1e30/; s/"warmup": 10/"warmup": 1/' mini.json >nan.json
mkdir d
(cd d && expect_exit 1 "NaN stops training" -- "$TFM" train ../nan.json -q)
check "NaN message names the step" grep -Eq '^tfm: step [0-9]+: (loss|gradient) is (NaN|Inf)' "$T/err"
# It diverges before the first save (save_every 5): the message must not
# promise a last.tfm that does not exist.
check "no last.tfm before the first save" test ! -e d/ck/last.tfm
check "NaN message says nothing was saved" grep -Eq '; stopping \(no checkpoint was saved yet\)$' "$T/err"
# Resumed from a good last.tfm, the same divergence says that file is kept.
mkdir d2
(cd d2 && "$TFM" train ../mini.json -q >/dev/null 2>&1)
sed 's/"max_steps": 40/"max_steps": 80/' nan.json >nan80.json
(cd d2 && expect_exit 1 "NaN after resuming" -- "$TFM" train ../nan80.json -q)
check "NaN message names last.tfm when there is one" grep -Eq '; stopping \(last.tfm keeps the last good state\)$' "$T/err"

# The data must survive a config that names it as an output.
sed 's|"model": "model.tfm"|"model": "train.de"|' mini.json >clobber.json
cp train.de train.de.orig
expect_exit 1 "train.model is the training source" -- "$TFM" train clobber.json -q
expect_err_line "train.model is the source message" \
    "tfm: clobber.json: train.model: 'train.de' is data.train_src: training would overwrite it"
check "the training source is untouched" cmp -s train.de train.de.orig
mkdir -p inout && cp valid.en inout/log.jsonl
sed 's|"valid_tgt": "valid.en"|"valid_tgt": "inout/log.jsonl"|; s|"out_dir": "ck"|"out_dir": "inout"|' \
    mini.json >inout.json
expect_exit 1 "a data file named like an out_dir file" -- "$TFM" train inout.json -q
expect_err_line "data in out_dir message" "tfm: inout.json: data.valid_tgt: 'inout/log.jsonl' is in \
train.out_dir under a name tfm train writes; move it or choose another out_dir"
check "the data file in out_dir is untouched" cmp -s inout/log.jsonl valid.en
# Saves follow symlinks: a train.model that links to the data is refused too.
ln -s train.de data_link.tfm
sed 's|"model": "model.tfm"|"model": "data_link.tfm"|' mini.json >data_link.json
expect_exit 1 "train.model links to the training source" -- "$TFM" train data_link.json -q
check "the linked training source is untouched" cmp -s train.de train.de.orig
expect_exit 2 "average -o onto an input" -- "$TFM" average -o a/ck/best.tfm a/ck/last.tfm a/ck/best.tfm
# A train.model named like out_dir's own files is refused when out_dir is new
# too (it is checked again once made), and the new folder is removed.
for own in last.tfm lock; do
    sed "s|\"model\": \"model.tfm\"|\"model\": \"fresh/$own\"|; s|\"out_dir\": \"ck\"|\"out_dir\": \"fresh\"|" \
        mini.json >fresh.json
    expect_exit 1 "train.model fresh/$own in a new out_dir" -- "$TFM" train fresh.json -q
    expect_err_line "fresh/$own message" "tfm: fresh.json: train.model: 'fresh/$own' is a file \
that tfm train keeps in train.out_dir; choose another name"
    check "the new out_dir is removed again" test ! -e fresh
done
sed 's|"model": "model.tfm"|"model": "n1/n2/ck/last.tfm"|; s|"out_dir": "ck"|"out_dir": "n1/n2/ck"|' \
    mini.json >nested.json
expect_exit 1 "train.model in a new nested out_dir" -- "$TFM" train nested.json -q
check "the new nested folders are all removed" test ! -e n1
# The config file itself is an input: one named log.jsonl in out_dir is kept.
mkdir cfgdir && sed 's|"out_dir": "ck"|"out_dir": "."|; s|"train\.|"../train.|g; s|"valid\.|"../valid.|g' \
    mini.json >cfgdir/log.jsonl && cp cfgdir/log.jsonl cfg.orig
(cd cfgdir && expect_exit 1 "the config is named like an out_dir file" -- "$TFM" train log.jsonl -q)
expect_err_line "config in out_dir message" "tfm: log.jsonl: the config file: 'log.jsonl' is in \
train.out_dir under a name tfm train writes; move it or choose another out_dir"
check "the config file is untouched" cmp -s cfgdir/log.jsonl cfg.orig

# train.weight_decay_scope: one step at a constant rate, decay 1 against none.
# "matrices" changes the matrices and leaves every vector (rows 1: biases and
# gains) the same bit for bit; "all" changes the gains (1 at the start) too.
for run in "wd0 0 all" "wdall 1 all" "wdmat 1 matrices"; do
    set -- $run
    mkdir "$1"
    (cd "$1" && expect_exit 0 "one step, weight decay $2 ($3)" -- "$TFM" train ../mini.json -q \
        --set train.max_steps=1 --set train.lr.schedule=constant --set train.lr.peak=0.01 \
        --set train.weight_decay="$2" --set train.weight_decay_scope="$3")
done
python3 "$ROOT/tests/model_diff.py" --changed wd0/ck/last.tfm wdmat/ck/last.tfm >"$T/wdmat.changed"
python3 "$ROOT/tests/model_diff.py" --changed wd0/ck/last.tfm wdall/ck/last.tfm >"$T/wdall.changed"
check "weight_decay_scope matrices: the matrices decayed" grep -q '^emb.shared [0-9]* [0-9]*$' "$T/wdmat.changed"
check "weight_decay_scope matrices: no vector decayed" not grep -q ' 1 [0-9]*$' "$T/wdmat.changed"
check "weight_decay_scope all: the gains decayed too" grep -q '^enc.0.ln1.g 1 [0-9]*$' "$T/wdall.changed"

cli_summary
