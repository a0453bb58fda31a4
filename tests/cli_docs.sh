#!/usr/bin/env bash
# cli_docs.sh: the pages generated from the code or the tests are current.
cd "$(dirname "$0")/.." || exit 1
. tests/cli_lib.sh

/usr/bin/python3 scripts/gen_errors_doc.py >"$T/errors.md"
check "docs/errors.md is what scripts/gen_errors_doc.py writes (run it)" cmp -s "$T/errors.md" docs/errors.md
check "docs/errors.md lists over 150 tested cases" \
    test "$(grep -c '^| .* | [12] |' docs/errors.md)" -gt 150

cli_summary
