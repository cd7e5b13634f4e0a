"""PyTorch DistributedDataParallel baseline for `symtrain train`.

The same model (MLP 784-512-256-10, ReLU, dropout 0.2 after each hidden layer),
optimizer (AdamW, lr 1e-3, weight decay 0.01), gradient clipping at norm 1,
global batch split over the ranks, gloo backend, and the same number of
threads per rank. Data: random 28x28 inputs and labels (throughput does not
depend on the values). Prints one line: ranks, threads, samples/s over the timed
steps (after a warm-up), the slowest rank's.

    python3 torch_ddp.py RANKS THREADS_PER_RANK STEPS GLOBAL_BATCH
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

WARMUP = 20


def worker(rank, world, threads, steps, batch, port, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1)
    model = nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(512, 256), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(256, 10))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss()
    per = batch // world
    gen = torch.Generator().manual_seed(rank)
    xs = torch.rand(64, per, 784, generator=gen)
    ys = torch.randint(0, 10, (64, per), generator=gen)
    t0 = time.perf_counter()
    for s in range(steps):
        if s == WARMUP:
            dist.barrier()
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(xs[s % 64]), ys[s % 64])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step()
    dist.barrier()
    t = torch.tensor([time.perf_counter() - t0])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if rank == 0:
        out.put((steps - WARMUP) * per * world / t.item())
    dist.destroy_process_group()


def main():
    world, threads, steps, batch = (int(a) for a in sys.argv[1:5])
    port = 29000 + (os.getpid() % 1000)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, threads, steps, batch, port, q))
             for r in range(world)]
    for p in procs:
        p.start()
    rate = q.get()
    for p in procs:
        p.join()
    print(f"pytorch-ddp ranks {world} threads {threads} samples/s {rate:.0f}")


if __name__ == "__main__":
    main()
