#!/usr/bin/env python3
"""bench/zero/run.py — sharded data parallelism: --zero 0 (the baseline, plain
data parallelism), 1 and 2 on 4 CPU PEs in the same run, same model, global
batch and threads; then the same with the batch in 4 micro-batches (--micro-batches 4).

    bench/zero/run.py BUILD_DIR [STEPS] [MODEL] [BATCH] [ROUNDS]

The six runs go round-robin ROUNDS times (default 2), so a change in the
machine's load falls on all of them alike; each row keeps its best round.
Per row: the median step time over the steps after the first 5 (from the
--metrics file) and its ratio to --zero 0's, and the median time a step
spent communicating (waiting for and starting the reductions; with ZeRO also
the norm exchange and the parameter all-gather); the optimizer state per PE (the
start line's exact bytes) and its ratio; the full-gradient bytes ZeRO-2 handed
back to the OS in a step (its own line); memory per PE: the job's peak
proportional set size (Pss, sampled every 20 ms from /proc/PID/smaps_rollup,
summed over the 4 PEs, divided by 4) and its ratio. Pss, not RSS: every PE maps
every other PE's symmetric heap, and RSS would count a peer's page in each PE
that read it; Pss splits a shared page between the processes that map it, so
the sum over the PEs is the job's memory.
"""
import json, os, re, statistics, subprocess, sys, tempfile, time

build = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
model = sys.argv[3] if len(sys.argv) > 3 else "gpt:L=4,C=256,H=4,V=1024,T=64"
batch = int(sys.argv[4]) if len(sys.argv) > 4 else 16
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 2
tmp = tempfile.mkdtemp()


def pss_kb(pid):
    try:
        for line in open("/proc/%d/smaps_rollup" % pid):
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def pes_of(root):
    """The symtrain processes below symrun (pid root)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            st = open("/proc/%s/stat" % d).read()
            children.setdefault(int(st[st.rindex(")") + 2:].split()[1]), []).append(int(d))
        except OSError:
            pass
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            todo.append(c)
            try:
                if open("/proc/%d/comm" % c).read().strip() == "symtrain":
                    out.append(c)
            except OSError:
                pass
    return out


def run(args):
    metrics, log = os.path.join(tmp, "m.jsonl"), os.path.join(tmp, "log")
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = [build + "/symrun", "-n", "4", build + "/symtrain", "train", "--generated", "--model",
           model, "--precision", "fp32", "--device", "cpu", "--steps", str(steps), "--threads",
           "1", "--bucket-mb", "1", "--log-interval", "1000", "--batch", str(batch), "--metrics",
           metrics] + args.split()
    with open(log, "w") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        peak = 0
        while p.poll() is None:
            pes = pes_of(p.pid)
            if len(pes) == 4:
                peak = max(peak, sum(pss_kb(q) for q in pes))
            time.sleep(0.02)
    text = open(log).read()
    if p.returncode:
        sys.exit("bench/zero: %s failed:\n%s" % (" ".join(cmd), text))
    rows = [json.loads(l) for l in open(metrics) if '"samples_per_s"' in l]
    ms = statistics.median(1e3 * (r["compute_s"] + r["comm_s"]) for r in rows[5:])
    comm = statistics.median(1e3 * r["comm_s"] for r in rows[5:])
    state = int(re.search(r"optimizer state (\d+) bytes per PE", text).group(1))
    freed = re.search(r"step 1 handed (\d+) of", text)
    return ms, comm, state, freed.group(1) if freed else "-", peak / 4 / 1024


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    return "%d cores, %s, load average %s" % (os.cpu_count(), cpu, " ".join(open("/proc/loadavg").read().split()[:3]))


print("# machine: %s; %s" % (machine(), time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())))
print("# 4 PEs (symrun -n 4), 1 BLAS thread each; %s fp32 on the CPU, AdamW, global batch %d, %d steps "
      "(medians over steps 6..%d); buckets of 1 MiB; best of %d rounds" % (model, batch, steps, steps, rounds))
print("%-18s %9s %8s %6s %15s %6s %13s %12s %6s" % ("run", "step_ms", "comm_ms", "ratio", "optim_B_per_PE",
                                                    "ratio", "grad_B_freed", "mem_MiB_PE", "ratio"))
runs = [("zero 0 (baseline)", ""), ("zero 1", "--zero 1"), ("zero 2", "--zero 2"),
        ("zero 0, accum 4", "--micro-batches 4"),
        ("zero 1, accum 4", "--micro-batches 4 --zero 1"),
        ("zero 2, accum 4", "--micro-batches 4 --zero 2")]
best = {}
for _ in range(rounds):
    for label, args in runs:
        res = run(args)
        if label not in best or res[0] < best[label][0]:
            best[label] = res
base = best[runs[0][0]]
for label, _ in runs:
    ms, comm, state, freed, mem = best[label]
    print("%-18s %9.1f %8.1f %6.2f %15d %6.3f %13s %12.1f %6.2f" % (
        label, ms, comm, ms / base[0], state, state / base[2], freed, mem, mem / base[4]))
print("# end: load average %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
