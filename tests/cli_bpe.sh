#!/usr/bin/env bash
# cli_bpe.sh: `tfm bpe learn|encode|decode` through the real binary: round
# trips, determinism, CRLF, long lines, and the exact error lines.
cd "$(dirname "$0")/.." || exit 1
. tests/cli_lib.sh

# run_in IN CMD...: CMD with stdin from IN (expect_exit itself uses /dev/null).
run_in() { local in=$1; shift; "$@" <"$in"; }

printf 'the cat sat on the mat.\nthe dog sat on the log!\na cat and a dog, 42 times.\nGr\303\274\303\237e aus K\303\266ln: \303\274ber 100 B\303\244ren.\n' >"$T/corpus.txt"

expect_exit 0 "learn" -- "$TFM" bpe learn --vocab-size 300 -o "$T/v1" "$T/corpus.txt"
expect_exit 0 "learn --name=value" -- "$TFM" bpe learn --vocab-size=300 --output="$T/v2" "$T/corpus.txt"
check "learn is deterministic" cmp -s "$T/v1" "$T/v2"
check "vocab header" test "$(head -n 1 "$T/v1")" = "tfm-bpe 1"
expect_exit 0 "learn from two files" -- "$TFM" bpe learn -s 280 -o "$T/v3" "$T/corpus.txt" "$T/corpus.txt"
check "two files: size 280" grep -qx 'pieces 280 merges [0-9]*' "$T/v3"
run_in "$T/corpus.txt" "$TFM" bpe learn -s 300 -o "$T/v5" -
check "learn from stdin ('-') gives the same vocab" cmp -s "$T/v5" "$T/v1"

# Hostile text: space runs, tabs, leading/trailing spaces, controls, CJK, ZWJ
# emoji, combining marks, RTL, special-looking and marker-looking text.
printf '%b\n' \
    '' ' ' '   ' '  two  leading, two trailing  ' 'tabs\tand\t\tmore\t' \
    'punct!?.,;:()[]{}"'"'"'-\u2013\u2014\u2026' 'digits 0123456789 3.14 1,000,000' \
    'Gr\u00f6\u00dfe \u00dcberma\u00df \u00c4rger' '\u4e2d\u6587 \u65e5\u672c\u8a9e' \
    '\U0001F469\u200d\U0001F4BB \U0001F3F3\ufe0f\u200d\U0001F308' 'e\u0301t\u0301 a\u030a' \
    '\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627' '\x01\x1b[31mred\x1b[0m\x7f' \
    '<unk> <s> </s> <pad>' '\u2581 \u2581\u2581 a\u2581b' '<0x41> <0xE4> \\x41 back\\slash \\' \
    'inner \r cr' >"$T/hostile.txt"
check "hostile fixture has 17 lines" test "$(wc -l <"$T/hostile.txt")" = 17
for v in v1 v3; do
    run_in "$T/hostile.txt" "$TFM" bpe encode -v "$T/$v" >"$T/pieces" 2>"$T/err"
    check "encode hostile ($v)" test $? = 0 -a "$(wc -l <"$T/pieces")" = 17
    run_in "$T/pieces" "$TFM" bpe decode -v "$T/$v" >"$T/back" 2>"$T/err"
    check "decode(encode(hostile)) is identical ($v)" cmp -s "$T/back" "$T/hostile.txt"
    run_in "$T/hostile.txt" "$TFM" bpe encode -v "$T/$v" --ids >"$T/ids"
    run_in "$T/ids" "$TFM" bpe decode -v "$T/$v" --ids >"$T/back2"
    check "ids round trip ($v)" cmp -s "$T/back2" "$T/hostile.txt"
done
check "empty line -> empty line" test "$(sed -n 1p "$T/pieces")" = ""
check "pieces show the marker" grep -q '^▁the ▁cat' <(printf 'the cat\n' | "$TFM" bpe encode -v "$T/v1")
check "literal marker is spelled in bytes" \
    test "$(printf '\342\226\201\n' | "$TFM" bpe encode -v "$T/v1")" = "▁ <0xE2> <0x96> <0x81>"
check "tab is a byte piece" test "$(printf 'x\ty\n' | "$TFM" bpe encode -v "$T/v1")" = "▁ x <0x09> y"

# CRLF: the trailing \r is dropped, like the \n.
printf 'the cat\r\nthe dog\r\n' | "$TFM" bpe encode -v "$T/v1" | "$TFM" bpe decode -v "$T/v1" >"$T/crlf"
check "CRLF input decodes to LF lines" cmp -s "$T/crlf" <(printf 'the cat\nthe dog\n')
printf 'no newline at end' | "$TFM" bpe encode -v "$T/v1" | "$TFM" bpe decode -v "$T/v1" >"$T/nonl"
check "last line without newline" test "$(cat "$T/nonl")" = "no newline at end"
: >"$T/empty"
run_in "$T/empty" "$TFM" bpe encode -v "$T/v1" >"$T/out"
check "empty input -> empty output" test ! -s "$T/out"

# A 10 MB line round trips (and neither crashes nor hangs).
/usr/bin/python3 -c "import sys; sys.stdout.write(('the cat  sat\u00e4on\tlog ' * 500000)[:10000000] + '\n')" >"$T/long.txt"
run_in "$T/long.txt" "$TFM" bpe encode -v "$T/v1" >"$T/long.pieces"
run_in "$T/long.pieces" "$TFM" bpe decode -v "$T/v1" >"$T/long.back"
check "10 MB line round trips" cmp -s "$T/long.back" "$T/long.txt"

# Errors: exact lines and exit codes.
printf 'fine\nab\300\257\n' >"$T/bad.txt"
expect_exit 1 "encode invalid UTF-8" -- run_in "$T/bad.txt" "$TFM" bpe encode -v "$T/v1"
expect_err_line "encode invalid UTF-8 line" "tfm: stdin: line 2: invalid UTF-8 at byte 3"
printf 'a\000b\n' >"$T/nul.txt"
expect_exit 1 "encode NUL" -- run_in "$T/nul.txt" "$TFM" bpe encode -v "$T/v1"
expect_err_line "encode NUL line" "tfm: stdin: line 1: contains a NUL byte at byte 2"
# Endless input without a newline: NULs are refused as soon as they are
# read, and a line stops at 64 MiB, so memory stays bounded.
zeros_into() { local n=$1; shift; head -c "$n" /dev/zero | "$@"; }
for sub in encode decode; do
    expect_exit 1 "$sub 3 MB of NULs" -- zeros_into 3000000 "$TFM" bpe $sub -v "$T/v1"
    expect_err_line "$sub NULs line" "tfm: stdin: line 1: contains a NUL byte at byte 1"
    expect_exit 1 "$sub /dev/zero" -- run_in /dev/zero timeout 20 "$TFM" bpe $sub -v "$T/v1"
done
expect_exit 1 "learn 3 MB of NULs from stdin" -- zeros_into 3000000 "$TFM" bpe learn -s 300 -o "$T/v4" -
expect_err_line "learn NULs line" "tfm: stdin: line 1: contains a NUL byte at byte 1"
long_into() { { printf 'ok\n'; head -c 70000000 /dev/zero | tr '\0' a; } | "$@"; }
expect_exit 1 "encode a line over 64 MiB" -- long_into "$TFM" bpe encode -v "$T/v1"
expect_err_line "over-long line" "tfm: stdin: line 2: longer than 67108864 bytes"
check "the line before it is encoded" test "$(wc -l <"$T/out")" = 1
# Like tfm train's data files, learn's FILEs must be regular files ('-' for a pipe).
expect_exit 1 "learn from /dev/zero" -- timeout 20 "$TFM" bpe learn -s 300 -o "$T/v4" /dev/zero
expect_err_line "learn from /dev/zero line" "tfm: /dev/zero: not a regular file"
mkfifo "$T/fifo"
expect_exit 1 "learn from a FIFO" -- timeout 20 "$TFM" bpe learn -s 300 -o "$T/v4" "$T/fifo"
expect_err_line "learn from a FIFO line" "tfm: $T/fifo: not a regular file"
# Vocabularies too: a FIFO would block the open, /dev/zero never end.
expect_exit 1 "encode -v FIFO" -- timeout 20 "$TFM" bpe encode -v "$T/fifo"
expect_err_line "encode -v FIFO line" "tfm: $T/fifo: not a regular file"
expect_exit 1 "decode -v /dev/zero" -- timeout 20 "$TFM" bpe decode -v /dev/zero
expect_err_line "decode -v /dev/zero line" "tfm: /dev/zero: not a regular file"
# Byte pieces can spell "\n" or NUL; decode refuses rather than break the
# one line out per line in.
expect_exit 1 "decode to a newline" -- sh -c "printf 'a <0x0A> b\\n' | \"$TFM\" bpe decode -v \"$T/v1\""
expect_err_line "decode to a newline line" "tfm: stdin: line 1: the pieces decode to a newline, which one output line cannot hold"
expect_exit 1 "decode to NUL" -- sh -c "printf 'a\\na <0x00> b\\n' | \"$TFM\" bpe decode -v \"$T/v1\""
expect_err_line "decode to NUL line" "tfm: stdin: line 2: the pieces decode to a NUL byte, which one output line cannot hold"
# An unknown piece is quoted in the error; its escaped newline must not
# break the one error line.
printf 'abc\\x0Adef\n' >"$T/esc.pieces"
expect_exit 1 "decode an unknown piece with a newline" -- run_in "$T/esc.pieces" "$TFM" bpe decode -v "$T/v1"
expect_err_line "unknown piece line" "tfm: stdin: line 1: unknown piece 'abc\x0Adef'"
cp "$T/corpus.txt" "$T/corpus2.txt"; ln -s corpus2.txt "$T/corpus_link.txt"
expect_exit 2 "learn -o onto an input" -- "$TFM" bpe learn -s 300 -o "$T/corpus2.txt" "$T/corpus.txt" "$T/corpus2.txt"
expect_err_line "learn -o onto an input message" "tfm: bpe learn: -o '$T/corpus2.txt' is also an input file; it would be overwritten"
expect_exit 2 "learn -o onto an input through a symlink" -- "$TFM" bpe learn -s 300 -o "$T/corpus_link.txt" "$T/corpus2.txt"
check "the input is untouched" cmp -s "$T/corpus.txt" "$T/corpus2.txt"
expect_exit 1 "learn from a folder" -- "$TFM" bpe learn -s 300 -o "$T/v4" "$T"
expect_err_line "learn from a folder line" "tfm: $T: is a folder, not a file"
check "refused learns write nothing" test ! -e "$T/v4"
# Outputs: only regular files are replaced. A FIFO (or device, or folder) at
# -o is refused and left as it is; a symlink is followed, and stays a link.
mkfifo "$T/out.fifo"
expect_exit 1 "learn -o FIFO" -- timeout 20 "$TFM" bpe learn -s 300 -o "$T/out.fifo" "$T/corpus.txt"
expect_err_line "learn -o FIFO line" "tfm: $T/out.fifo: exists and is not a regular file; not replacing it"
check "the FIFO is still a FIFO" test -p "$T/out.fifo"
check "no temp file left by the refusal" test -z "$(ls "$T" | grep '\.tmp\.')"
mkdir "$T/outdir"
expect_exit 1 "learn -o folder" -- "$TFM" bpe learn -s 300 -o "$T/outdir" "$T/corpus.txt"
expect_err_line "learn -o folder line" "tfm: $T/outdir: exists and is not a regular file; not replacing it"
mkdir "$T/real" "$T/links"
cp "$T/v3" "$T/real/vocab"
ln -s ../real/vocab "$T/links/vocab"
expect_exit 0 "learn -o symlink" -- "$TFM" bpe learn -s 300 -o "$T/links/vocab" "$T/corpus.txt"
check "the symlink is still a symlink" test -L "$T/links/vocab"
check "its target holds the new vocab" cmp -s "$T/real/vocab" "$T/v1"
ln -s ../real/missing "$T/links/dangling"
expect_exit 1 "learn -o dangling symlink" -- "$TFM" bpe learn -s 300 -o "$T/links/dangling" "$T/corpus.txt"
expect_err_line "dangling symlink line" "tfm: $T/links/dangling: cannot follow the symbolic link: No such file or directory"
check "nothing created behind the dangling link" test ! -e "$T/real/missing"
ln -s ../out.fifo "$T/links/tofifo"
expect_exit 1 "learn -o symlink to a FIFO" -- timeout 20 "$TFM" bpe learn -s 300 -o "$T/links/tofifo" "$T/corpus.txt"
expect_err_line "symlink to FIFO line" "tfm: $T/links/tofifo: exists and is not a regular file; not replacing it"
check "the link to the FIFO is kept" test -L "$T/links/tofifo" -a -p "$T/out.fifo"

expect_exit 1 "learn invalid UTF-8" -- "$TFM" bpe learn -s 300 -o "$T/v4" "$T/corpus.txt" "$T/bad.txt"
expect_err_line "learn invalid UTF-8 line" "tfm: $T/bad.txt: line 2: invalid UTF-8 at byte 3"
check "failed learn writes nothing" test ! -e "$T/v4"
cp "$T/v1" "$T/keep"
expect_exit 1 "learn empty" -- "$TFM" bpe learn -s 300 -o "$T/keep" "$T/empty"
expect_err_line "learn empty line" "tfm: $T/empty: no text to learn from"
check "failed learn keeps the old vocab" cmp -s "$T/keep" "$T/v1"
expect_exit 1 "learn empty path" -- "$TFM" bpe learn -s 300 -o "$T/v4" ""
expect_err_line "learn empty path line" "tfm: input path is empty"
expect_exit 1 "learn -o empty path" -- "$TFM" bpe learn -s 300 -o "" "$T/corpus.txt"
expect_err_line "learn -o empty path line" "tfm: output path is empty"
expect_exit 1 "encode -v empty path" -- "$TFM" bpe encode -v ""
expect_err_line "encode -v empty path line" "tfm: vocabulary path is empty"
expect_exit 1 "learn missing file" -- "$TFM" bpe learn -s 300 -o "$T/v4" "$T/nope.txt"
expect_err_line "learn missing file line" "tfm: $T/nope.txt: cannot open: No such file or directory"
expect_exit 2 "vocab size too small" -- "$TFM" bpe learn --vocab-size 100 -o "$T/v4" "$T/corpus.txt"
expect_err_line "vocab size too small line" "tfm: bpe learn: --vocab-size must be an integer in [261, 1048576] (4 specials + 256 bytes + the word marker at least), got '100'"
expect_exit 2 "vocab size not a number" -- "$TFM" bpe learn --vocab-size 8k -o "$T/v4" "$T/corpus.txt"
expect_exit 2 "learn without -o" -- "$TFM" bpe learn --vocab-size 300 "$T/corpus.txt"
expect_err_line "learn without -o line" "tfm: bpe learn: -o VOCAB is required"
expect_exit 2 "learn without files" -- "$TFM" bpe learn --vocab-size 300 -o "$T/v4"
expect_err_line "learn without files line" "tfm: bpe learn: no input files"
expect_exit 2 "no subcommand" -- "$TFM" bpe
expect_exit 2 "unknown subcommand" -- "$TFM" bpe split
expect_err_line "unknown subcommand line" "tfm: bpe: unknown subcommand 'split' (expected learn, encode or decode)"
expect_exit 2 "unknown option" -- "$TFM" bpe encode -v "$T/v1" --frobnicate
expect_err_line "unknown option line" "tfm: bpe encode: unknown option '--frobnicate' (see tfm bpe --help)"
expect_exit 2 "missing option value" -- "$TFM" bpe encode -v
expect_err_line "missing option value line" "tfm: bpe encode: option '-v' needs a value"
expect_exit 2 "encode without vocab" -- "$TFM" bpe encode
expect_err_line "encode without vocab line" "tfm: bpe encode: -v VOCAB is required"
expect_exit 0 "help" -- "$TFM" bpe --help
check "help mentions learn" grep -q 'tfm bpe learn' "$T/out"
expect_exit 0 "help via tfm help" -- "$TFM" help bpe
expect_exit 1 "missing vocab" -- "$TFM" bpe encode -v "$T/nope.vocab"
expect_err_line "missing vocab line" "tfm: $T/nope.vocab: cannot open: No such file or directory"
printf 'hello\n' >"$T/notvocab"
expect_exit 1 "not a vocab" -- "$TFM" bpe decode -v "$T/notvocab"
expect_err_line "not a vocab line" "tfm: $T/notvocab: line 1: not a tfm-bpe vocabulary (expected 'tfm-bpe 1')"
head -c 3000 "$T/v1" >"$T/trunc"
expect_exit 1 "truncated vocab" -- "$TFM" bpe encode -v "$T/trunc"
printf '▁the zzzqqq\n' >"$T/unknown.txt"
expect_exit 1 "decode unknown piece" -- run_in "$T/unknown.txt" "$TFM" bpe decode -v "$T/v1"
expect_err_line "decode unknown piece line" "tfm: stdin: line 1: unknown piece 'zzzqqq'"
printf '5 6\n7 99999\n' >"$T/badids.txt"
expect_exit 1 "decode bad id" -- run_in "$T/badids.txt" "$TFM" bpe decode -v "$T/v1" --ids
expect_err_line "decode bad id line" "tfm: stdin: line 2: '99999' is not an id below 276"
printf 'a \\xZZ\n' >"$T/badesc.txt"
expect_exit 1 "decode bad escape" -- run_in "$T/badesc.txt" "$TFM" bpe decode -v "$T/v1"
expect_err_line "decode bad escape line" "tfm: stdin: line 1: bad escape or raw control byte in piece '\\xZZ' (pieces are separated by spaces)"
# A piece that unescapes to a NUL byte is quoted as written.
printf '\\x00\n' >"$T/nul_piece.txt"
expect_exit 1 "decode unknown escaped piece" -- run_in "$T/nul_piece.txt" "$TFM" bpe decode -v "$T/v1"
expect_err_line "unknown escaped piece quoted as written" "tfm: stdin: line 1: unknown piece '\\x00'"
# Bytes of a quoted path that are not UTF-8 are shown as \xNN: stderr stays UTF-8.
expect_exit 1 "a path that is not UTF-8" -- "$TFM" bpe encode -v $'/nonexistent/\xff\xfe\xc3'
check "its bytes are escaped" grep -qx 'tfm: /nonexistent/\\xFF\\xFE\\xC3: cannot open: No such file or directory' "$T/err"
: >"$T/empty2"
expect_exit 1 "learn from two empty files" -- "$TFM" bpe learn --vocab-size 300 -o "$T/v_e" "$T/empty2" "$T/empty2"
expect_err_line "one other file, singular" "tfm: no text to learn from in $T/empty2 and 1 other file"

cli_summary
