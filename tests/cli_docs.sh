#!/usr/bin/env bash
# cli_docs.sh: the pages generated from the code or the tests are current, and
# the examples of README.md and docs/ run.
cd "$(dirname "$0")/.." || exit 1
. tests/cli_lib.sh

/usr/bin/python3 scripts/gen_errors_doc.py >"$T/errors.md"
check "docs/errors.md is what scripts/gen_errors_doc.py writes (run it)" cmp -s "$T/errors.md" docs/errors.md
check "docs/errors.md lists over 150 tested cases" \
    test "$(grep -c '^| .* | [12] |' docs/errors.md)" -gt 150

# Every link to a heading (#anchor) lands on one; a broken one is caught.
check "links to headings in README.md, BENCHMARKS.md and docs/ land" \
    /usr/bin/python3 scripts/check_anchors.py README.md BENCHMARKS.md docs/*.md
printf '# One\n\n[see](#two)\n' >"$T/anchor.md"
check "a link to a missing heading is caught" \
    sh -c '! /usr/bin/python3 scripts/check_anchors.py "$1" >/dev/null' sh "$T/anchor.md"

# BENCHMARKS.md stays a page a person reads: at most 600 lines, short table
# cells (the story goes below the table); older runs stay in git history.
check "BENCHMARKS.md is at most 600 lines, no table cell over 200 characters" \
    /usr/bin/python3 scripts/check_tables.py 600 200 BENCHMARKS.md
printf '| a | b |\n|---|---|\n| 1 | %0201d |\n' 0 >"$T/wide.md"
check "a table cell over 200 characters is caught" \
    sh -c '/usr/bin/python3 scripts/check_tables.py 600 200 "$1" | grep -q "cell of 201 characters"' sh "$T/wide.md"
seq 601 >"$T/long.md"
check "a page over 600 lines is caught" \
    sh -c '/usr/bin/python3 scripts/check_tables.py 600 200 "$1" | grep -q "601 lines, over 600"' sh "$T/long.md"
printf '| a | b |\n|---|---|\n| 1 | %0200d |\n' 0 >"$T/wide.md"
check "a cell of 200 characters is taken" /usr/bin/python3 scripts/check_tables.py 600 200 "$T/wide.md"

# docs/architecture.md's source map names every file of src/ and no other;
# a file left out, a file named that is gone and a folder with no row are caught.
check "docs/architecture.md's source map is src/ (scripts/check_source_map.py)" \
    /usr/bin/python3 scripts/check_source_map.py docs/architecture.md src
mkdir -p "$T/map/src"
(cd src && find . -name '*.[ch]' -exec sh -c 'mkdir -p "$0/$(dirname "$1")" && : >"$0/$1"' "$T/map/src" {} \;)
check "the source map check passes on a copy of src/'s names" \
    /usr/bin/python3 scripts/check_source_map.py docs/architecture.md "$T/map/src"
map_fails() { # WHAT: the map check refuses the copy, naming WHAT
    /usr/bin/python3 scripts/check_source_map.py "$T/map/arch.md" "$T/map/src" >"$T/map/out"
    [ $? = 1 ] && grep -qF -- "$1" "$T/map/out"
}
sed 's/`html`, //' docs/architecture.md >"$T/map/arch.md"
check "a file missing from the source map is caught" map_fails "src/serve/html.c is missing"
sed 's/`html`, /`html`, `ghost`, /' docs/architecture.md >"$T/map/arch.md"
check "a file the source map names that does not exist is caught" map_fails "src/serve/ghost, which does not exist"
cp docs/architecture.md "$T/map/arch.md"
mkdir -p "$T/map/src/newroom" && : >"$T/map/src/newroom/thing.c"
check "a folder with no row in the source map is caught" map_fails "src/newroom/ has no row"
rm -r "$T/map/src/decode"

# Every option the docs' command examples use is one `tfm help COMMAND` lists.
python3 scripts/doc_commands.py README.md docs/*.md >"$T/commands"
check "the docs show over 15 tfm commands" test "$(wc -l <"$T/commands")" -gt 15
while IFS=$'\t' read -r where sub opts; do
    help=(help "$sub")
    [ "$sub" = help ] && help=(--help)
    if ! "$TFM" "${help[@]}" >"$T/help" 2>/dev/null; then
        cli_fail "$where: tfm $sub is not a command"; continue
    fi
    for opt in $opts; do
        grep -qE -- "(^|[][ ,(])$opt([^A-Za-z0-9-]|$)" "$T/help" ||
            cli_fail "$where: tfm $sub has no option $opt"
    done
    cli_ok
done <"$T/commands"

# README's first config, on the shipped data's names (tiny stand-ins here),
# then its train, translate and score commands.
MINI=$PWD/tests/data/mini
mkdir -p "$T/first/data"
for f in train.de train.en; do gzip -c "$MINI/$f" >"$T/first/data/$f.gz"; done
for l in de en; do gzip -c "$MINI/valid.$l" >"$T/first/data/val.$l.gz"; done
python3 -c 'import re, sys; print(re.search(r"```json\n(.*?)```", open(sys.argv[1]).read(), re.S).group(1))' \
    README.md >"$T/first/first.json"
(
    cd "$T/first" || exit 1
    expect_exit 0 "README's first config trains" -- "$TFM" train first.json -q \
        --set data.vocab_size=300 --set train.max_steps=2 --set train.valid_every=2
    check "README's first config writes first.tfm" test "$(tail -n 1 "$T/out")" = first.tfm
    head -n 5 "$MINI/valid.de" >input.de
    head -n 5 "$MINI/valid.en" >reference.en
    expect_exit 0 "README's translate" -- "$TFM" translate -m first.tfm -i input.de -o output.en -b 5 -q
    check "README's translate writes a line per input line" test "$(wc -l <output.en)" = 5
    expect_exit 0 "README's bleu" -- "$TFM" bleu output.en reference.en -m bleu chrf ter
)

cli_summary
