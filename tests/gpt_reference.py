#!/usr/bin/env python3
"""gpt_reference.py -- the GPT of src/train/models/gpt.c rebuilt in PyTorch, for
tests/train_gpt_torch.c: the loss and every gradient of the same parameters on
the same batch, computed independently.

    python3 gpt_reference.py DIR

DIR holds what the C test wrote:
    model.txt    "spec S", "config L C H V Vp T", "batch B S", "params P", then
                 one "tensor NAME OFFSET NUMEL NDIM D0 [D1]" line per parameter
                 tensor, in the C table's order
    params.bin   the P parameters, float32 little-endian, the C flat layout
    tokens.bin   the inputs  (B,S) int32 little-endian, each in [0, V)
    targets.bin  the targets (B,S) int32 little-endian, each in [0, V)
and this script writes back
    loss.txt     the mean cross-entropy over the B*S predictions (Python repr)
    grads.bin    the P gradients of that loss, float32, the same flat layout.

The model is GPT-2 written out in plain fp32 on the CPU (no float64, no TF32,
no fused kernels): token + position embeddings; per block a pre-LayerNorm
(eps 1e-5) causal multi-head self-attention (softmax(q k^T / sqrt(hs)) v,
masked to j <= i) with c_attn producing q, k, v side by side, then a 4x MLP
with GELU(approximate='tanh'); ln_f; and an LM head tied to wte over the padded
vocabulary Vp, the loss taken over the first V logits only. Linear weights are
(out, in), as nn.Linear and the C code store them. Only the standard library
and torch are used; exit status 0 on success, 1 with a message on stderr.
"""
import array
import math
import os
import sys

BLOCK = [  # per block, in the C table's order: (name, shape in terms of C)
    ("ln_1.weight", lambda C: (C,)),
    ("ln_1.bias", lambda C: (C,)),
    ("attn.c_attn.weight", lambda C: (3 * C, C)),
    ("attn.c_attn.bias", lambda C: (3 * C,)),
    ("attn.c_proj.weight", lambda C: (C, C)),
    ("attn.c_proj.bias", lambda C: (C,)),
    ("ln_2.weight", lambda C: (C,)),
    ("ln_2.bias", lambda C: (C,)),
    ("mlp.c_fc.weight", lambda C: (4 * C, C)),
    ("mlp.c_fc.bias", lambda C: (4 * C,)),
    ("mlp.c_proj.weight", lambda C: (C, 4 * C)),
    ("mlp.c_proj.bias", lambda C: (C,)),
]


def fail(msg):
    sys.stderr.write("gpt_reference.py: %s\n" % msg)
    sys.exit(1)


def expected_table(L, C, Vp, T):
    """The C table's names and shapes, in order."""
    want = [("wte", (Vp, C)), ("wpe", (T, C))]
    for l in range(L):
        want += [("h.%d.%s" % (l, n), shape(C)) for n, shape in BLOCK]
    want += [("ln_f.weight", (C,)), ("ln_f.bias", (C,))]
    return want


def read_model(d):
    cfg, table = {}, []
    with open(os.path.join(d, "model.txt")) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "tensor":
                ndim = int(w[4])
                shape = tuple(int(x) for x in w[5:5 + ndim])
                table.append((w[1], int(w[2]), int(w[3]), shape))
            elif w[0] == "spec":
                cfg["spec"] = w[1]
            else:
                cfg[w[0]] = [int(x) for x in w[1:]]
    for key in ("config", "batch", "params"):
        if key not in cfg:
            fail("%s/model.txt has no '%s' line" % (d, key))
    L, C, H, V, Vp, T = cfg["config"]
    B, S = cfg["batch"]
    (P,) = cfg["params"]
    want = expected_table(L, C, Vp, T)
    got = [(name, shape) for name, _, _, shape in table]
    if got != want:
        fail("the parameter table is not GPT-2's for L=%d C=%d Vp=%d T=%d:\n  got  %s\n  want %s"
             % (L, C, Vp, T, got, want))
    off = 0
    for name, offset, numel, shape in table:
        if offset != off or numel != math.prod(shape):
            fail("tensor %s: offset %d, %d elements; expected offset %d, %d elements"
                 % (name, offset, numel, off, math.prod(shape)))
        off += numel
    if off != P:
        fail("the tensors hold %d parameters, the header says %d" % (off, P))
    if C % H or not (1 <= S <= T) or not (V <= Vp):
        fail("impossible config %s, batch %s" % (cfg["config"], cfg["batch"]))
    return (L, C, H, V, Vp, T, B, S, P), table


def read_array(path, typecode, n):
    a = array.array(typecode)
    if a.itemsize != 4:
        fail("array typecode %r is %d bytes here, not 4" % (typecode, a.itemsize))
    with open(path, "rb") as f:
        data = f.read()
    if len(data) != 4 * n:
        fail("%s is %d bytes, expected %d" % (path, len(data), 4 * n))
    a.frombytes(data)
    if sys.byteorder != "little":
        a.byteswap()
    return a


def write_atomic(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def gpt_loss(torch, F, p, tok, tgt, L, C, H, V, Vp, T):
    """Mean cross-entropy of the GPT with parameters p (name -> tensor) on
    tok (B,S) predicting tgt (B,S)."""
    B, S = tok.shape
    hs = C // H
    x = F.embedding(tok, p["wte"]) + p["wpe"][:S]  # (B,S,C)
    causal = torch.ones(S, S, dtype=torch.bool).tril()  # (S,S): j <= i
    for l in range(L):
        def w(n):
            return p["h.%d.%s" % (l, n)]
        h = F.layer_norm(x, (C,), w("ln_1.weight"), w("ln_1.bias"), eps=1e-5)
        qkv = F.linear(h, w("attn.c_attn.weight"), w("attn.c_attn.bias"))  # (B,S,3C)
        q, k, v = qkv.split(C, dim=2)  # (B,S,C) each; head j is columns [j*hs, (j+1)*hs)
        q = q.view(B, S, H, hs).transpose(1, 2)  # (B,H,S,hs)
        k = k.view(B, S, H, hs).transpose(1, 2)
        v = v.view(B, S, H, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B,H,S,S)
        att = att.masked_fill(~causal, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, S, C)  # (B,S,C)
        x = x + F.linear(y, w("attn.c_proj.weight"), w("attn.c_proj.bias"))
        h = F.layer_norm(x, (C,), w("ln_2.weight"), w("ln_2.bias"), eps=1e-5)
        h = F.gelu(F.linear(h, w("mlp.c_fc.weight"), w("mlp.c_fc.bias")), approximate="tanh")
        x = x + F.linear(h, w("mlp.c_proj.weight"), w("mlp.c_proj.bias"))
    x = F.layer_norm(x, (C,), p["ln_f.weight"], p["ln_f.bias"], eps=1e-5)
    logits = F.linear(x, p["wte"])  # (B,S,Vp): the head tied to the padded wte
    return F.cross_entropy(logits[..., :V].reshape(B * S, V), tgt.reshape(B * S))


def main(argv):
    if len(argv) != 2:
        fail("usage: gpt_reference.py DIR")
    d = argv[1]
    (L, C, H, V, Vp, T, B, S, P), table = read_model(d)
    flat = read_array(os.path.join(d, "params.bin"), "f", P)
    tok = read_array(os.path.join(d, "tokens.bin"), "i", B * S)
    tgt = read_array(os.path.join(d, "targets.bin"), "i", B * S)
    if min(tok) < 0 or max(tok) >= V or min(tgt) < 0 or max(tgt) >= V:
        fail("a token or target outside [0, %d)" % V)

    import torch
    import torch.nn.functional as F

    torch.set_default_dtype(torch.float32)
    torch.set_num_threads(1)
    p = {}
    for name, offset, numel, shape in table:
        t = torch.tensor(flat[offset:offset + numel].tolist(), dtype=torch.float32)
        p[name] = t.reshape(shape).requires_grad_(True)
    tok_t = torch.tensor(tok.tolist(), dtype=torch.long).reshape(B, S)
    tgt_t = torch.tensor(tgt.tolist(), dtype=torch.long).reshape(B, S)

    loss = gpt_loss(torch, F, p, tok_t, tgt_t, L, C, H, V, Vp, T)
    if loss.dtype != torch.float32:
        fail("the loss came out as %s, not float32" % loss.dtype)
    loss.backward()

    out = array.array("f", bytes(4 * P))
    for name, offset, numel, shape in table:
        g = p[name].grad
        if g is None:
            fail("tensor %s got no gradient" % name)
        out[offset:offset + numel] = array.array("f", g.detach().reshape(-1).tolist())
    if sys.byteorder != "little":
        out.byteswap()
    write_atomic(os.path.join(d, "grads.bin"), out.tobytes())
    write_atomic(os.path.join(d, "loss.txt"), ("%r\n" % loss.item()).encode())
    print("gpt_reference.py: torch %s, %s on %d x %d tokens: loss %.6f, %d gradients"
          % (torch.__version__, "L=%d,C=%d,H=%d,V=%d(Vp %d),T=%d" % (L, C, H, V, Vp, T), B, S,
             loss.item(), P))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
