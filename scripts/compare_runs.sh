#!/usr/bin/env bash
# compare_runs.sh: the validation curves of two or more training runs side by
# side, for deciding between recipes (BENCHMARKS.md's quality tables): one row
# a validated step with each run's "NLL / greedy BLEU" (blank where a run did
# not validate that step), then a row for each end-of-run model (the average
# of the last checkpoints, the moving average of train.ema), then the steps,
# the median training tok/s and the minutes of training of each run. Reads each
# out_dir/log.jsonl as JSON (python3), so key order and unknown keys do not
# matter.
#   scripts/compare_runs.sh A/log.jsonl B/log.jsonl [C/log.jsonl ...]
# Columns are named by the log's folder (A, B, ...); NAME=PATH names one
# itself: scripts/compare_runs.sh recipe=runs/a/log.jsonl lr3=runs/b/log.jsonl
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: scripts/compare_runs.sh [NAME=]LOG.jsonl [NAME=]LOG.jsonl [...]" >&2; exit 2; }
py=$(command -v /usr/bin/python3 || command -v python3 || true)
[ -n "$py" ] || { echo "compare_runs.sh: needs python3" >&2; exit 1; }
exec "$py" - "$(dirname "$0")" "$@" <<'PY'
import math, os, statistics, sys
sys.path.insert(0, sys.argv[1])
from runlog import records

def load(spec):
    name, sep, path = spec.partition("=")
    if not sep:
        path = spec
        name = os.path.basename(os.path.dirname(os.path.abspath(path))) or path
    valid, ends, speed, last = {}, [], [], {}
    for r in records(path, "compare_runs.sh"):
        if isinstance(r.get("step"), int):
            last["step"] = max(last.get("step", 0), r["step"])
        if isinstance(r.get("elapsed_s"), (int, float)):
            last["elapsed_s"] = max(last.get("elapsed_s", 0.0), r["elapsed_s"])
        if isinstance(r.get("tok_per_s"), (int, float)):
            speed.append(r["tok_per_s"])
        if not isinstance(r.get("valid_loss"), (int, float)):
            continue
        cell = (r["valid_loss"], r.get("valid_bleu"))
        if r.get("averaged", 0) > 0:
            ends.append((f"average of {r['averaged']}", cell))
        elif r.get("ema"):
            ends.append(("moving average (ema)", cell))
        elif isinstance(r.get("step"), int):
            valid[r["step"]] = cell      # a resumed run may validate a step twice: the last counts
    if not valid and not ends:
        sys.exit(f"compare_runs.sh: {path}: no validation records")
    return name, valid, ends, speed, last

def fmt(cell):
    if cell is None:
        return ""
    loss, bleu = cell
    b = f"{bleu:.2f}" if isinstance(bleu, (int, float)) and math.isfinite(bleu) else "-"
    return f"{loss:.3f} / {b}"

runs = [load(a) for a in sys.argv[2:]]
print("| step | " + " | ".join(f"{r[0]}: NLL / BLEU" for r in runs) + " |")
print("|---" * (len(runs) + 1) + "|")
for s in sorted(set().union(*(r[1] for r in runs))):
    print(f"| {s} | " + " | ".join(fmt(r[1].get(s)) for r in runs) + " |")
for kind in sorted({k for r in runs for k, _ in r[2]}):
    print(f"| {kind} | " + " | ".join(fmt(dict(r[2]).get(kind)) for r in runs) + " |")
def median(v):
    return f"{statistics.median(v) / 1000:.1f}k" if v else "-"
print("| steps, median tok/s, minutes | " + " | ".join(
    f"{r[4].get('step', '-')}, {median(r[3])}, {r[4].get('elapsed_s', 0) / 60:.1f}" for r in runs) + " |")
PY
