"""PyTorch baseline for `symtrain train --model gpt:...`: the same GPT-2
architecture (token + position embeddings, pre-LayerNorm blocks of causal
self-attention and a 4x tanh-GELU MLP, ln_f, LM head tied to the token
embedding over a vocabulary padded to a multiple of 128), AdamW (betas 0.9,
0.999, weight decay 0.01 on matrices), clipping at norm 1, random tokens.

CPU: fp32, DDP over gloo with RANKS processes and THREADS each (the global
batch split over them), like symtrain's PEs. GPU (--device cuda): bf16
autocast, flash SDPA, fused AdamW, torch.compile unless --eager; one GPU, or
under torchrun one GPU per process (LOCAL_RANK) with DDP over NCCL, or FSDP
(--fsdp: FSDP2's fully_shard per block and at the root, AdamW's foreach
kernels, as fused AdamW over sharded parameters is not assumed). Under
torchrun --batch is still the global batch.

Prints one line of key=value pairs: tokens_per_s over the timed steps (after a
warm-up), the step time and, on the GPU, the peak memory.

    python3 torch_gpt.py --L 4 --C 128 --H 4 --V 256 --T 128 --batch 16 \
        --ranks 4 --threads 1 --steps 60
    python3 torch_gpt.py --L 12 --C 768 --H 12 --V 50257 --T 1024 --batch 16 \
        --device cuda --steps 40
    torchrun --nproc_per_node 8 torch_gpt.py --L 12 --C 768 --H 12 --V 50257 \
        --T 1024 --batch 128 --device cuda --steps 40
"""
import argparse
import math
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln_1 = nn.LayerNorm(C)
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.mlp_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, C, H, V, T):
        super().__init__()
        self.Vp = (V + 127) // 128 * 128
        self.wte = nn.Embedding(self.Vp, C)
        self.wpe = nn.Embedding(T, C)
        self.h = nn.ModuleList(Block(C, H) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)
        for p in self.parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx, targets, V):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.h:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits[..., :V].float().reshape(-1, V), targets.reshape(-1))


def optimizer(model, fused):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.01}, {"params": other, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.999), fused=fused)


def run(rank, a, port, out):
    cuda = a.device == "cuda"
    launched = port is None  # by torchrun: rank, world and rendezvous from its variables
    if not cuda:
        torch.set_num_threads(a.threads)
    dev = torch.device("cpu")
    if cuda:
        dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) if launched else 0)
        torch.cuda.set_device(dev)
    if launched:
        dist.init_process_group("nccl" if cuda else "gloo")
    elif a.ranks > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
    torch.manual_seed(1)
    model = GPT(a.L, a.C, a.H, a.V, a.T).to(dev)
    params = sum(p.numel() for p in model.parameters())
    if a.fsdp:
        from torch.distributed.fsdp import fully_shard
        for b in model.h:
            fully_shard(b)
        fully_shard(model)
        opt = optimizer(model, fused=False)
    else:
        opt = optimizer(model, fused=cuda)
        if a.ranks > 1:
            model = nn.parallel.DistributedDataParallel(model, device_ids=[dev.index] if cuda else None)
    step_model = torch.compile(model) if cuda and not a.eager else model
    local = a.batch // a.ranks + (1 if rank < a.batch % a.ranks else 0)
    g = torch.Generator().manual_seed(rank)
    x = torch.randint(0, a.V, (local, a.T), generator=g).to(dev)
    y = torch.randint(0, a.V, (local, a.T), generator=g).to(dev)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda):
            loss = step_model(x, y, a.V)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(a.warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    if a.ranks > 1:
        dist.barrier()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    if cuda:
        torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / a.steps
    if rank == 0:
        mem = torch.cuda.max_memory_allocated() / 2**30 if cuda else 0.0
        line = (f"tokens_per_s={a.batch * a.T / dt:.1f} step_ms={dt * 1e3:.2f} "
                f"peak_gib={mem:.2f} params={params} ranks={a.ranks} "
                f"{'fsdp' if a.fsdp else 'ddp'} torch={torch.__version__}")
        if out is not None:
            out.put(line)
        else:
            print(line, flush=True)
    if a.ranks > 1:
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    for k, v in (("L", 4), ("C", 128), ("H", 4), ("V", 256), ("T", 128), ("batch", 16),
                 ("ranks", 1), ("threads", 1), ("steps", 30), ("warmup", 5)):
        p.add_argument("--" + k, type=int, default=v)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--eager", action="store_true")
    p.add_argument("--fsdp", action="store_true")
    a = p.parse_args()
    if "LOCAL_RANK" in os.environ:  # torchrun
        a.ranks = int(os.environ["WORLD_SIZE"])
        run(int(os.environ["RANK"]), a, None, None)
        return
    if a.fsdp:
        p.error("--fsdp runs under torchrun")
    if a.device == "cuda" or a.ranks == 1:
        run(0, a, 0, None)
        return
    port = 29500 + os.getpid() % 2000
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    mp.spawn(run, args=(a, port, q), nprocs=a.ranks, join=True)
    print(q.get(), flush=True)


if __name__ == "__main__":
    main()
