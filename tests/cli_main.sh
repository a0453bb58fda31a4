# cli_main.sh: the top-level command line: dispatch, help, version, exit codes.
. "$(dirname "$0")/cli_lib.sh"
expect_exit 2 "no command" -- "$TFM"
expect_err_line "no command message" "tfm: missing COMMAND (see tfm --help)"
expect_exit 2 "unknown command" -- "$TFM" frobnicate
expect_err_line "unknown command message" "tfm: unknown command 'frobnicate' (see tfm --help)"
expect_exit 2 "unknown top-level option" -- "$TFM" --frobnicate
expect_exit 0 "--help" -- "$TFM" --help
cp "$T/out" "$T/help"
for c in train translate bleu bpe average info; do
    check "--help lists $c" grep -q "^  $c " "$T/help"
    expect_exit 0 "help $c" -- "$TFM" help "$c"
    expect_exit 0 "$c --help" -- "$TFM" "$c" --help
done
expect_exit 0 "help help" -- "$TFM" help help
check "help help: the overview" cmp -s "$T/out" "$T/help"
expect_exit 2 "help for an unknown command" -- "$TFM" help frobnicate
# "Did you mean": a command mistyped (every command of the table, so new
# ones are covered), an option of each command mistyped or spelled as
# Marian, fairseq or OpenNMT spell it.
for c in $(sed -n 's/^  \([a-z][a-z0-9]*\)  .*/\1/p' "$T/help"); do
    expect_exit 2 "command $c mistyped" -- "$TFM" "${c%?}"
    expect_err_line "command $c mistyped: hint" "tfm: unknown command '${c%?}' (did you mean $c?)"
done
expect_exit 2 "help for a mistyped command" -- "$TFM" help translat
expect_err_line "help for a mistyped command: hint" "tfm: unknown command 'translat' (did you mean translate?)"
expect_exit 2 "a top-level option mistyped" -- "$TFM" --versoin
expect_err_line "a top-level option mistyped: hint" "tfm: unknown option '--versoin' (did you mean --version?)"
while IFS='|' read -r args hint; do
    read -ra words <<<"$args"
    expect_exit 2 "hint for $args" -- "$TFM" "${words[@]}"
    expect_err_line "hint for $args" "tfm: ${words[0]}: unknown option '${words[-2]}' (did you mean $hint?)"
done <<'END'
translate --beam-size 5|--beam
translate --n-best 3|--nbest
translate --max-length 100|--max-len-a 0 --max-len-b N
translate --mini-batch 8|--batch-size
translate --modle x.tfm|--model
translate --path x.tfm|--model
translate -beam_size 5|--beam
translate -n_best 2|--nbest
translate -model x.tfm|--model
translate -src in.txt|--input
translate --lenpen 1.0|--alpha
translate --no-repeat-ngram-size 3|--no-repeat-ngram
train c.json --model x.tfm|--set train.model=...
train c.json --max-update 5|--set train.max_steps=N
train c.json --after-epochs 5|--set train.max_epochs=N
train c.json -config c.json|tfm train CONFIG.json
bleu a b --jsn x|--json
average --outptu x.tfm|--output
END
expect_exit 2 "bpe: an option mistyped" -- "$TFM" bpe encode --vocabb v
expect_err_line "bpe: an option mistyped: hint" "tfm: bpe encode: unknown option '--vocabb' (did you mean --vocab?)"
expect_exit 0 "--version" -- "$TFM" --version
check "--version names the BLAS kernel" grep -q "^OpenBLAS kernel: " "$T/out"
expect_exit 2 "--version with an argument" -- "$TFM" --version x
expect_err_line "--version argument message" "tfm: --version: unexpected argument 'x'"
# How OpenMP's threads wait for each other: a user's setting is kept; with
# other programs running at the start (two busy loops here) they sleep
# instead of spinning.
expect_exit 0 "--version with OMP_WAIT_POLICY set" -- env OMP_WAIT_POLICY=ACTIVE "$TFM" --version
check "a user's wait policy is kept" grep -qx "threads wait: set by OMP_WAIT_POLICY or GOMP_SPINCOUNT" "$T/out"
sh -c 'while :; do :; done' &
busy1=$!
sh -c 'while :; do :; done' &
busy2=$!
sleep 0.2
expect_exit 0 "--version on a busy machine" -- env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u TFM_REEXEC "$TFM" --version
kill "$busy1" "$busy2"
wait "$busy1" "$busy2" 2>/dev/null
check "on a busy machine the threads sleep" grep -qx "threads wait: passive, chosen by tfm (other programs were running)" "$T/out"
expect_exit 1 "info on a text file" -- "$TFM" info "$0"
expect_err_line "info on a text file message" "tfm: $0: not a tfm model file (bad magic)"
# Whatever an error quotes (an option, a path, a value), it stays one line:
# control bytes are shown as \xNN.
expect_exit 2 "an option with a newline" -- "$TFM" translate $'--a\nb'
expect_err_line "option with a newline message" "tfm: translate: unknown option '--a\x0Ab' (see tfm translate --help)"
expect_exit 2 "a value with CR and newline" -- "$TFM" bleu --tokenize $'x\r\ny' a b
expect_err_line "value with CR message" "tfm: bleu: --tokenize: expected 13a, intl, zh, char or none, got 'x\x0D\x0Ay'"
expect_exit 1 "a model path with a newline" -- "$TFM" info $'/nonexistent/a\nb.tfm'
check "the path's newline is escaped" grep -q 'a\\x0Ab.tfm' "$T/err"
expect_exit 2 "Unicode line breaks in a value" -- "$TFM" bleu --tokenize $'a\u2028b\u0085c' x y
expect_err_line "Unicode line breaks escaped" "tfm: bleu: --tokenize: expected 13a, intl, zh, char or none, got 'a\\xE2\\x80\\xA8b\\xC2\\x85c'"

# Closed standard descriptors are not reused by the files tfm opens: reading
# or writing them fails as on a closed descriptor, with one error line.
printf 'a b\n' >"$T/ref1"
"$TFM" bleu - "$T/ref1" <&- >"$T/out" 2>"$T/err"
check "bleu with stdin closed exits 1" test $? = 1
expect_err_line "bleu with stdin closed: a read error" "tfm: stdin: read error: Bad file descriptor"
"$TFM" bleu "$T/ref1" "$T/ref1" >&- 2>"$T/err"
check "bleu with stdout closed exits 1" test $? = 1
expect_err_line "bleu with stdout closed: one line, the cause" "tfm: stdout: write failed: Bad file descriptor"
"$TFM" bleu "$T/ref1" "$T/ref1" >/dev/full 2>"$T/err"
expect_err_line "bleu to a full disk: one line" "tfm: stdout: write failed: No space left on device"
cli_summary
