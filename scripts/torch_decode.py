#!/usr/bin/python3
"""torch_decode: PyTorch's side of the translation benchmark (bench_translate.sh).

Loads a .tfm model file directly (docs/model-format.md), puts its weights
into scripts/torch_model.py's Transformer, and translates a text file with
an incremental decoder written here on top of that model's weights: the
source is encoded once per batch, cross-attention keys/values are computed
once, each decoder layer keeps a self-attention key/value cache (preallocated,
written in place), QKV and cross-KV projections are fused into one matrix
each. Greedy and beam search follow src/decode/ (decoder.c, beam.c): candidates are the 2k best
continuations (never <pad> or <s>), an </s> among the first k finishes a
hypothesis, scores are logprob / ((5+len)/6)^alpha with len counting </s>,
output length limit min(a*src_len + b, max_len), a sentence stops when k
hypotheses finished or no live one can beat the best finished. Finished
sentences leave the batch at once (the cache rows are gathered away).

Models with `model.output_vocab "target"` score only their output pieces
(the OUTV section): the output projection covers those rows, the
log-softmax those columns, and a chosen column maps back to its piece id,
as tfm does. --int8 runs every linear product through PyTorch's own
dynamic int8 quantization (torch.ao.quantization.quantize_dynamic on
nn.Linear: int8 weights, activations quantized at run time), the products
tfm's --precision int8 quantizes.

Text to ids goes through `tfm bpe encode` with the model's own vocabulary
(VOCB section), ids back to text through `tfm bpe decode`, outside the timed
part. Batches are consecutive input lines, as `tfm translate` takes them.

Prints one JSON line: sentences, seconds (best of --repeat, decoding only:
encoder + decoder + search, no model load or BPE), sent_per_s, tokens (output
tokens without </s>, from the best run), threads, blas (the BLAS library file
loaded).
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_model  # noqa: E402
from torch_model import PAD, BOS, EOS  # noqa: E402


def read_tfm(path):
    """(config dict, vocabulary bytes, {name: float32 tensor}) of a .tfm file."""
    conf, vocab, tensors, _ = read_tfm_outputs(path)
    return conf, vocab, tensors


def read_tfm_outputs(path):
    """read_tfm's three, and the output pieces (OUTV section; None when every
    piece is an output)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"TFMMODEL":
        sys.exit("%s: not a tfm model file" % path)
    pos = 16
    conf = vocab = out_ids = None
    tensors = {}
    while pos + 12 <= len(data):
        tag = data[pos:pos + 4]
        (length,) = struct.unpack_from("<Q", data, pos + 4)
        pos += 12
        payload = memoryview(data)[pos:pos + length]
        pos += length
        if tag == b"CONF":
            conf = json.loads(bytes(payload).decode("utf-8"))
        elif tag == b"VOCB":
            vocab = bytes(payload)
        elif tag == b"TENS":
            (count,) = struct.unpack_from("<I", payload, 0)
            p = 4
            for _ in range(count):
                (nlen,) = struct.unpack_from("<I", payload, p)
                name = bytes(payload[p + 4:p + 4 + nlen]).decode()
                p += 4 + nlen
                rows, cols = struct.unpack_from("<II", payload, p)
                p += 8
                t = torch.frombuffer(bytearray(payload[p:p + 4 * rows * cols]), dtype=torch.float32)
                tensors[name] = t.view(rows, cols)
                p += 4 * rows * cols
        elif tag == b"OUTV":
            (count,) = struct.unpack_from("<I", payload, 0)
            out_ids = list(struct.unpack_from("<%dI" % count, payload, 4))
        elif tag == b"END ":
            break
    if conf is None or vocab is None or not tensors:
        sys.exit("%s: missing CONF, VOCB or TENS" % path)
    return conf, vocab, tensors, out_ids


def build_model(conf, tensors):
    m = conf["model"]
    share = m.get("share_embeddings", True)
    emb = tensors["emb.shared" if share else "emb.src"]
    cfg = torch_model.Config(d_model=m["d_model"], heads=m["heads"], enc_layers=m["enc_layers"],
                             dec_layers=m["dec_layers"], d_ff=m["d_ff"], vocab_size=emb.shape[0],
                             max_len=conf["data"]["max_len"] + 2, norm=m.get("norm", "post"),
                             share_embeddings=share, dropout=0.0)
    model = torch_model.Transformer(cfg)
    with torch.no_grad():
        for name, p in model.named():
            p.copy_(tensors[name].reshape(p.shape))
    model.eval()
    return model


def _linear(w, b=None):
    lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
    with torch.no_grad():
        lin.weight.copy_(w)
        if b is not None:
            lin.bias.copy_(b)
    return lin


def _layer_linears(p, pre, cross):
    """The products of layer pre ("enc.0", "dec.3"): self-attention's fused
    Q|K|V and output, the FFN's two, and with cross the cross-attention's
    query, fused K|V and output."""
    def cat(*names):
        return torch.cat([p(pre + "." + n) for n in names])
    lin = {"qkv": _linear(cat("self.wq", "self.wk", "self.wv"), cat("self.bq", "self.bk", "self.bv")),
           "o": _linear(p(pre + ".self.wo"), p(pre + ".self.bo")),
           "f1": _linear(p(pre + ".ffn.w1"), p(pre + ".ffn.b1")),
           "f2": _linear(p(pre + ".ffn.w2"), p(pre + ".ffn.b2"))}
    if cross:
        lin["cq"] = _linear(p(pre + ".cross.wq"), p(pre + ".cross.bq"))
        lin["ckv"] = _linear(cat("cross.wk", "cross.wv"), cat("cross.bk", "cross.bv"))
        lin["co"] = _linear(p(pre + ".cross.wo"), p(pre + ".cross.bo"))
    return lin


class Decoder:
    """Incremental decoder over a torch_model.Transformer's weights. Every
    linear product is an nn.Linear (quantized by quantize_dynamic with int8)."""

    def __init__(self, model, out_ids=None, int8=False):
        self.m = model
        cfg = model.cfg
        self.cfg = cfg
        p = model.p
        lin = torch.nn.ModuleDict()
        for side, n_layers in (("enc", cfg.enc_layers), ("dec", cfg.dec_layers)):
            for i in range(n_layers):
                pre = "%s.%d" % (side, i)
                for k, l in _layer_linears(p, pre, side == "dec").items():
                    lin[pre.replace(".", "") + "_" + k] = l
        share = cfg.share_embeddings
        self.emb = p("emb.shared" if share else "emb.tgt")
        out = p("emb.shared" if share else "out.proj")
        # model.output_vocab "target": the logits are the output pieces' only
        self.ids = torch.tensor(out_ids, dtype=torch.long) if out_ids is not None else None
        lin["out"] = _linear(out.index_select(0, self.ids) if self.ids is not None else out)
        lin.eval()
        if int8:
            lin = torch.ao.quantization.quantize_dynamic(lin, {torch.nn.Linear}, dtype=torch.qint8)
        self.lin = lin

        def layer(pre, keys, norms):
            L = {k: lin[pre.replace(".", "") + "_" + k] for k in keys}
            for j in range(1, norms + 1):
                L["g%d" % j], L["n%d" % j] = p(pre + ".ln%d.g" % j), p(pre + ".ln%d.b" % j)
            return L

        self.layers = [layer("dec.%d" % i, ("qkv", "o", "cq", "ckv", "co", "f1", "f2"), 3)
                       for i in range(cfg.dec_layers)]
        self.enc = [layer("enc.%d" % i, ("qkv", "o", "f1", "f2"), 2) for i in range(cfg.enc_layers)]
        self.out = lin["out"]
        # the output columns of <pad> and <s>, never chosen
        cols = self.ids.tolist() if self.ids is not None else list(range(out.shape[0]))
        self.banned = [c for c, tok in enumerate(cols) if tok in (PAD, BOS)]
        self.scale = math.sqrt(cfg.d_model)
        self.T = cfg.max_len
        self.post = cfg.norm == "post"

    def token(self, col):
        """The piece id of output column(s) col (an int or a LongTensor)."""
        if self.ids is None:
            return col
        return self.ids[col] if torch.is_tensor(col) else int(self.ids[col])

    def _ln(self, x, g, b):
        return F.layer_norm(x, (x.shape[-1],), g, b, torch_model.LN_EPS)

    def _in(self, x, L, j):
        """Sublayer j's input: pre-norm LN(x), post-norm x."""
        return x if self.post else self._ln(x, L["g%d" % j], L["n%d" % j])

    def _out(self, x, a, L, j):
        """Sublayer j's output from its result a: post-norm LN(x + a), pre-norm x + a."""
        return self._ln(x + a, L["g%d" % j], L["n%d" % j]) if self.post else x + a

    def _ffn(self, x, L, j):
        """The feed-forward sublayer (number j) with its residual and norm."""
        return self._out(x, L["f2"](torch.relu(L["f1"](self._in(x, L, j)))), L, j)

    @staticmethod
    def _attend(q, k, v, mask):
        """softmax(q·kᵀ/sqrt(dk) + mask)·v over the last two dimensions."""
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        return torch.matmul(torch.softmax(s if mask is None else s + mask, dim=-1), v)

    def encode(self, src):
        """The encoder stack over src (n, S), as torch_model's, through self.lin."""
        cfg = self.cfg
        n, S = src.shape
        h, d = cfg.heads, cfg.d_model
        dk = d // h
        pad = src.eq(PAD)
        mask = torch.zeros(n, 1, 1, S).masked_fill(pad[:, None, None, :], float("-inf"))
        x = F.embedding(src, self.m.p("emb.shared" if cfg.share_embeddings else "emb.src"))
        x = x * self.scale + self.m.pe[:S]
        for E in self.enc:
            y = self._in(x, E, 1)
            qkv = E["qkv"](y).view(n, S, 3, h, dk).permute(2, 0, 3, 1, 4)
            o = self._attend(qkv[0], qkv[1], qkv[2], mask).transpose(1, 2).reshape(n, S, d)
            x = self._ffn(self._out(x, E["o"](o), E, 1), E, 2)
        if not self.post:
            x = self._ln(x, self.m.p("enc.ln.g"), self.m.p("enc.ln.b"))
        return x, pad

    def begin(self, src, k):
        """Encodes src (n, S) and sets up caches for n*k rows."""
        cfg = self.cfg
        n, S = src.shape
        h, d = cfg.heads, cfg.d_model
        dk = d // h
        mem, pad = self.encode(src)
        R = n * k
        self.h, self.dk = h, dk
        self.cross = []
        for L in self.layers:
            kv = L["ckv"](mem).view(n, S, 2, h, dk).permute(2, 0, 3, 1, 4)
            if k > 1:
                kv = kv.repeat_interleave(k, dim=1)
            self.cross.append((kv[0].contiguous(), kv[1].contiguous()))
        mask = torch.zeros(n, 1, 1, S).masked_fill(pad[:, None, None, :], float("-inf"))
        self.mask = mask.repeat_interleave(k, dim=0) if k > 1 else mask
        self.kc = [torch.empty(R, h, self.T, dk) for _ in self.layers]
        self.vc = [torch.empty(R, h, self.T, dk) for _ in self.layers]

    def select(self, rows, t):
        """Keeps rows `rows` (a LongTensor of current row indices) of every cache."""
        self.cross = [(kk.index_select(0, rows), vv.index_select(0, rows)) for kk, vv in self.cross]
        self.mask = self.mask.index_select(0, rows)
        self.kc = [self._gather(c, rows, t) for c in self.kc]
        self.vc = [self._gather(c, rows, t) for c in self.vc]

    def _gather(self, c, rows, t):
        """A new cache holding positions < t of rows `rows` (only those are copied)."""
        new = torch.empty((len(rows),) + tuple(c.shape[1:]))
        if t > 0:
            torch.index_select(c[:, :, :t], 0, rows, out=new[:, :, :t])
        return new

    def step(self, prev, t):
        """Feeds prev (R,) piece ids at position t; returns log-probabilities
        (R, output columns): token(column) is a column's piece."""
        R = prev.shape[0]
        h, dk, d = self.h, self.dk, self.cfg.d_model
        x = F.embedding(prev, self.emb) * self.scale + self.m.pe[t]
        for i, L in enumerate(self.layers):
            # self-attention
            y = self._in(x, L, 1)
            qkv = L["qkv"](y).view(R, 3, h, dk)
            self.kc[i][:, :, t] = qkv[:, 1]
            self.vc[i][:, :, t] = qkv[:, 2]
            q = qkv[:, 0].unsqueeze(2)                                   # (R, h, 1, dk)
            o = self._attend(q, self.kc[i][:, :, : t + 1], self.vc[i][:, :, : t + 1], None)
            x = self._out(x, L["o"](o.view(R, d)), L, 1)
            # cross-attention
            q = L["cq"](self._in(x, L, 2)).view(R, h, 1, dk)
            o = self._attend(q, self.cross[i][0], self.cross[i][1], self.mask)
            x = self._out(x, L["co"](o.view(R, d)), L, 2)
            x = self._ffn(x, L, 3)
        if not self.post:
            x = self._ln(x, self.m.p("dec.ln.g"), self.m.p("dec.ln.b"))
        lp = torch.log_softmax(self.out(x), dim=-1)
        lp[:, self.banned] = float("-inf")
        return lp


def penalty(length, alpha):
    return 1.0 if alpha == 0 else ((5.0 + length) / 6.0) ** alpha


def limits(src_lens, a, b, T):
    return [max(1, min(T, int(a * n + b))) for n in src_lens]


def greedy(dec, src, src_lens, a, b):
    """src (n, S) LongTensor; returns a list of n token lists."""
    n = src.shape[0]
    lim = limits(src_lens, a, b, dec.T)
    dec.begin(src, 1)
    out = [[] for _ in range(n)]
    alive = list(range(n))                     # row -> sentence
    prev = torch.full((n,), BOS, dtype=torch.long)
    t = 0
    while alive:
        lp = dec.step(prev, t)
        best = dec.token(lp.argmax(dim=-1))
        toks = best.tolist()
        keep = []
        for r, s in enumerate(alive):
            tok = toks[r]
            if tok == EOS:
                continue
            out[s].append(tok)
            if t + 1 < lim[s]:
                keep.append(r)
        if len(keep) != len(alive):
            rows = torch.tensor(keep, dtype=torch.long)
            alive = [alive[r] for r in keep]
            if not alive:
                break
            dec.select(rows, t + 1)
            best = best.index_select(0, rows)
        prev = best
        t += 1
    return out


def beam_search(dec, src, src_lens, k, alpha, a, b):
    n = src.shape[0]
    lim = limits(src_lens, a, b, dec.T)
    dec.begin(src, k)
    fin = [[] for _ in range(n)]               # (score, tokens)
    alive = list(range(n))                     # sentence of each block of k rows
    hist = [[] for _ in range(n * k)]
    score = torch.full((n * k,), float("-inf"))
    score[::k] = 0.0
    prev = torch.full((n * k,), BOS, dtype=torch.long)
    t = 0
    while alive:
        nb = len(alive)
        lp = dec.step(prev, t)
        V = lp.shape[1]
        cand = (score[:, None] + lp).view(nb, k * V)
        cs, ci = cand.topk(2 * k, dim=1)
        cs, ci = cs.tolist(), ci.tolist()
        new_alive, parents, toks, scores, new_hist = [], [], [], [], []
        for j, s in enumerate(alive):
            last = t + 1 >= lim[s]
            live = []
            for i in range(2 * k):
                sc = cs[j][i]
                if sc == float("-inf"):
                    break
                row = j * k + ci[j][i] // V
                tok = dec.token(ci[j][i] % V)
                if tok == EOS:
                    if i < k:
                        fin[s].append((sc / penalty(t + 1, alpha), hist[row]))
                    continue
                if len(live) == k:
                    continue
                if last:
                    if len(fin[s]) < 2 * k:
                        fin[s].append((sc / penalty(t + 1, alpha), hist[row] + [tok]))
                    live.append(None)
                    continue
                live.append((row, tok, sc))
            if last:
                continue
            best_fin = max((f[0] for f in fin[s]), default=float("-inf"))
            best_live = max((c[2] / penalty(lim[s], alpha) for c in live), default=float("-inf"))
            if not live or len(fin[s]) >= k or best_fin >= best_live:
                continue
            new_alive.append(s)
            for c in live:
                parents.append(c[0])
                toks.append(c[1])
                scores.append(c[2])
                new_hist.append(hist[c[0]] + [c[1]])
            for _ in range(k - len(live)):           # idle rows of a sentence with < k live
                parents.append(j * k)
                toks.append(PAD)
                scores.append(float("-inf"))
                new_hist.append([])
        alive = new_alive
        if not alive:
            break
        dec.select(torch.tensor(parents, dtype=torch.long), t + 1)
        prev = torch.tensor(toks, dtype=torch.long)
        score = torch.tensor(scores)
        hist = new_hist
        t += 1
    return [max(f, key=lambda x: x[0])[1] if f else [] for f in fin]


def run_tfm_bpe(tfm, mode, vocab_path, text):
    r = subprocess.run([tfm, "bpe", mode, "-v", vocab_path], input=text.encode("utf-8"),
                       stdout=subprocess.PIPE, check=True)
    return r.stdout.decode("utf-8")


def blas_library():
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.lower() and "/" in line}
        return ",".join(sorted(libs))
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("input", help="source text, one sentence a line")
    ap.add_argument("--tfm", default="./tfm")
    ap.add_argument("-b", "--beam", type=int, default=1)
    ap.add_argument("--alpha", type=float, default=None)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-len-a", type=float, default=None)
    ap.add_argument("--max-len-b", type=int, default=None)
    ap.add_argument("--lines", type=int, default=0, help="only the first N lines")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("-o", "--output", help="write the translations (text) here")
    ap.add_argument("--int8", action="store_true",
                    help="the linear products in int8 (torch's quantize_dynamic)")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    conf, vocab_bytes, tensors, out_ids = read_tfm_outputs(args.model)
    model = build_model(conf, tensors)
    dc = conf.get("decode", {})
    alpha = args.alpha if args.alpha is not None else dc.get("alpha", 0.6)
    a = args.max_len_a if args.max_len_a is not None else dc.get("max_len_a", 1.0)
    b = args.max_len_b if args.max_len_b is not None else dc.get("max_len_b", 50)

    with tempfile.NamedTemporaryFile("wb", suffix=".vocab", delete=False) as vf:
        vf.write(vocab_bytes)
        vocab_path = vf.name
    try:
        piece_id = {}
        for line in vocab_bytes.decode("utf-8").split("\n")[2:]:
            f = line.split(" ")
            if len(f) != 3 or f[0] == "merge":
                break
            piece_id[f[2]] = int(f[0])
        id_piece = {v: p for p, v in piece_id.items()}
        with open(args.input, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if args.lines:
            lines = lines[: args.lines]
        enc = run_tfm_bpe(args.tfm, "encode", vocab_path, "\n".join(lines) + "\n").split("\n")
        max_src = model.cfg.max_len - 1            # as tfm: room for </s>
        sents = [[piece_id[p] for p in l.split(" ") if p][:max_src] for l in enc[: len(lines)]]

        best_t, outs = None, None
        with torch.inference_mode():
            dec = Decoder(model, out_ids, args.int8)
            for _ in range(args.repeat):
                res = [None] * len(sents)
                t0 = time.perf_counter()
                for i in range(0, len(sents), args.batch_size):
                    idx = [j for j in range(i, min(i + args.batch_size, len(sents))) if sents[j]]
                    if not idx:
                        continue
                    S = max(len(sents[j]) for j in idx) + 1
                    src = torch.zeros(len(idx), S, dtype=torch.long)
                    for r, j in enumerate(idx):
                        src[r, : len(sents[j]) + 1] = torch.tensor(sents[j] + [EOS])
                    lens = [len(sents[j]) for j in idx]
                    if args.beam == 1:
                        hyp = greedy(dec, src, lens, a, b)
                    else:
                        hyp = beam_search(dec, src, lens, args.beam, alpha, a, b)
                    for r, j in enumerate(idx):
                        res[j] = hyp[r]
                dt = time.perf_counter() - t0
                if best_t is None or dt < best_t:
                    best_t, outs = dt, res
        if args.output:
            pieces = "\n".join(" ".join(id_piece[x] for x in (o or [])) for o in outs) + "\n"
            text = run_tfm_bpe(args.tfm, "decode", vocab_path, pieces)
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
    finally:
        os.unlink(vocab_path)
    print(json.dumps({"sentences": len(sents), "seconds": round(best_t, 4),
                      "sent_per_s": round(len(sents) / best_t, 2),
                      "tokens": sum(len(o or []) for o in outs), "threads": torch.get_num_threads(),
                      "blas": blas_library()}))


if __name__ == "__main__":
    main()
