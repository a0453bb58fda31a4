#!/usr/bin/python3
"""make_ref: writes the PyTorch reference dump that tests/test_ref.c checks
the C model against (format: docs/ref-format.md).

Usage: /usr/bin/python3 scripts/make_ref.py [OUT.bin]   (default tests/data/ref_tiny.bin)

Six cases, each a tiny model (d=16, 2 heads, 1+1 layers, d_ff 32, V=24) on
one batch of 3 sentences with padding on both sides:
  post_shared   norm "post", shared embeddings
  pre_unshared  norm "pre", separate emb.src / emb.tgt / out.proj
  post_rms      as post_shared, with norm_type "rmsnorm"
  pre_rms       as pre_unshared, with norm_type "rmsnorm"
  post_linear   as post_shared, with attention "linear"
  pre_rms_linear as pre_rms, with attention "linear"
Each holds the config, initial weights, the batch, logits, loss sums, every
gradient of loss_sum / n_tokens, and the weights after 3 Adam steps (noam,
warmup 4, factor 1) on the same batch. Everything is computed in float32 like
the C code; the script also reruns each case in float64 and prints how far
the float32 results are from it, which is the noise floor the C test's
tolerance must sit above.
"""
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_model as tm  # noqa: E402

MAGIC = b"TFMREF\0\0"
VERSION = 1
DT_F32, DT_I32 = 0, 1

LABEL_SMOOTHING = 0.1
BETA1, BETA2, EPS = 0.9, 0.98, 1e-9
FACTOR, WARMUP, STEPS = 1.0, 4, 3

# Token lists (ids 4..23) of different lengths, so both src and tgt have padding
# in different rows; src lengths 5, 2, 7 (+</s>), tgt lengths 4, 6, 1.
SRC = [[5, 9, 4, 17, 9], [22, 6], [7, 11, 13, 8, 20, 4, 23]]
TGT = [[12, 5, 19, 10], [4, 14, 21, 6, 16, 12], [18]]

CASES = [("post_shared", "post", True, 11, "layernorm", "softmax"),
         ("pre_unshared", "pre", False, 12, "layernorm", "softmax"),
         ("post_rms", "post", True, 13, "rmsnorm", "softmax"),
         ("pre_rms", "pre", False, 14, "rmsnorm", "softmax"),
         ("post_linear", "post", True, 15, "layernorm", "linear"),
         ("pre_rms_linear", "pre", False, 16, "rmsnorm", "linear")]


def tiny_config(norm, share, norm_type, attention):
    return tm.Config(d_model=16, heads=2, enc_layers=1, dec_layers=1, d_ff=32, vocab_size=24,
                     max_len=16, norm=norm, norm_type=norm_type, attention=attention,
                     share_embeddings=share,
                     dropout=0.0, attn_dropout=0.0, relu_dropout=0.0)


def run_case(cfg, seed, dtype):
    """Returns a dict of reference tensors (as float64 CPU tensors / int lists)."""
    torch.manual_seed(0)
    model = tm.Transformer(cfg, dtype)
    gen = torch.Generator().manual_seed(seed)
    # jitter: non-trivial LayerNorm gains/biases and linear biases, so their
    # gradients and their effect on the forward pass are both tested.
    model.init_weights(gen, jitter=0.1)
    model.eval()
    src, tin, tout = tm.make_batch(SRC, TGT)
    out = {"src": src, "tgt_in": tin, "tgt_out": tout,
           "init": [(n, t.detach().clone()) for n, t in model.named()]}

    logits = model(src, tin)
    loss, nll, n_tok = tm.loss_sums(logits, tout, LABEL_SMOOTHING)
    (loss / n_tok).backward()
    out["logits"] = logits.detach().reshape(-1, cfg.vocab_size).clone()
    out["logprobs"] = torch.log_softmax(out["logits"], dim=-1)
    out["loss"] = [float(loss), float(nll)]
    out["n_tokens"] = n_tok
    out["grad"] = [(n, t.grad.detach().clone()) for n, t in model.named()]

    # torch.optim.Adam: p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps),
    # the same formula as adam_update (eps added to sqrt(v_hat)); no weight decay.
    params = [t for _, t in model.named()]
    opt = torch.optim.Adam(params, lr=1.0, betas=(BETA1, BETA2), eps=EPS, weight_decay=0.0,
                           foreach=False)
    lrs, step_losses = [], []
    for step in range(1, STEPS + 1):
        opt.zero_grad(set_to_none=False)
        logits = model(src, tin)
        loss, _, n_tok = tm.loss_sums(logits, tout, LABEL_SMOOTHING)
        (loss / n_tok).backward()
        lr = tm.noam_lr(step, cfg.d_model, WARMUP, FACTOR)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        lrs.append(lr)
        step_losses.append(float(loss))
    out["lr"] = lrs
    out["step_loss"] = step_losses
    out["adam"] = [(n, t.detach().clone()) for n, t in model.named()]
    return out


class Writer:
    def __init__(self):
        self.records = []

    def add(self, name, dtype, shape, values):
        assert 0 < len(name) < 256 and all(s > 0 for s in shape)
        fmt = "<%d%s" % (len(values), "f" if dtype == DT_F32 else "i")
        n = 1
        for s in shape:
            n *= s
        assert n == len(values), name
        head = struct.pack("<I", len(name)) + name.encode("ascii")
        head += struct.pack("<II", dtype, len(shape)) + struct.pack("<%dI" % len(shape), *shape)
        self.records.append(head + struct.pack(fmt, *values))

    def f32(self, name, t):
        t = torch.as_tensor(t, dtype=torch.float32).contiguous()
        shape = list(t.shape) if t.dim() > 0 else [1]
        self.add(name, DT_F32, shape, t.reshape(-1).tolist())

    def i32(self, name, t):
        t = torch.as_tensor(t, dtype=torch.int64).contiguous()
        shape = list(t.shape) if t.dim() > 0 else [1]
        self.add(name, DT_I32, shape, t.reshape(-1).tolist())

    def save(self, path):
        data = MAGIC + struct.pack("<II", VERSION, len(self.records)) + b"".join(self.records)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return len(data)


def max_diffs(a, b):
    """(max abs diff, max abs of b) between two tensors, in float64."""
    a, b = a.double(), b.double()
    return float((a - b).abs().max()), float(b.abs().max())


def report_f64(name, r32, r64):
    """How far float32 is from float64: the noise floor for the C comparison."""
    worst = []
    for key in ("grad", "adam"):
        for (n, a), (_, b) in zip(r32[key], r64[key]):
            if n.endswith(".bk"):
                continue  # gradient is 0 in exact math: pure noise (see docs/ref-format.md)
            d, scale = max_diffs(a, b)
            worst.append((d / max(scale, 1e-30), d, key, n))
    d, scale = max_diffs(r32["logits"], r64["logits"])
    worst.append((d / scale, d, "logits", ""))
    worst.sort(reverse=True)
    print("%s: loss %.6f nll %.6f n_tokens %d; float32 vs float64 (diff / tensor max-abs):"
          % (name, r32["loss"][0], r32["loss"][1], r32["n_tokens"]))
    for rel, d, key, n in worst[:5]:
        print("    %-6s %-22s max abs diff %.2e  (%.2e of max)" % (key, n, d, rel))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/data/ref_tiny.bin"
    torch.set_num_threads(1)
    w = Writer()
    for name, norm, share, seed, norm_type, attention in CASES:
        cfg = tiny_config(norm, share, norm_type, attention)
        r = run_case(cfg, seed, torch.float32)
        report_f64(name, r, run_case(cfg, seed, torch.float64))
        c = name + "/"
        w.i32(c + "config", [cfg.d_model, cfg.heads, cfg.enc_layers, cfg.dec_layers, cfg.d_ff,
                             cfg.vocab_size, cfg.max_len, 0 if norm == "post" else 1,
                             1 if share else 0, 1 if norm_type == "rmsnorm" else 0,
                             1 if attention == "linear" else 0])
        w.f32(c + "hyper", [LABEL_SMOOTHING, BETA1, BETA2, EPS, FACTOR, WARMUP, STEPS])
        w.i32(c + "src", r["src"])
        w.i32(c + "tgt_in", r["tgt_in"])
        w.i32(c + "tgt_out", r["tgt_out"])
        for n, t in r["init"]:
            w.f32(c + "param/" + n, t)
        w.f32(c + "logits", r["logits"])
        w.f32(c + "logprobs", r["logprobs"])
        w.f32(c + "loss", r["loss"])
        w.i32(c + "n_tokens", [r["n_tokens"]])
        for n, t in r["grad"]:
            w.f32(c + "grad/" + n, t)
        w.f32(c + "lr", r["lr"])
        w.f32(c + "step_loss", r["step_loss"])
        for n, t in r["adam"]:
            w.f32(c + "adam/" + n, t)
    size = w.save(path)
    print("wrote %s (%d records, %d bytes)" % (path, len(w.records), size))


if __name__ == "__main__":
    main()
