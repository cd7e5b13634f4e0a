"""PyTorch's fused causal attention beside ours, on the GPU: accuracy and time.

Accuracy: the shapes and inputs of tests/gpu_train_ops.cu's attention checks
(qkv uniform in [-1.5, 1.5), dout in [-1, 1), both rounded to bf16; dqkv's
gradient against a float64 reference) and its norm: an element's error is
|got - ref| / max(|ref|, rms(ref)), the worst over the tensor. Time: the
gpt:d12 shape (B 16, 12 heads, T 1024, head 64), forward and forward+backward
in bf16, CUDA events, median of 20 after 3 warm-ups.

    python3 bench/gpt/torch_attention.py
"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def err(got, ref):
    got, ref = got.double().flatten(), ref.double().flatten()
    floor = ref.pow(2).mean().sqrt()
    return ((got - ref).abs() / torch.maximum(ref.abs(), floor)).max().item()


def heads(x, B, T, NH):  # (B, T, C) -> (B, NH, T, hs)
    return x.view(B, T, NH, -1).transpose(1, 2)


def accuracy(B, T, C, NH, backend):
    g = torch.Generator().manual_seed(1)
    qkv = ((torch.rand(B, T, 3 * C, generator=g) * 2 - 1) * 1.5).bfloat16()
    dout = (torch.rand(B, T, C, generator=g) * 2 - 1).bfloat16()
    res = {}
    for kind in ("ref", backend):
        dev, dt = ("cpu", torch.float64) if kind == "ref" else ("cuda", torch.bfloat16)
        x = qkv.to(dev, dt).requires_grad_(True)
        q, k, v = (heads(t, B, T, NH) for t in x.split(C, dim=2))
        if kind == "ref":
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            with sdpa_kernel(BACKENDS[backend]):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out = out.transpose(1, 2).reshape(B, T, C)
        out.backward(dout.to(dev, dt))
        res[kind] = (out.detach().cpu(), x.grad.cpu())
    (o_ref, g_ref), (o, gr) = res["ref"], res[backend]
    parts = [err(gr[..., i * C:(i + 1) * C], g_ref[..., i * C:(i + 1) * C]) for i in range(3)]
    return err(o, o_ref), parts


def timing(backend, B=16, T=1024, C=768, NH=12):
    x = torch.randn(B, T, 3 * C, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dout = torch.randn(B, T, C, device="cuda", dtype=torch.bfloat16)

    def fwd():
        q, k, v = (heads(t, B, T, NH) for t in x.split(C, dim=2))
        with sdpa_kernel(BACKENDS[backend]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def both():
        out = fwd()
        out.transpose(1, 2).reshape(B, T, C).backward(dout)

    times = []
    for fn in (fwd, both):
        t = []
        for i in range(23):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            with torch.no_grad() if fn is fwd else torch.enable_grad():
                fn()
            b.record()
            torch.cuda.synchronize()
            if i >= 3:
                t.append(a.elapsed_time(b) * 1e3)
        times.append(sorted(t)[len(t) // 2])
    return times[0], times[1] - times[0]


print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}")
for backend in BACKENDS:
    try:
        f_us, b_us = timing(backend)
    except RuntimeError as e:
        print(f"{backend}: not available ({str(e).splitlines()[0]})")
        continue
    print(f"{backend}: gpt:d12 shape forward {f_us:.1f} us, backward {b_us:.1f} us")
    for shape in ((2, 64, 128, 4), (2, 256, 256, 4), (2, 77, 128, 2), (1, 200, 384, 3)):
        try:
            o, (dq, dk, dv) = accuracy(*shape, backend)
        except RuntimeError as e:
            print(f"  B,T,C,NH={shape}: not available ({str(e).splitlines()[0]})")
            continue
        print(f"  B,T,C,NH={shape}: max error out {o:.2e}  dq {dq:.2e}  dk {dk:.2e}  dv {dv:.2e}")
