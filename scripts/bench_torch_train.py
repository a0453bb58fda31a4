#!/usr/bin/python3
"""bench_torch_train: PyTorch training speed for the tfm model shapes, as the
yardstick for tfm's own training speed. Independent of tfm: random tokens,
the model of scripts/torch_model.py, torch.optim.Adam with the noam schedule.

A step is forward + backward + Adam (dropout and label smoothing on). After
--warmup steps, --steps steps are timed; the script prints one JSON line:
tok/s counts source + target non-pad tokens (with </s> and <s>) per second.

Batches: with --lengths (a file of "SRC_LEN TGT_LEN" lines, one per pair of
the corpus, BPE tokens without </s> or <s>), the batches tfm's batcher makes (src/train/corpus.c): the corpus
sorted by (target, source) length, cut greedily so that n * (padded src_len
+ padded tgt_len) <= --batch-tokens, and shuffled, so both programs train
on the same shapes and padding. --batching pools (or no --lengths:
synthetic Multi30k-like lengths, src ~ 15, tgt ~ 14 BPE tokens) draws pairs
at random and sorts them in pools of 50 batches instead, which pads more.
--budget-rule max uses n * max(...) instead, fairseq's. Batches are built
once.

Threads: torch.set_num_threads(T) does not reach OpenBLAS (Debian's torch
calls the system OpenBLAS, pthread build, which keeps its own pool), so the
script also calls openblas_set_num_threads(T) through ctypes.

On this machine (Debian torch 1.13, system OpenBLAS 0.3.21 pthread build):
the environment sets OPENBLAS_CORETYPE=Haswell, and unsetting it lets
OpenBLAS pick Cooperlake (AVX-512) kernels, ~1.6-2x faster here; with two
threads, OMP_WAIT_POLICY=PASSIVE is needed, else torch's OpenMP pool and
OpenBLAS's pool spin against each other on the 2 cores (3-5x slower).

--bf16 runs forward and loss under torch.autocast("cpu", bfloat16): the
matmuls in bf16 (oneDNN), float32 master weights and optimizer.

Example:
  /usr/bin/python3 scripts/bench_torch_train.py --d 256 --heads 4 --layers 3 \
      --d-ff 1024 --vocab 8000 --threads 2 --steps 10
"""
import argparse
import ctypes
import json
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_model as tm  # noqa: E402


def openblas():
    """The OpenBLAS torch loaded (None if torch uses another BLAS)."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib
    except (OSError, AttributeError):
        return None


def read_lengths(path):
    pairs = []
    with open(path) as f:
        for ln, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != 2:
                sys.exit("%s:%d: expected 'SRC_LEN TGT_LEN'" % (path, ln))
            s, t = int(parts[0]), int(parts[1])
            if s > 0 and t > 0:
                pairs.append((s, t))
    if not pairs:
        sys.exit("%s: no lengths" % path)
    return pairs


def synthetic_pair(rng, args):
    """Source length from a gamma with a right tail; the target follows it
    (translations have correlated lengths), with a little noise."""
    s = max(1, min(args.max_len, int(round(rng.gammavariate(6.0, args.src_mean / 6.0)))))
    t = s * args.tgt_mean / args.src_mean + rng.gauss(0.0, 1.5)
    return s, max(1, min(args.max_len, int(round(t))))


def cut(pairs, args):
    """Greedy cut of length-sorted pairs: a batch takes pairs while
    n * width fits the budget (width: padded src + tgt, or their max)."""
    batches, cur, ms, mt = [], [], 0, 0
    for s, t in pairs:
        s1, t1 = max(ms, s + 1), max(mt, t + 1)
        width = s1 + t1 if args.budget_rule == "sum" else max(s1, t1)
        if cur and (len(cur) + 1) * width > args.batch_tokens:
            batches.append(cur)
            cur, s1, t1 = [], s + 1, t + 1
        cur.append((s, t))
        ms, mt = s1, t1
    if cur:
        batches.append(cur)
    return batches


def corpus_batches(table, args, rng):
    """tfm's batcher (src/train/corpus.c, batcher_plan_epoch): the whole corpus
    sorted by (target, source) length with random ties, cut greedily, the
    batches shuffled; epochs repeat until there are enough."""
    batches = []
    while len(batches) < args.warmup + args.steps:
        keyed = sorted((t, s, rng.random()) for s, t in table
                       if s + 1 + t + 1 <= args.batch_tokens)
        epoch = cut([(s, t) for t, s, _ in keyed], args)
        rng.shuffle(epoch)
        batches += epoch
    return batches


def pool_batches(draw, args, rng):
    """Pairs drawn at random, sorted by length in pools of about 50 batches."""
    batches = []
    while len(batches) < args.warmup + args.steps:
        pool_size = max(1, 50 * args.batch_tokens // int(args.src_mean + args.tgt_mean + 2))
        if args.budget_rule == "max":
            pool_size *= 2
        batches += cut(sorted(draw() for _ in range(pool_size)), args)
    rng.shuffle(batches)
    return batches


def make_batches(args, rng):
    if args.lengths and args.batching == "corpus":
        batches = corpus_batches(read_lengths(args.lengths), args, rng)
    elif args.lengths:
        table = read_lengths(args.lengths)
        batches = pool_batches(lambda: rng.choice(table), args, rng)
    else:
        batches = pool_batches(lambda: synthetic_pair(rng, args), args, rng)
    out = []
    for pairs in batches[:args.warmup + args.steps]:
        src = [[rng.randrange(4, args.vocab) for _ in range(s)] for s, _ in pairs]
        tgt = [[rng.randrange(4, args.vocab) for _ in range(t)] for _, t in pairs]
        out.append(tm.make_batch(src, tgt))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--layers", type=int, default=6, help="encoder and decoder layers")
    ap.add_argument("--enc-layers", type=int)
    ap.add_argument("--dec-layers", type=int)
    ap.add_argument("--d-ff", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--norm", choices=("post", "pre"), default="post")
    ap.add_argument("--no-share", action="store_true", help="separate embeddings")
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--batch-tokens", type=int, default=4096)
    ap.add_argument("--budget-rule", choices=("sum", "max"), default="sum",
                    help="n*(S+T) <= budget (tfm) or n*max(S,T) <= budget")
    ap.add_argument("--lengths", help="file of 'SRC_LEN TGT_LEN' lines (BPE tokens, without </s> or <s>), "
                         "one per pair of a corpus")
    ap.add_argument("--batching", choices=("corpus", "pools"), default="corpus",
                    help="with --lengths: tfm's batches over the whole corpus (default), "
                         "or random draws sorted in pools of 50 batches")
    ap.add_argument("--src-mean", type=float, default=15.0)
    ap.add_argument("--tgt-mean", type=float, default=14.0)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--blas-threads", type=int,
                    help="OpenBLAS threads if different from --threads")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bf16", action="store_true",
                    help="torch.autocast('cpu', dtype=torch.bfloat16) around forward and loss "
                         "(float32 weights and Adam, as tfm's train.precision bf16)")
    args = ap.parse_args()
    enc = args.enc_layers if args.enc_layers is not None else args.layers
    dec = args.dec_layers if args.dec_layers is not None else args.layers

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    blas = openblas()
    if blas is not None:
        blas.openblas_set_num_threads(args.blas_threads or args.threads)

    cfg = tm.Config(d_model=args.d, heads=args.heads, enc_layers=enc, dec_layers=dec,
                    d_ff=args.d_ff, vocab_size=args.vocab, max_len=args.max_len + 2,
                    norm=args.norm, share_embeddings=not args.no_share, dropout=args.dropout)
    model = tm.Transformer(cfg)
    model.init_weights(torch.Generator().manual_seed(args.seed))
    model.train()
    params = [p for _, p in model.named()]
    opt = torch.optim.Adam(params, lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    batches = make_batches(args, random.Random(args.seed))

    times, toks, padded = [], 0, 0
    for i, (src, tin, tout) in enumerate(batches):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            logits = model(src, tin)
            loss, _, n_tok = tm.loss_sums(logits, tout, args.label_smoothing)
        (loss / n_tok).backward()
        for g in opt.param_groups:
            g["lr"] = tm.noam_lr(i + 1, args.d, 4000, 1.0)
        opt.step()
        dt = time.perf_counter() - t0
        if i >= args.warmup:
            times.append(dt)
            toks += int(src.ne(tm.PAD).sum()) + n_tok
            padded += src.numel() + tout.numel()
    total = sum(times)
    times.sort()
    print(json.dumps({
        "impl": "pytorch", "torch": torch.__version__, "threads": args.threads,
        "precision": "bf16 autocast" if args.bf16 else "fp32",
        "blas": "openblas " + blas.openblas_get_corename().decode() if blas else "unknown",
        "blas_threads": blas.openblas_get_num_threads() if blas else None,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY") or "default",
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE") or "unset",
        "d_model": args.d, "heads": args.heads, "enc_layers": enc, "dec_layers": dec,
        "d_ff": args.d_ff, "vocab": args.vocab, "norm": args.norm,
        "share_embeddings": not args.no_share, "dropout": args.dropout,
        "label_smoothing": args.label_smoothing, "batch_tokens": args.batch_tokens,
        "budget_rule": args.budget_rule,
        "steps": len(times), "tokens_per_step": round(toks / len(times), 1),
        "pad_fraction": round(1 - toks / padded, 3),
        "tok_per_s": round(toks / total, 1),
        "step_ms_mean": round(1000 * total / len(times), 1),
        "step_ms_median": round(1000 * times[len(times) // 2], 1),
    }))


if __name__ == "__main__":
    main()
