"""torch_model: a PyTorch twin of tfm's Transformer (src/model/model.h), written
independently from the spec, for the reference dump (make_ref.py) and the
speed comparisons (bench_torch_train.py, later decode benchmarks).

It uses the same parameter names, shapes and order as the C model, so a
state can be moved across by name with no transposes. Plain tensor math
(no nn.MultiheadAttention) so every formula is visible:

  x = E[tok] * sqrt(d) + PE          PE interleaved: sin at 2i, cos at 2i+1
  post-norm: x = LN(x + Sub(x))      pre-norm: x = x + Sub(LN(x)), final LN per stack
  attention: softmax(Q K^T / sqrt(d_k) + masks) V per head, heads = column
             blocks of d_k; key pad mask everywhere, causal in decoder self-attn
             (attention "linear": φ(Q) φ(K)^T V / row sums, φ = elu + 1)
  logits = y E_out^T (shared embedding or out.proj), no bias
  loss = CrossEntropy(label_smoothing, sum, ignore_index=0)

Token ids: 0 <pad>, 1 <unk>, 2 <s>, 3 </s>.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

PAD, UNK, BOS, EOS = 0, 1, 2, 3
LN_EPS = 1e-5
LIN_EPS = 1e-6     # linear attention's normaliser (nn/layers.h LIN_EPS)


@dataclass
class Config:
    d_model: int = 512
    heads: int = 8
    enc_layers: int = 6
    dec_layers: int = 6
    d_ff: int = 2048
    vocab_size: int = 8000
    max_len: int = 130
    norm: str = "post"              # "post" or "pre"
    norm_type: str = "layernorm"    # "layernorm" or "rmsnorm" (no bias .b)
    attention: str = "softmax"      # "softmax" or "linear" (elu + 1 feature map)
    share_embeddings: bool = True
    dropout: float = 0.1            # embeddings and sublayer outputs
    attn_dropout: float = 0.0       # attention probabilities
    relu_dropout: float = 0.0       # FFN hidden layer


def _attn_names(prefix, d):
    return [(prefix + ".wq", (d, d)), (prefix + ".wk", (d, d)), (prefix + ".wv", (d, d)),
            (prefix + ".bq", (d,)), (prefix + ".bk", (d,)), (prefix + ".bv", (d,)),
            (prefix + ".wo", (d, d)), (prefix + ".bo", (d,))]


def _ffn_names(prefix, d, d_ff):
    return [(prefix + ".w1", (d_ff, d)), (prefix + ".b1", (d_ff,)),
            (prefix + ".w2", (d, d_ff)), (prefix + ".b2", (d,))]


def _ln_names(prefix, d, rms=False):
    return [(prefix + ".g", (d,))] + ([] if rms else [(prefix + ".b", (d,))])


def param_layout(cfg):
    """The tensor table of the C model: [(name, shape)] in storage order."""
    d, V = cfg.d_model, cfg.vocab_size
    rms = cfg.norm_type == "rmsnorm"
    out = []
    if cfg.share_embeddings:
        out.append(("emb.shared", (V, d)))
    else:
        out += [("emb.src", (V, d)), ("emb.tgt", (V, d)), ("out.proj", (V, d))]
    for i in range(cfg.enc_layers):
        p = "enc.%d" % i
        out += _attn_names(p + ".self", d) + _ln_names(p + ".ln1", d, rms)
        out += _ffn_names(p + ".ffn", d, cfg.d_ff) + _ln_names(p + ".ln2", d, rms)
    if cfg.norm == "pre":
        out += _ln_names("enc.ln", d, rms)
    for i in range(cfg.dec_layers):
        p = "dec.%d" % i
        out += _attn_names(p + ".self", d) + _ln_names(p + ".ln1", d, rms)
        out += _attn_names(p + ".cross", d) + _ln_names(p + ".ln2", d, rms)
        out += _ffn_names(p + ".ffn", d, cfg.d_ff) + _ln_names(p + ".ln3", d, rms)
    if cfg.norm == "pre":
        out += _ln_names("dec.ln", d, rms)
    return out


def positions(length, d, dtype=torch.float32):
    """Sinusoidal positions, interleaved: PE[p, 2i] = sin(p / 10000^(2i/d)),
    PE[p, 2i+1] = cos(same angle). Computed in float64, then cast."""
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64)
    angle = pos / torch.pow(10000.0, two_i / d)
    pe = torch.zeros(length, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d // 2])
    return pe.to(dtype)


class Transformer(torch.nn.Module):
    def __init__(self, cfg, dtype=torch.float32):
        super().__init__()
        assert cfg.norm in ("post", "pre") and cfg.d_model % cfg.heads == 0
        assert cfg.norm_type in ("layernorm", "rmsnorm")
        assert cfg.attention in ("softmax", "linear")
        self.cfg = cfg
        self.names = []
        for name, shape in param_layout(cfg):
            self.names.append(name)
            # nn.Module names cannot hold dots; the dotted name is the public one.
            self.register_parameter(name.replace(".", "_"),
                                    torch.nn.Parameter(torch.zeros(shape, dtype=dtype)))
        self.register_buffer("pe", positions(cfg.max_len, cfg.d_model, dtype), persistent=False)

    def p(self, name):
        return getattr(self, name.replace(".", "_"))

    def named(self):
        """[(dotted name, parameter)] in the C model's order."""
        return [(n, self.p(n)) for n in self.names]

    @torch.no_grad()
    def init_weights(self, gen, jitter=0.0):
        """Xavier-uniform projections, N(0, d^-1/2) embeddings, LayerNorm 1/0,
        biases 0, as model_init_weights. jitter > 0 adds N(0, jitter) to the
        biases and LayerNorm parameters so a test exercises them too."""
        d = self.cfg.d_model
        for name, t in self.named():
            if name.startswith("emb.") or name == "out.proj":
                t.copy_(torch.randn(t.shape, generator=gen, dtype=torch.float64) * d ** -0.5)
            elif t.dim() == 2:
                a = math.sqrt(6.0 / (t.shape[0] + t.shape[1]))
                t.copy_((torch.rand(t.shape, generator=gen, dtype=torch.float64) * 2 - 1) * a)
            else:
                base = 1.0 if name.endswith(".g") else 0.0
                t.copy_(base + jitter * torch.randn(t.shape, generator=gen, dtype=torch.float64))

    # ---- layers ----

    def _drop(self, x, rate):
        return F.dropout(x, rate, self.training) if rate > 0 else x

    def _ln(self, x, prefix):
        if self.cfg.norm_type == "rmsnorm":
            # RMSNorm (Zhang and Sennrich 2019): x / sqrt(mean(x²) + eps) · g
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + LN_EPS) * self.p(prefix + ".g")
        return F.layer_norm(x, (x.shape[-1],), self.p(prefix + ".g"), self.p(prefix + ".b"), LN_EPS)

    def _attn(self, prefix, xq, xkv, key_pad, causal):
        """xq (n, Tq, d), xkv (n, Tk, d); key_pad (n, Tk) True where the key is <pad>."""
        n, tq, d = xq.shape
        tk = xkv.shape[1]
        h = self.cfg.heads
        dk = d // h
        p = self.p
        q = F.linear(xq, p(prefix + ".wq"), p(prefix + ".bq")).view(n, tq, h, dk).transpose(1, 2)
        k = F.linear(xkv, p(prefix + ".wk"), p(prefix + ".bk")).view(n, tk, h, dk).transpose(1, 2)
        v = F.linear(xkv, p(prefix + ".wv"), p(prefix + ".bv")).view(n, tk, h, dk).transpose(1, 2)
        mask = key_pad[:, None, None, :]
        if causal:
            fut = torch.ones(tq, tk, dtype=torch.bool, device=xq.device).triu(1)
            mask = mask | fut[None, None]
        if self.cfg.attention == "linear":
            # Katharopoulos et al. 2020: sim(q, k) = φ(q)·φ(k), φ = elu + 1,
            # written in its quadratic form (the definition, not tfm's
            # chunked algorithm), normaliser Σ sim + 1e-6
            sim = torch.matmul(F.elu(q) + 1, (F.elu(k) + 1).transpose(-1, -2))
            sim = sim.masked_fill(mask, 0.0)
            o = torch.matmul(sim, v) / (sim.sum(-1, keepdim=True) + LIN_EPS)
            o = o.transpose(1, 2).reshape(n, tq, d)
            return F.linear(o, p(prefix + ".wo"), p(prefix + ".bo"))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dk)      # (n, h, tq, tk)
        s = s.masked_fill(mask, float("-inf"))
        a = self._drop(torch.softmax(s, dim=-1), self.cfg.attn_dropout)
        o = torch.matmul(a, v).transpose(1, 2).reshape(n, tq, d)
        return F.linear(o, p(prefix + ".wo"), p(prefix + ".bo"))

    def _ffn(self, prefix, x):
        p = self.p
        hid = self._drop(torch.relu(F.linear(x, p(prefix + ".w1"), p(prefix + ".b1"))),
                         self.cfg.relu_dropout)
        return F.linear(hid, p(prefix + ".w2"), p(prefix + ".b2"))

    def _sub(self, x, ln, fn):
        """One residual sublayer with its LayerNorm, post- or pre-norm."""
        if self.cfg.norm == "post":
            return self._ln(x + self._drop(fn(x), self.cfg.dropout), ln)
        return x + self._drop(fn(self._ln(x, ln)), self.cfg.dropout)

    def _embed(self, tokens, table):
        t = tokens.shape[1]
        x = F.embedding(tokens, table) * math.sqrt(self.cfg.d_model) + self.pe[:t]
        return self._drop(x, self.cfg.dropout)

    def encode(self, src):
        cfg = self.cfg
        pad = src.eq(PAD)
        x = self._embed(src, self.p("emb.shared" if cfg.share_embeddings else "emb.src"))
        for i in range(cfg.enc_layers):
            pre = "enc.%d" % i
            x = self._sub(x, pre + ".ln1", lambda y: self._attn(pre + ".self", y, y, pad, False))
            x = self._sub(x, pre + ".ln2", lambda y: self._ffn(pre + ".ffn", y))
        if cfg.norm == "pre":
            x = self._ln(x, "enc.ln")
        return x, pad

    def decode(self, tgt_in, memory, src_pad):
        cfg = self.cfg
        pad = tgt_in.eq(PAD)
        y = self._embed(tgt_in, self.p("emb.shared" if cfg.share_embeddings else "emb.tgt"))
        for i in range(cfg.dec_layers):
            pre = "dec.%d" % i
            y = self._sub(y, pre + ".ln1", lambda z: self._attn(pre + ".self", z, z, pad, True))
            y = self._sub(y, pre + ".ln2",
                          lambda z: self._attn(pre + ".cross", z, memory, src_pad, False))
            y = self._sub(y, pre + ".ln3", lambda z: self._ffn(pre + ".ffn", z))
        if cfg.norm == "pre":
            y = self._ln(y, "dec.ln")
        return y

    def forward(self, src, tgt_in):
        """Returns the logits (before log-softmax), (n, tgt_len, V)."""
        memory, src_pad = self.encode(src)
        y = self.decode(tgt_in, memory, src_pad)
        w = self.p("emb.shared" if self.cfg.share_embeddings else "out.proj")
        return F.linear(y, w)


def loss_sums(logits, tgt_out, label_smoothing):
    """(label-smoothed loss sum, nll sum, non-pad token count), as LossStats."""
    flat = logits.reshape(-1, logits.shape[-1])
    tgt = tgt_out.reshape(-1)
    loss = F.cross_entropy(flat, tgt, ignore_index=PAD, reduction="sum",
                           label_smoothing=label_smoothing)
    nll = F.cross_entropy(flat, tgt, ignore_index=PAD, reduction="sum")
    return loss, nll, int(tgt.ne(PAD).sum())


def noam_lr(step, d_model, warmup, factor):
    """lr_at for LR_NOAM: factor * d^-0.5 * min(step^-0.5, step * warmup^-1.5)."""
    step = max(step, 1)
    return factor / math.sqrt(d_model) * min(step ** -0.5, step * warmup ** -1.5)


def make_batch(src_sents, tgt_sents):
    """Pads token lists (ids >= 4) into (src, tgt_in, tgt_out) int64 tensors:
    src = tokens + </s>; tgt_in = <s> + tokens; tgt_out = tokens + </s>."""
    n = len(src_sents)
    s_len = max(len(s) for s in src_sents) + 1
    t_len = max(len(t) for t in tgt_sents) + 1
    src = torch.zeros(n, s_len, dtype=torch.long)
    tin = torch.zeros(n, t_len, dtype=torch.long)
    tout = torch.zeros(n, t_len, dtype=torch.long)
    for i, (s, t) in enumerate(zip(src_sents, tgt_sents)):
        src[i, : len(s) + 1] = torch.tensor(list(s) + [EOS])
        tin[i, : len(t) + 1] = torch.tensor([BOS] + list(t))
        tout[i, : len(t) + 1] = torch.tensor(list(t) + [EOS])
    return src, tin, tout
