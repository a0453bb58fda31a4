#!/usr/bin/env bash
# cli_spm.sh: `tfm bpe encode|decode -v FILE.model` against sentencepiece's
# own spm_encode and spm_decode (Debian's `sentencepiece`), on models
# spm_train makes here: unigram and bpe, with and without byte fallback, and
# the options that change encoding (identity rules, no dummy prefix, extra
# whitespace kept, user-defined and control symbols, a custom unk surface).
# Piece for piece and id for id on the shipped test sets, hostile text and
# long lines; decoding equal on their pieces and on random piece sequences;
# damaged and unsupported models refused with one line.
cd "$(dirname "$0")/.." || exit 1
. tests/cli_lib.sh

if ! command -v spm_train >/dev/null 2>&1 || ! command -v spm_encode >/dev/null 2>&1; then
    echo "cli_spm: spm_train/spm_encode not found (apt-get install sentencepiece); skipped" >&2
    cli_summary
    exit
fi

# The training text: the first 4000 lines of each side, joint.
{ gzip -dc data/train.de.gz | head -n 4000; gzip -dc data/train.en.gz | head -n 4000; } >"$T/train.txt"
train() {   # train NAME OPTIONS...
    local name=$1; shift
    spm_train --input="$T/train.txt" --model_prefix="$T/$name" --vocab_size=600 \
        --minloglevel=2 "$@" >/dev/null 2>&1
    check "spm_train $name" test -s "$T/$name.model"
}
train uni --model_type=unigram
train uni_bytes --model_type=unigram --byte_fallback=true
train bpe --model_type=bpe
train bpe_bytes --model_type=bpe --byte_fallback=true
train uni_identity --model_type=unigram --normalization_rule_name=identity
train bpe_nodummy --model_type=bpe --add_dummy_prefix=false --byte_fallback=true
train uni_keepws --model_type=unigram --remove_extra_whitespaces=false
train bpe_keepws --model_type=bpe --remove_extra_whitespaces=false
train uni_symbols --model_type=unigram --user_defined_symbols='<sep>,ab,▁the,漢' \
    --control_symbols='<c1>,<c2>' --pad_id=3 --unk_surface='@@'
train bpe_symbols --model_type=bpe --user_defined_symbols='<sep>,ab,▁the,漢' \
    --control_symbols='<c1>,<c2>' --byte_fallback=true
train uni_small --model_type=unigram --vocab_size=200 --character_coverage=0.98
train bpe_nfkc_cf --model_type=bpe --normalization_rule_name=nmt_nfkc_cf
MODELS="uni uni_bytes bpe bpe_bytes uni_identity bpe_nodummy uni_keepws bpe_keepws uni_symbols
        bpe_symbols uni_small bpe_nfkc_cf"

# The texts: the shipped test sets (tfm reads the gzip itself), hostile text
# (tests/data/spm_hostile.txt, scripts/make_spm_hostile.py) and long lines.
gzip -dc data/test_2016_flickr.de.gz data/test_2016_flickr.en.gz >"$T/test.txt"
long=$(gzip -dc data/val.de.gz | head -n 400 | tr '\n' ' ')
{
    printf '%s\n' "$long$long$long$long$long"                 # ~200 KB of sentences
    head -c 300000 /dev/zero | tr '\0' ' '; echo              # a line of spaces
    head -c 100000 /dev/zero | tr '\0' 'a'; echo              # one long word
    printf '\t \t  \x01 \xff\xfe  \n'
} >"$T/long.txt"
cat tests/data/spm_hostile.txt "$T/long.txt" >"$T/all.txt"

# agree MODEL WHAT INPUT TOOL [--ids]: sentencepiece's TOOL (spm_encode or
# spm_decode) and tfm bpe encode/decode give the same output for INPUT;
# sentencepiece's is left in $T/want.TOOL[--ids] for the next comparison.
agree() {
    local m=$1 what=$2 in=$3 tool=$4 ids=${5:-} fmt="" verb=encode
    [ "$tool" = spm_decode ] && verb=decode
    [ -n "$ids" ] && { [ $verb = encode ] && fmt=--output_format=id || fmt=--input_format=id; }
    $tool --model="$T/$m.model" $fmt <"$in" >"$T/want.$tool$ids"
    "$TFM" bpe $verb $ids -v "$T/$m.model" <"$in" >"$T/got"
    check "$m: $what" cmp -s "$T/got" "$T/want.$tool$ids"
}

for m in $MODELS; do
    [ -s "$T/$m.model" ] || continue
    spm_encode --model="$T/$m.model" <"$T/test.txt" >"$T/want"
    "$TFM" bpe encode -v "$T/$m.model" <data/test_2016_flickr.de.gz >"$T/got.de" &&
        "$TFM" bpe encode -v "$T/$m.model" <data/test_2016_flickr.en.gz >>"$T/got.de"
    check "$m: test_2016_flickr pieces equal spm_encode's" cmp -s "$T/got.de" "$T/want"
    agree $m "hostile and long lines: pieces equal spm_encode's" "$T/all.txt" spm_encode
    agree $m "hostile and long lines: ids equal spm_encode's" "$T/all.txt" spm_encode --ids
    agree $m "decoding the pieces equals spm_decode's" "$T/want.spm_encode" spm_decode
    agree $m "decoding the ids equals spm_decode's" "$T/want.spm_encode--ids" spm_decode --ids
    # Random piece sequences: any piece of the vocabulary (but <0x0A>, whose
    # newline tfm refuses to print), control pieces, byte pieces that make
    # no character, unknown text, runs of spaces between pieces.
    awk -v seed=61 'BEGIN { srand(seed); FS = "\t"
            split("<unk> <s> </s> <pad> <c1> ▁ ▁▁ xyz漢 <0xC3> <0xA4> <0xFF> <0xE2> <0x82> <0xAC> <0x41>", extra, " ") }
        $1 != "<0x0A>" { v[n++] = $1 }
        END { for (l = 0; l < 300; l++) { s = ""; k = int(rand() * 25)
                for (i = 0; i < k; i++) { p = rand() < 0.3 ? extra[1 + int(rand() * 15)] : v[int(rand() * n)]
                    s = s (i ? (rand() < 0.1 ? "  " : " ") : "") p }
                print s } }' "$T/$m.vocab" >"$T/random"
    agree $m "decoding random pieces equals spm_decode's" "$T/random" spm_decode
done

# The file is recognized by its content, whatever its name; tfm's own
# vocabulary named .model is still tfm's.
cp "$T/uni.model" "$T/vocab.txt"
printf 'ein Hund.\n' >"$T/one"
"$TFM" bpe encode -v "$T/vocab.txt" <"$T/one" >"$T/got"
spm_encode --model="$T/uni.model" <"$T/one" >"$T/want"
check "a .model named vocab.txt is read as one" cmp -s "$T/got" "$T/want"
"$TFM" bpe learn -s 300 -o "$T/tfm.model" "$T/one" >/dev/null 2>&1
"$TFM" bpe encode -v "$T/tfm.model" <"$T/one" >"$T/got"
check "a tfm vocabulary named .model is tfm's" test "$(cat "$T/got")" != "$(cat "$T/want")" -a -s "$T/got"

# Damaged files: truncated anywhere, a byte changed, refused with one line
# (or, where the cut leaves a smaller well-formed model, read: never a crash).
size=$(stat -c %s "$T/uni_bytes.model")
bad=0
for cut in 1 2 3 5 8 20 100 1000 5000 $((size / 2)) $((size - 300)) $((size - 7)) $((size - 1)); do
    head -c "$cut" "$T/uni_bytes.model" >"$T/cut.model"
    "$TFM" bpe encode -v "$T/cut.model" <"$T/one" >/dev/null 2>"$T/err"
    rc=$?
    if [ $rc != 1 ] || [ "$(wc -l <"$T/err")" != 1 ]; then bad=$((bad + 1)); echo "  cut $cut: exit $rc: $(cat "$T/err")" >&2; fi
done
check "truncated models are refused with one line" test $bad = 0
head -c $((size - 1)) "$T/uni_bytes.model" >"$T/cut.model"
expect_exit 1 "a model cut by one byte" -- "$TFM" bpe encode -v "$T/cut.model"
expect_err_line "its message" "tfm: $T/cut.model: damaged SentencePiece model (truncated or not a protobuf)"
: >"$T/empty.model"
expect_exit 1 "an empty file" -- "$TFM" bpe encode -v "$T/empty.model"
expect_err_line "its message" "tfm: $T/empty.model: line 1: unexpected end of file"
# the first piece's length byte made larger: its fields run into the next
cp "$T/uni_bytes.model" "$T/flip.model"
printf '\177' | dd of="$T/flip.model" bs=1 seek=1 conv=notrunc 2>/dev/null
expect_exit 1 "a piece whose length is wrong" -- "$TFM" bpe encode -v "$T/flip.model"
expect_err_line "its message" "tfm: $T/flip.model: damaged SentencePiece model (truncated or not a protobuf)"

# Unsupported model types are refused by name, never encoded otherwise.
spm_train --input="$T/train.txt" --model_prefix="$T/word" --vocab_size=600 --model_type=word \
    --minloglevel=2 >/dev/null 2>&1
expect_exit 1 "a word model" -- "$TFM" bpe encode -v "$T/word.model"
expect_err_line "its message" "tfm: $T/word.model: SentencePiece model type word is not supported (only unigram and bpe)"
spm_train --input="$T/train.txt" --model_prefix="$T/char" --vocab_size=200 --model_type=char \
    --minloglevel=2 >/dev/null 2>&1
expect_exit 1 "a char model" -- "$TFM" bpe encode -v "$T/char.model"
expect_err_line "its message" "tfm: $T/char.model: SentencePiece model type char is not supported (only unigram and bpe)"
spm_train --input="$T/train.txt" --model_prefix="$T/suffix" --vocab_size=300 \
    --treat_whitespace_as_suffix=true --minloglevel=2 >/dev/null 2>&1
expect_exit 1 "whitespace as suffix" -- "$TFM" bpe encode -v "$T/suffix.model"
expect_err_line "its message" "tfm: $T/suffix.model: SentencePiece option treat_whitespace_as_suffix is not supported"

# Decoding errors: ids out of range or not numbers.
printf '5 600000\n' >"$T/ids"
expect_exit 1 "an id out of range" -- sh -c "\"$TFM\" bpe decode --ids -v \"$T/uni.model\" <\"$T/ids\""
expect_err_line "its message" "tfm: stdin: line 1: '600000' is not an id below 600"
printf '<0x0A>\n' >"$T/nl"
expect_exit 1 "pieces that decode to a newline" -- sh -c "\"$TFM\" bpe decode -v \"$T/uni_bytes.model\" <\"$T/nl\""
expect_err_line "its message" "tfm: stdin: line 1: the pieces decode to a newline, which one output line cannot hold"

# A SentencePiece model as data.vocab: tfm trains on its pieces (ids 4 + the
# model's own, after tfm's four specials), keeps the .model inside the model
# file, says which kind it is, decodes through it, and resumes bit for bit.
MINI=$PWD/tests/data/mini
mkdir -p "$T/tr/a" "$T/tr/b" "$T/tr/c"
cat "$MINI/train.de" "$MINI/train.en" >"$T/tr/both"
spm_train --input="$T/tr/both" --model_prefix="$T/tr/sp" --vocab_size=500 --byte_fallback=true \
    --minloglevel=2 >/dev/null 2>&1
spm_train --input="$T/tr/both" --model_prefix="$T/tr/spb" --vocab_size=400 --model_type=bpe \
    --minloglevel=2 >/dev/null 2>&1
sed "s|\"train.de\"|\"$MINI/train.de\"|; s|\"train.en\"|\"$MINI/train.en\"|;
     s|\"valid.de\"|\"$MINI/valid.de\"|; s|\"valid.en\"|\"$MINI/valid.en\"|;
     s|\"vocab_size\": 500,|\"vocab\": \"sp.model\",|" "$MINI/mini.json" >"$T/tr/spm.json"
(cd "$T/tr/a" && expect_exit 0 "training with a SentencePiece vocabulary" -- "$TFM" train ../spm.json -q)
(cd "$T/tr/a" && expect_exit 0 "tfm info on it" -- "$TFM" info model.tfm)
check "info names the vocabulary's kind" grep -qx 'tokenizer:   SentencePiece unigram' "$T/out"
check "info: 4 specials + the model's 500 pieces" grep -qx 'vocabulary:  504 tokens' "$T/out"
"$TFM" info --vocab "$T/tr/a/model.tfm" >"$T/tr/inside.model"
check "the model file keeps the .model itself" cmp -s "$T/tr/inside.model" "$T/tr/sp.model"
(cd "$T/tr/b" && TFM_TEST_SIGNAL_AT_STEP=13 expect_exit 143 "SIGTERM at step 13" -- "$TFM" train ../spm.json -q)
(cd "$T/tr/b" && expect_exit 0 "the resumed run finishes" -- "$TFM" train ../spm.json -q)
check "the resumed model equals the uninterrupted one" cmp -s "$T/tr/a/model.tfm" "$T/tr/b/model.tfm"
(cd "$T/tr/a" && expect_exit 0 "translate with it" -- "$TFM" translate -m model.tfm -i "$MINI/valid.de" -q)
check "a line out per line in" test "$(wc -l <"$T/out")" = "$(wc -l <"$MINI/valid.de")"
# through the model file, ids are the model's + 4, text as spm_decode writes it
# (tfm's reader for a model file: valid UTF-8, so the test sets)
spm_encode --model="$T/tr/sp.model" --output_format=id <"$T/test.txt" >"$T/want_ids"
"$TFM" bpe encode --ids -v "$T/tr/a/model.tfm" <"$T/test.txt" |
    awk '{ for (i = 1; i <= NF; i++) $i -= 4; print }' >"$T/got_ids"
check "the model's ids are spm_encode's + 4" cmp -s "$T/got_ids" "$T/want_ids"
spm_decode --model="$T/tr/sp.model" --input_format=id <"$T/want_ids" >"$T/want_text"
awk '{ for (i = 1; i <= NF; i++) $i += 4; print }' "$T/want_ids" |
    "$TFM" bpe decode --ids -v "$T/tr/a/model.tfm" >"$T/got_text"
check "decoding through the model file equals spm_decode" cmp -s "$T/got_text" "$T/want_text"
(cd "$T/tr/c" && expect_exit 0 "a bpe-type SentencePiece vocabulary trains" -- "$TFM" train ../spm.json -q \
    --set data.vocab="$T/tr/spb.model" --set train.max_steps=3)
(cd "$T/tr/c" && "$TFM" info model.tfm >"$T/out")
check "info: SentencePiece bpe" grep -qx 'tokenizer:   SentencePiece bpe' "$T/out"
# chunks of 150 pairs: each read and encoded on the reader thread
mkdir -p "$T/tr/d"
(cd "$T/tr/d" && expect_exit 0 "in chunks, encoded on the reader thread" -- "$TFM" train ../spm.json -q \
    --set data.shuffle_buffer=150 --set train.max_steps=12)
(cd "$T/tr/c" && expect_exit 1 "BPE-dropout with a SentencePiece vocabulary" -- "$TFM" train ../spm.json -q --restart \
    --set data.bpe_dropout=0.1)
expect_err_line "its message" "tfm: data.bpe_dropout: BPE-dropout needs tfm's own BPE vocabulary; data.vocab ../sp.model is a SentencePiece model"
# model.output_vocab "target": the output layer scores the pieces the targets
# use and every piece of one character; other pieces are spelled in those
mkdir -p "$T/tr/e" "$T/tr/f"
for dir in e f; do
    (cd "$T/tr/$dir" && expect_exit 0 "output_vocab target with a SentencePiece vocabulary ($dir)" -- \
        "$TFM" train ../spm.json -q --set model.output_vocab=target --set data.shuffle_buffer=150 \
        --set train.max_steps=12)
done
check "output_vocab target: the same model twice" cmp -s "$T/tr/e/model.tfm" "$T/tr/f/model.tfm"
"$TFM" info "$T/tr/e/model.tfm" >"$T/out"
check "info: fewer outputs than the vocabulary's 504 pieces" \
    awk '/^vocabulary:  504 tokens, [0-9]+ of them outputs/ { found = $4 + 0 < 504 && $4 + 0 > 50 } END { exit !found }' "$T/out"
(cd "$T/tr/e" && expect_exit 0 "it translates" -- "$TFM" translate -m model.tfm -i "$MINI/valid.de" -q)
check "a line out per line in (output_vocab target)" test "$(wc -l <"$T/out")" = "$(wc -l <"$MINI/valid.de")"
# a reference whose pieces the output layer does not score is spelled in those it does
printf 'Zwei junge Männer\n' >"$T/src1"
printf 'Xylophonists quizzically juxtaposed\n' >"$T/ref1"
(cd "$T/tr/e" && expect_exit 0 "--score-reference with pieces outside the output layer" -- \
    "$TFM" translate -m model.tfm -i "$T/src1" --score-reference "$T/ref1" -q)
check "its score is a finite number" awk 'NR == 1 && $1 ~ /^-?[0-9.]+(e-?[0-9]+)?$/ { ok = 1 } END { exit !ok }' "$T/out"

cli_summary
