#!/usr/bin/env bash
# bench_serve.sh: `tfm serve` under load, beside `tfm translate` on the same
# lines, in one run (BENCHMARKS.md, "tfm serve").
#   usage: scripts/bench_serve.sh MODEL [INPUT]
#          scripts/bench_serve.sh --soak SECONDS MODEL [INPUT]
# INPUT: one sentence a line (default data/test_2016_flickr.de). Prints a
# markdown table:
#   - tfm translate --batch-size 64 (the throughput ceiling) and
#     --batch-size 1 fed one line at a time, each line timed from its write
#     to its answer (the latency floor);
#   - tfm serve --batch-size 64 with 1, 8, 32 and 128 concurrent clients
#     (build/serve_load, keep-alive connections), each sending
#     single-sentence requests round and round over INPUT for SECS seconds
#     after WARM seconds of warm-up: sentences/s and p50/p95/p99 latency.
# --soak: 32 clients for SECONDS; errors, and the server's resident memory
# (VmRSS) every 10 s, its range after the first minute.
# Environment: THREADS (2), SECS (20), WARM (3), CLIENTS ("1 8 32 128"),
# TFM (./tfm), LOAD (build/serve_load). The load generator shares the CPU
# with the server: on a small machine it takes part of what it measures.
set -u
cd "$(dirname "$0")/.." || exit 1
SOAK=0
if [ "${1:-}" = --soak ]; then SOAK=${2:?--soak SECONDS}; shift 2; fi
MODEL=${1:?usage: scripts/bench_serve.sh [--soak SECONDS] MODEL [INPUT]}
INPUT=${2:-data/test_2016_flickr.de}
THREADS=${THREADS:-2}
SECS=${SECS:-20}
WARM=${WARM:-3}
CLIENTS=${CLIENTS:-1 8 32 128}
TFM=${TFM:-./tfm}
LOAD=${LOAD:-build/serve_load}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
[ -x "$TFM" ] && [ -x "$LOAD" ] || { echo "bench_serve: make tfm $LOAD first" >&2; exit 1; }
[ -f "$INPUT" ] || make -s data >/dev/null
W=$(mktemp -d)
SPID=
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; rm -rf "$W"' EXIT
N=$(wc -l <"$INPUT")

start_server() {
    "$TFM" serve -m "$MODEL" --port 0 --threads "$THREADS" --batch-size 64 -q 2>"$W/serve.err" &
    SPID=$!
    PORT=
    for _ in $(seq 600); do
        PORT=$(sed -n 's|^tfm: serving .* on http://127.0.0.1:\([0-9]*\)$|\1|p' "$W/serve.err")
        [ -n "$PORT" ] && return
        sleep 0.05
    done
    echo "bench_serve: the server did not start: $(cat "$W/serve.err")" >&2
    exit 1
}
stop_server() { kill -TERM "$SPID"; wait "$SPID"; SPID=; }
field() { sed -n "s|.* $1 \([0-9.]*\).*|\1|p" "$2"; }
# the server's batches so far: "count sum" (GET /metrics)
batches() {
    curl -s "http://127.0.0.1:$PORT/metrics" |
        awk '/^tfm_batch_sentences_count/ { c = $2 } /^tfm_batch_sentences_sum/ { s = $2 } END { print c + 0, s + 0 }'
}

if [ "$SOAK" != 0 ]; then
    start_server
    "$LOAD" -p "$PORT" -i "$INPUT" -c 32 -d "$SOAK" >"$W/soak.out" 2>"$W/soak.err" &
    lp=$!
    : >"$W/rss"
    t=0
    while kill -0 "$lp" 2>/dev/null; do
        echo "$t $(awk '/^VmRSS/ { print $2 }' "/proc/$SPID/status")" >>"$W/rss"
        sleep 10
        t=$((t + 10))
    done
    wait "$lp"
    stop_server
    echo "soak: 32 clients, $SOAK s, threads $THREADS: $(cat "$W/soak.out")"
    echo "VmRSS (kB) every 10 s: $(awk '{ printf "%s ", $2 }' "$W/rss")"
    awk '$1 >= 60 { if (min == "" || $2 < min) min = $2; if ($2 > max) max = $2 }
         END { if (min != "") printf "after the first minute: %d..%d kB (range %d kB)\n", min, max, max - min }' "$W/rss"
    exit 0
fi

# tfm translate: batch 64 over the whole input, timed
t0=$(date +%s.%N)
"$TFM" translate -m "$MODEL" --threads "$THREADS" --batch-size 64 -q <"$INPUT" >"$W/b64.txt"
t1=$(date +%s.%N)
b64=$(awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN { print n / (b - a) }')
# tfm translate --batch-size 1, a line at a time through a pipe
/usr/bin/python3 - "$TFM" "$MODEL" "$THREADS" "$INPUT" >"$W/b1.txt" <<'EOF'
import subprocess, sys, time
tfm, model, threads, path = sys.argv[1:]
p = subprocess.Popen([tfm, 'translate', '-m', model, '--threads', threads, '--batch-size', '1',
                      '-q'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
lat = []
start = time.perf_counter()
for line in open(path, 'rb'):
    t = time.perf_counter()
    p.stdin.write(line)
    p.stdout.readline()
    lat.append((time.perf_counter() - t) * 1e3)
total = time.perf_counter() - start
p.stdin.close()
p.wait()
lat.sort()
q = lambda f: lat[int(f * (len(lat) - 1) + 0.5)]
print('%.1f %.2f %.2f %.2f' % (len(lat) / total, q(0.5), q(0.95), q(0.99)))
EOF
read -r b1 b1p50 b1p95 b1p99 <"$W/b1.txt"

echo "| what | sentences/s | p50 ms | p95 ms | p99 ms | lines a batch |"
echo "|---|---|---|---|---|---|"
printf '| tfm translate --batch-size 64 | %.1f | | | | 64 |\n' "$b64"
printf '| tfm translate --batch-size 1, a line at a time | %s | %s | %s | %s | 1 |\n' "$b1" "$b1p50" "$b1p95" "$b1p99"
start_server
for c in $CLIENTS; do
    "$LOAD" -p "$PORT" -i "$INPUT" -c "$c" -d "$WARM" >/dev/null 2>&1
    read -r n0 s0 < <(batches)
    "$LOAD" -p "$PORT" -i "$INPUT" -c "$c" -d "$SECS" >"$W/c$c.out" 2>"$W/c$c.err"
    read -r n1 s1 < <(batches)
    ok=$(field ok "$W/c$c.out")
    errors=$(( $(field wrong "$W/c$c.out") + $(field refused "$W/c$c.out") + $(field failed "$W/c$c.out") + $(field http503 "$W/c$c.out") + $(field other "$W/c$c.out") ))
    printf '| tfm serve, %d clients | %s | %s | %s | %s | %s |%s\n' "$c" "$(field sent/s "$W/c$c.out")" \
        "$(field p50_ms "$W/c$c.out")" "$(field p95_ms "$W/c$c.out")" "$(field p99_ms "$W/c$c.out")" \
        "$(awk -v n=$((n1 - n0)) -v s=$((s1 - s0)) 'BEGIN { printf "%.1f", n ? s / n : 0 }')" \
        "$([ "$errors" = 0 ] || echo " $errors errors of $((ok + errors))")"
done
stop_server
echo
echo "$N lines of $INPUT; model $MODEL; --threads $THREADS; serve --batch-size 64; $SECS s a row after $WARM s of warm-up"
