# cli_browser.sh: a real browser on the page `tfm serve` serves: Debian's
# chromium, headless, driven by playwright-core (tests/browser/) opens /,
# types a sentence, clicks Translate and reads the translation, which must
# be tfm translate's, with no error in the page's console; a screenshot is
# saved. Skipped, with one line, where
# chromium, node or playwright-core is missing (`sh scripts/deps.sh browser`
# installs them; CI does).
. "$(dirname "$0")/cli_lib.sh"
MINI=$PWD/tests/data/mini
BROWSER=$PWD/tests/browser
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ] || ! command -v node >/dev/null 2>&1 ||
   [ ! -d "$BROWSER/node_modules/playwright-core" ]; then
    echo "cli_browser: skipped: no chromium, node or playwright-core (sh scripts/deps.sh browser)" >&2
    cli_summary
    exit 0
fi
# The page is the same in every build: once is enough (CI's time is short).
if ldd "$TFM" 2>/dev/null | grep -q libasan; then
    echo "cli_browser: skipped under AddressSanitizer (the plain build's run covers the page)" >&2
    cli_summary
    exit 0
fi
cd "$T" || exit 1
"$TFM" train "$MINI/mini.json" -q >/dev/null 2>&1 || { cli_fail "training the test model"; cli_summary; exit 1; }
sentence="Zwei Männer stehen auf der Straße."
want=$(echo "$sentence" | "$TFM" translate -q)
"$TFM" serve -m model.tfm --port 0 --source-lang de --target-lang en -q 2>serve.err &
spid=$!
port=
for _ in $(seq 600); do
    port=$(sed -n 's|^tfm: serving .* on http://127.0.0.1:\([0-9]*\)$|\1|p' serve.err)
    [ -n "$port" ] && break
    sleep 0.05
done
check "the server started" test -n "$port"
CHROMIUM=$CHROMIUM timeout 150 node "$BROWSER/serve_page.mjs" "http://127.0.0.1:$port/" "$sentence" \
    "$T/serve.png" "$T/profile" >page.json 2>page.err
check "the browser ran the page ($(head -c 300 page.err))" test -s page.json
got=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["translation"])' page.json 2>/dev/null)
check "the page shows tfm translate's translation ('$got')" test "$got" = "$want"
check "the page shows the time it took" grep -Eq '"time":"[0-9]+ ms"' page.json
errors=$(/usr/bin/python3 -c 'import json, sys; print("; ".join(json.load(open(sys.argv[1]))["console_errors"]))' page.json 2>&1)
check "no error in the page's console ('$errors')" test -z "$errors"
check "a screenshot was saved" sh -c "head -c 8 '$T/serve.png' | od -An -c | grep -q 'P   N   G'"
kill -TERM "$spid"
wait "$spid"
check "the server exits 0" test $? = 0
cli_summary
