#!/usr/bin/env bash
# bench_metrics.sh: tfm bleu -m chrf / -m ter against sacreBLEU on 100,000 lines.
# The reference is data/train.en repeated up to 100k lines, the hypothesis a
# copy with seeded word noise (moves, swaps, drops, inserts). Reports user CPU
# seconds and wall seconds from /usr/bin/time (user time is the fairer figure
# on a loaded machine). sacreBLEU runs only when `python3 -m sacrebleu` works
# (e.g. PYTHONPATH=/path/to/sacrebleu-checkout); it is not part of tfm.
#   usage: scripts/bench_metrics.sh [LINES]
set -eu
cd "$(dirname "$0")/.."
N=${1:-100000}
PY=${PYTHON:-/usr/bin/python3}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
[ -f data/train.en ] || gzip -dc data/train.en.gz >data/train.en
"$PY" - "$N" data/train.en "$W/ref.txt" "$W/hyp.txt" <<'PY'
import random, sys
n, src, ref_path, hyp_path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
lines = [l.rstrip("\n") for l in open(src, encoding="utf-8")]
rng = random.Random(7)
with open(ref_path, "w", encoding="utf-8") as r, open(hyp_path, "w", encoding="utf-8") as h:
    for i in range(n):
        ref = lines[i % len(lines)]
        w = ref.split()
        for _ in range(rng.randint(0, 3)):
            if len(w) < 2:
                break
            op, k = rng.random(), rng.randrange(len(w))
            if op < 0.3:
                m = rng.randint(1, min(3, len(w) - k)); blk = w[k:k + m]; del w[k:k + m]
                j = rng.randint(0, len(w)); w[j:j] = blk
            elif op < 0.5:
                j = rng.randrange(len(w)); w[k], w[j] = w[j], w[k]
            elif op < 0.7:
                del w[k]
            else:
                w.insert(k, rng.choice(["a", "the", "man", "is", "."]))
        r.write(ref + "\n")
        h.write(" ".join(w) + "\n")
PY
echo "lines: $(wc -l <"$W/ref.txt"), reference words: $(wc -w <"$W/ref.txt")"
run() {   # run LABEL CMD...: prints the result line, user and wall seconds
    local label=$1; shift
    /usr/bin/time -f '%U %e %M' -o "$W/time" "$@" >"$W/out" 2>/dev/null
    read -r user wall rss <"$W/time"
    printf '%-22s %-16s user %7.2f s  wall %7.2f s  max RSS %6d KB\n' "$label" "$(head -n 1 "$W/out")" \
        "$user" "$wall" "$rss"
}
TFM=${TFM:-./tfm}
run "tfm chrF" "$TFM" bleu "$W/hyp.txt" "$W/ref.txt" -m chrf
run "tfm chrF++" "$TFM" bleu "$W/hyp.txt" "$W/ref.txt" -m chrf --chrf-word-order 2
run "tfm TER" "$TFM" bleu "$W/hyp.txt" "$W/ref.txt" -m ter
if "$PY" -c 'import sacrebleu' 2>/dev/null; then
    run "sacreBLEU chrF" "$PY" -m sacrebleu "$W/ref.txt" -i "$W/hyp.txt" -m chrf -w 2 -b
    run "sacreBLEU chrF++" "$PY" -m sacrebleu "$W/ref.txt" -i "$W/hyp.txt" -m chrf --chrf-word-order 2 -w 2 -b
    run "sacreBLEU TER" "$PY" -m sacrebleu "$W/ref.txt" -i "$W/hyp.txt" -m ter -w 2 -b
else
    echo "sacreBLEU not importable: tfm only"
fi
