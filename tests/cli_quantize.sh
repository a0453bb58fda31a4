# cli_quantize.sh: `tfm quantize` and `tfm translate --precision int8`
# through the real binary: the int8 file (smaller, `tfm info` says int8,
# quantizing it again gives the same bytes, damaged copies refused), int8
# translation close to float32 and the same bits whatever the batch size,
# the thread count or the kernel (TFM_INT8_KERNEL forces each one).
. "$(dirname "$0")/cli_lib.sh"
MINI=$PWD/tests/data/mini
cd "$T" || exit 1
"$TFM" train "$MINI/mini.json" -q >/dev/null 2>&1 || { cli_fail "training the test model"; cli_summary; exit 1; }
head -n 40 "$MINI/valid.de" >in.de

expect_exit 0 "quantize" -- "$TFM" quantize -o q.tfm model.tfm
check "the int8 file is smaller" test "$(wc -c <q.tfm)" -lt "$(wc -c <model.tfm)"
expect_exit 0 "info on the int8 model" -- "$TFM" info q.tfm
check "info says int8" grep -q '^precision:   int8 ' "$T/out"
expect_exit 0 "quantize the int8 model again" -- "$TFM" quantize -o q2.tfm q.tfm
check "quantizing twice changes nothing" cmp -s q.tfm q2.tfm
expect_exit 2 "quantize onto its input" -- "$TFM" quantize -o q.tfm q.tfm
expect_exit 2 "quantize without -o" -- "$TFM" quantize q.tfm
expect_exit 1 "quantize a missing model" -- "$TFM" quantize -o x.tfm nope.tfm
expect_exit 2 "quantize with a misspelt option" -- "$TFM" quantize --outptu x.tfm q.tfm
expect_err_line "its hint" "tfm: quantize: unknown option '--outptu' (did you mean --output?)"

# --nbest prints the scores: equal outputs are equal bits, not only words
run() { "$TFM" translate -q -b 4 --nbest 2 "$@" <in.de; }
run -m model.tfm >f32.txt
run -m model.tfm --precision int8 >int8.txt
run -m q.tfm >file.txt
check "an int8 file translates as --precision int8 does" cmp -s int8.txt file.txt
check "int8 differs from fp32 somewhere (the products are int8)" not cmp -s f32.txt int8.txt
same=$(paste -d'\t' <(awk -F' [|][|][|] ' '$1 != p { print $2; p = $1 }' f32.txt) \
                    <(awk -F' [|][|][|] ' '$1 != p { print $2; p = $1 }' int8.txt) |
       awk -F'\t' '$1 == $2 { n++ } END { print n + 0 }')
check "int8 and fp32 agree on most lines ($same of 40)" test "$same" -ge 28
run -m q.tfm --batch-size 1 >b1.txt
check "int8: the same bits at batch size 1" cmp -s file.txt b1.txt
run -m q.tfm --batch-size 7 --threads 1 >t1.txt
check "int8: the same bits on one thread" cmp -s file.txt t1.txt
run -m q.tfm --threads 2 >t2.txt
check "int8: the same bits on two threads" cmp -s file.txt t2.txt
for k in portable avx2 avxvnni avx512vnni; do
    TFM_INT8_KERNEL=$k "$TFM" --version >ver.txt
    if grep -q '^int8 products: none' ver.txt; then
        echo "  (int8 kernel $k: this CPU cannot run it, not tested)"
        continue
    fi
    TFM_INT8_KERNEL=$k run -m q.tfm >k.txt
    check "int8 kernel $k: the same bits" cmp -s file.txt k.txt
done
expect_exit 1 "an unknown int8 kernel" -- env TFM_INT8_KERNEL=sse9 "$TFM" translate -m q.tfm -i in.de
expect_err_line "unknown kernel message" "tfm: TFM_INT8_KERNEL=sse9: unknown (portable, avx2, avxvnni or avx512vnni)"
expect_exit 0 "an int8 model in fp32" -- "$TFM" translate -q -m q.tfm --precision fp32 -i in.de
expect_exit 2 "--precision int4" -- "$TFM" translate -m q.tfm --precision int4 -i in.de

# damaged int8 files are refused like any damaged model
size=$(wc -c <q.tfm)
head -c $((size - 5)) q.tfm >cut.tfm
expect_exit 1 "a truncated int8 model" -- "$TFM" translate -m cut.tfm -i in.de
expect_err_line "truncated message" "tfm: cut.tfm: truncated file"
cp q.tfm flip.tfm
printf '\x55' | dd of=flip.tfm bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
expect_exit 1 "a bit-flipped int8 model" -- "$TFM" translate -m flip.tfm -i in.de
expect_err_line "flipped message" "tfm: flip.tfm: checksum mismatch (corrupted file)"
echo "  (int8 and fp32 agree on $same of 40 lines)"
cli_summary
