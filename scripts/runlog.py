"""The records of a training log (out_dir/log.jsonl), for compare_runs.sh,
plot_log.sh and multi30k.sh: each line a JSON object; blank lines are skipped, anything else
ends the script with a one-line error naming the file and line."""
import json
import sys


def records(path, prog):
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        sys.exit(f"{prog}: {path}: {e.strerror}")
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except ValueError:
                sys.exit(f"{prog}: {path}: line {n}: not JSON")
            if not isinstance(r, dict):
                sys.exit(f"{prog}: {path}: line {n}: not a JSON object")
            yield r
