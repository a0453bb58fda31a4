# cli_finetune.sh: train.init (fine-tuning from a trained model) and the
# data check of a resumed run, through the real binary.
. "$(dirname "$0")/cli_lib.sh"
MINI=$PWD/tests/data/mini
cp "$MINI"/train.* "$MINI"/valid.* "$MINI"/mini.json "$T"/
cd "$T" || exit 1

# The model to start from, and a "new domain": the validation pairs.
"$TFM" train mini.json -q >/dev/null 2>&1
check "the initial model is trained" test -s model.tfm
sed 's/"train.de", "train_tgt": "train.en"/"valid.de", "train_tgt": "valid.en"/; s/"out_dir": "ck"/"out_dir": "ft"/; s/"model": "model.tfm"/"model": "ft.tfm"/; s/"max_steps": 30/"max_steps": 12/; s/"valid_every": 30/"valid_every": 4/' \
    mini.json >ft.json
sum=$("$TFM" info model.tfm >/dev/null; od -An -tx8 -j $(($(stat -c %s model.tfm) - 8)) model.tfm | tr -d ' ')

# A fine-tuning run validates the model as it came first: exactly the loss
# the initial run logged for it (same weights, same validation set).
expect_exit 0 "fine-tuning runs" -- "$TFM" train ft.json --set train.init=model.tfm
check "the run says where it starts" grep -q "^train.init: starting from $T/model.tfm (step 30 of its run; checksum $sum)$" "$T/err"
first=$(grep '"valid_loss"' ck/log.jsonl | tail -n 1 | sed 's/.*"valid_loss": \([^,]*\),.*/\1/')
step0=$(grep '"step": 0, "epoch": 1, "valid_loss"' ft/log.jsonl | sed 's/.*"valid_loss": \([^,]*\),.*/\1/')
check "step 0's loss is the initial model's, exactly" test -n "$first" -a "$first" = "$step0"
check "log.jsonl records the initial model" grep -q "^{\"step\": 0, \"epoch\": 1, \"init\": \"$T/model.tfm\", \"init_checksum\": \"$sum\"}$" ft/log.jsonl
check "the schedule starts again: lr of step 4" grep -q '"step": 4, .*"lr": 0.00120000' ft/log.jsonl
expect_exit 0 "info on the fine-tuned model" -- "$TFM" info ft.tfm
check "info: what it was initialized from" grep -q "^init:        $T/model.tfm (checksum $sum; train.init, fine-tuned from it)$" "$T/out"
check "info: step counts from 0" grep -q "^step:        12 (epoch " "$T/out"
sed 's/"vocab_size": 500, //' ft.json >ft_novs.json
expect_exit 0 "fine-tuning with a vocab_size" -- "$TFM" train ft_novs.json --set train.init=model.tfm --set train.out_dir=ft4 --set train.model=ft4.tfm --set train.max_steps=1
check "the vocabulary is the model's, data.vocab_size unused" grep -q "^train.init: the vocabulary is the model's (500 pieces); data.vocab_size 8000 is not used$" "$T/err"

# Interrupted and resumed, a fine-tuning run ends as the uninterrupted one.
mkdir u r && (cd u && "$TFM" train ../ft.json --set train.init="$T/model.tfm" -q >/dev/null 2>&1)
(cd r && TFM_TEST_SIGNAL_AT_STEP=7 expect_exit 143 "fine-tuning: SIGTERM" -- "$TFM" train ../ft.json --set train.init="$T/model.tfm" -q)
(cd r && expect_exit 0 "fine-tuning: resumed" -- "$TFM" train ../ft.json --set train.init="$T/model.tfm" -q)
check "fine-tuning: resumed model equals uninterrupted" cmp -s u/ft.tfm r/ft.tfm

# The architecture is the model's; a config key that says otherwise is refused.
expect_exit 1 "another d_model refused" -- "$TFM" train ft.json --set train.init=model.tfm --set model.d_model=64 --dry-run
expect_err_line "another d_model named" "tfm: ft.json: model.d_model: 64, the model of train.init $T/model.tfm has 32 (a model keeps its architecture: leave the key out)"
sed 's/"d_model": 32, "heads": 2, //' ft.json >ft_nodm.json
"$TFM" train ft_nodm.json --set train.init=model.tfm --dry-run >"$T/out"
check "a key left out is the model's" grep -q '"d_model": 32,' "$T/out"
expect_exit 1 "another dropout refused" -- "$TFM" train ft.json --set train.init=model.tfm --set model.dropout=0.3 --dry-run
expect_err_line "another dropout named" "tfm: ft.json: model.dropout: 0.3, the model of train.init $T/model.tfm has 0.1 (a model keeps its architecture: leave the key out)"
"$TFM" bpe learn --vocab-size 300 -o other.vocab train.de 2>/dev/null
expect_exit 1 "another vocabulary refused" -- "$TFM" train ft.json --set train.init=model.tfm --set data.vocab=other.vocab --set train.out_dir=ft2 -q
expect_err_line "another vocabulary named" "tfm: data.vocab: $T/other.vocab is not the vocabulary of the model of train.init $T/model.tfm (a fine-tuned model keeps its own: leave data.vocab out)"
check "a refused run leaves nothing" test ! -e ft2
expect_exit 0 "its own vocabulary is fine" -- "$TFM" train ft.json --set train.init=model.tfm --set data.vocab=ck/vocab.txt --set train.out_dir=ft3 --set train.model=ft3.tfm -q
expect_exit 1 "train.model over train.init refused" -- "$TFM" train ft.json --set train.init=model.tfm --set train.model=model.tfm -q
expect_err_line "train.model over train.init named" "tfm: ft.json: train.model: 'model.tfm' is train.init: training would overwrite it"
expect_exit 1 "a missing train.init" -- "$TFM" train ft.json --set train.init=nothing.tfm -q
expect_err_line "a missing train.init named" "tfm: --set train.init: cannot open $T/nothing.tfm: No such file or directory"
printf 'not a model\n' >text.tfm
expect_exit 1 "train.init not a model" -- "$TFM" train ft.json --set train.init=text.tfm -q
expect_err_line "train.init not a model named" "tfm: ft.json: train.init: $T/text.tfm: not a tfm model file (bad magic)"

# model.output_vocab "target": the model's output pieces stay; new data's
# targets that use other pieces are spelled in them (the text is the same).
sed 's/"dropout": 0.1/"dropout": 0.1, "output_vocab": "target"/; s/"out_dir": "ck"/"out_dir": "ot"/; s/"model": "model.tfm"/"model": "ot.tfm"/' mini.json >ot.json
"$TFM" train ot.json -q >/dev/null 2>&1
"$TFM" info ot.tfm >"$T/out"
outs=$(sed -n 's/^vocabulary:  500 tokens, \([0-9]*\) of them outputs.*/\1/p' "$T/out")
paste -d ' ' valid.de valid.de >new.de
sed 's/$/ Quizfrage: Jazzklub? Ökonomie ÿ/' valid.en >new.en
sed 's/"valid.de", "train_tgt": "valid.en"/"new.de", "train_tgt": "new.en"/; s/"out_dir": "ft"/"out_dir": "otf"/; s/"model": "ft.tfm"/"model": "otf.tfm"/; s/"output_vocab": "target", //' ft.json >otf.json
expect_exit 0 "output_vocab target: fine-tuning on new pieces" -- "$TFM" train otf.json --set train.init=ot.tfm -q
expect_exit 0 "info on it" -- "$TFM" info otf.tfm
check "output_vocab target: the same output pieces" grep -q "^vocabulary:  500 tokens, $outs of them outputs" "$T/out"

# Resuming checks the data: other files, sizes or contents are refused.
sed 's/"max_steps": 12/"max_steps": 20/' ft.json >ft20.json
cp valid.en valid.en.orig
echo "one more line" >>valid.en
expect_exit 1 "resume on changed data refused" -- "$TFM" train ft20.json --set train.init=model.tfm -q
expect_err_line "changed data named" "tfm: data.train_tgt: $T/valid.en has $(stat -c %s valid.en) bytes, $(stat -c %s valid.en.orig) when ft/last.tfm was saved; to train on other data, start from its model with train.init, or start over with --restart"
sed 's/^\(.\)/X/' valid.en.orig >valid.en
check "same size" test "$(stat -c %s valid.en)" = "$(stat -c %s valid.en.orig)"
expect_exit 1 "resume on same-size other data refused" -- "$TFM" train ft20.json --set train.init=model.tfm -q
expect_err_line "other contents named" "tfm: data.train_tgt: $T/valid.en changed since ft/last.tfm was saved (same size, other contents); to train on other data, start from its model with train.init, or start over with --restart"
cp valid.en.orig valid.en
cp valid.en other.en
sed 's/"train_tgt": "valid.en"/"train_tgt": "other.en"/' ft20.json >ft20o.json
expect_exit 1 "resume on another file refused" -- "$TFM" train ft20o.json --set train.init=model.tfm -q
expect_err_line "another file named" "tfm: data.train_tgt: $T/other.en is not the file the run of ft/last.tfm read ($T/valid.en); to train on other data, start from its model with train.init, or start over with --restart"
expect_exit 0 "the same data resumes" -- "$TFM" train ft20.json --set train.init=model.tfm -q

# The issue's trap: last.tfm copied alone into a new out_dir resumes (same
# data) and, with no best.tfm there, still ends with a model.
mkdir -p cp/ft && cp ft/last.tfm cp/ft/
sed 's/"max_steps": 20/"max_steps": 24/' ft20.json >ft24.json
(cd cp && "$TFM" train ../ft24.json --set train.init=../model.tfm >"$T/out" 2>"$T/err")
check "a copied last.tfm: the run ends" test $? = 0
check "a copied last.tfm: best.tfm missing said" grep -q "^ft/best.tfm is missing: the next validation's model becomes the best$" "$T/err"
check "a copied last.tfm: a model" test -s cp/ft.tfm
cli_summary
