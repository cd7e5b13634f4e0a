#!/usr/bin/env python3
"""bench/recovery/run.py — recovery time after a PE's death, from the in-memory
snapshots on buddy PEs (symtrain train --mem-ckpt-every) beside the disk's
sharded checkpoint, same run, same machine.

    bench/recovery/run.py BUILD_DIR [--model gpt:d12] [--npes 4] [--trials 3] ...

Each trial starts `symrun -n NPES --max-restarts 1 symtrain train ...` on the
generated corpus with a sharded checkpoint and an in-memory snapshot every
--every steps; for the disk rows the restart finds every PE's region of the
store lost (SYMTRAIN_TEST_MEM_LOST, as if every host had failed), so the two
kinds of row differ only in where the state is read from. It waits until the
checkpoint of step --every is committed and --kill-after steps are done,
drops the checkpoint's files from the page cache (posix_fadvise DONTNEED, so
"disk" reads the device; --warm keeps them), SIGKILLs PE 1 and times, from the
kill:
  resumed     the restarted job's "resumed from ..." line (its state is back:
              the next thing it does is train)
  first_step  the first step record after the restart in its --metrics file
              (resumed + the rest of its setup + one training step)
and the restarted job's own account of its start-up before the restore (PE
0's "start-up before the restore" line: the process's start and shmem_init,
the data, the model, optimizer and buffers)
and, from the restarted job's log, restore: loading the state alone (memory:
finding the newest whole snapshot, checking its CRC32Cs, copying every shard;
disk: finding and verifying the newest checkpoint, reading every tensor).
With --spare, symrun --spare starts the restart's PEs beforehand (they start
up and wait): both kinds of row then skip the start-up, and the restarted
job's "a spare: its start-up (S s)" line is the start-up done ahead.
Both are wall-clock, polled every 2 ms. Standard library only; no network.
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import shutil


def children(pid):
    """PIDs of the processes whose parent is pid, by their SYMTRAIN_RANK (not the
    --spare ones, which wait)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            if ppid != pid:
                continue
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read().split(b"\0")
            if any(e.startswith(b"SYMTRAIN_SPARE_FD=") for e in env):
                continue
            for e in env:
                if e.startswith(b"SYMTRAIN_RANK="):
                    out[int(e[14:])] = int(d)
        except (OSError, ValueError, IndexError):
            pass
    return out


def steps_in(metrics):
    try:
        with open(metrics) as f:
            return sum(1 for line in f if '"eval"' not in line)
    except OSError:
        return 0


def drop_cache(path):
    for root, _, files in os.walk(path):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def trial(a, mode, n):
    tmp = tempfile.mkdtemp(prefix="symtrain-recovery.")
    try:
        ck, metrics, log = (os.path.join(tmp, x) for x in ("ck", "m.jsonl", "log"))
        cmd = [os.path.join(a.build, "symrun"), "-n", str(a.npes), "--max-restarts", "1"] + \
            (["--spare"] if a.spare else []) + [
               os.path.join(a.build, "symtrain"), "train", "--model", a.model, "--generated",
               "--device", "cpu", "--batch", str(a.batch), "--seq", str(a.seq),
               "--steps", str(a.steps), "--threads", str(a.threads), "--test-samples", "1",
               "--ckpt-dir", ck, "--ckpt-format", "sharded", "--ckpt-steps", str(a.every),
               "--resume=auto", "--metrics", metrics, "--quiet"]
        # both runs take snapshots (the disk one's are lost with its store: see below),
        # so the two differ only in where the restart reads the state from
        cmd += ["--mem-ckpt-every", str(a.every)]
        env_mode = {"SYMTRAIN_TEST_MEM_LOST": ",".join(str(i) for i in range(a.npes))} if mode == "disk" else {}
        env = dict(os.environ, SYMTRAIN_SYMMETRIC_SIZE=os.environ.get("SYMTRAIN_SYMMETRIC_SIZE", "4G"),
                   **env_mode)
        with open(log, "w") as lf:
            p = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, env=env)
        committed = os.path.join(ck, "step-%08d" % a.every)
        deadline = time.monotonic() + a.timeout
        while (steps_in(metrics) < a.kill_after or not os.path.isdir(committed)) and p.poll() is None:
            if time.monotonic() > deadline:
                p.kill()
                raise SystemExit(f"{mode} trial {n}: step {a.kill_after} not reached in {a.timeout} s")
            time.sleep(0.01)
        if p.poll() is not None:
            raise SystemExit(f"{mode} trial {n}: the job ended before the kill:\n" + open(log).read())
        if not a.warm:
            drop_cache(ck)
        pes = children(p.pid)
        before = steps_in(metrics)
        with open(log) as f:
            log_at = len(f.read())
        t0 = time.monotonic()
        os.kill(pes[1], signal.SIGKILL)
        resumed = first = None
        while p.poll() is None and first is None:
            t = time.monotonic()
            if resumed is None:
                with open(log) as f:
                    if "resumed from " in f.read()[log_at:]:
                        resumed = t - t0
            if steps_in(metrics) > before:
                first = t - t0
            if t - t0 > a.timeout:
                break
            time.sleep(0.002)
        p.wait(timeout=a.timeout)
        text = open(log).read()
        if p.returncode != 0 or resumed is None or first is None:
            raise SystemExit(f"{mode} trial {n}: exit {p.returncode}, no restart seen:\n{text}")
        m = re.search(r"resumed from (.+?): step", text[log_at:])
        source = m.group(1) if m else "?"
        if (mode == "memory") != (source == "the in-memory snapshot") or source == "?":
            raise SystemExit(f"{mode} trial {n}: resumed from {source}:\n{text}")
        r = re.search(r"(?:in-memory snapshot of step \d+ restored|the checkpoint was read) in "
                      r"([0-9.]+) s", text)
        restore = float(r.group(1)) if r else float("nan")
        u = re.search(r"start-up before the restore: ([0-9.]+) s \(process start and shmem_init "
                      r"([0-9.]+) s, the data ([0-9.]+) s, the model, optimizer and buffers "
                      r"([0-9.]+) s(?:: the model ([0-9.]+), the optimizer ([0-9.]+), the rest "
                      r"([0-9.]+))?\)", text[log_at:])
        setup = tuple(float(x) if x else float("nan") for x in u.groups()) if u else \
            (float("nan"),) * 7
        sp = re.search(r"a spare: its start-up \(([0-9.]+) s\) was done before", text[log_at:])
        if a.spare and not sp:
            raise SystemExit(f"{mode} trial {n}: --spare, and the restart took no spare:\n{text}")
        if sp:
            setup = (float(sp.group(1)),) + (float("nan"),) * 6
        step_s = []
        with open(metrics) as f:
            for line in f:
                c = re.search(r'"compute_s":([0-9.e-]+),"comm_s":([0-9.e-]+)', line)
                if c:
                    step_s.append(float(c.group(1)) + float(c.group(2)))
        return resumed, first, restore, statistics.median(step_s), setup
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--model", default="gpt:d12")
    ap.add_argument("--npes", type=int, default=4)
    ap.add_argument("--threads", type=int, default=0, help="BLAS threads per PE (default cores / PEs)")
    ap.add_argument("--batch", type=int, default=4, help="global batch (default 4: 1 per PE)")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--every", type=int, default=2, help="checkpoint / snapshot every N steps")
    ap.add_argument("--kill-after", type=int, default=3, help="kill PE 1 once this many steps are done")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--warm", action="store_true", help="leave the checkpoint in the page cache")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--spare", action="store_true", help="symrun --spare: the restart's PEs started beforehand")
    a = ap.parse_args()
    if a.threads <= 0:
        a.threads = max(1, (os.cpu_count() or 1) // a.npes)
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    print(f"# machine: {os.cpu_count()} cores, {cpu}; load average {os.getloadavg()[0]:.1f} at the start")
    print(f"# {a.model}, {a.npes} CPU PEs x {a.threads} threads, batch {a.batch} x {a.seq} tokens; "
          f"checkpoint (and snapshot) every {a.every} steps; PE 1 SIGKILLed after step {a.kill_after}; "
          f"disk: {'page cache kept' if a.warm else 'page cache dropped'}"
          f"{'; symrun --spare (the restart takes over PEs started beforehand)' if a.spare else ''}")
    print("%-8s %5s %11s %14s %10s %8s" % ("source", "trial", "resumed_s", "first_step_s",
                                           "restore_s", "step_s"))
    res = {"memory": [], "disk": []}
    for n in range(1, a.trials + 1):
        for mode in ("memory", "disk"):
            r = trial(a, mode, n)
            res[mode].append(r)
            print("%-8s %5d %11.3f %14.3f %10.3f %8.3f" % (mode, n, *r[:4]), flush=True)
    mm = statistics.median(r[0] for r in res["memory"])
    md = statistics.median(r[0] for r in res["disk"])
    fm = statistics.median(r[1] for r in res["memory"])
    fd = statistics.median(r[1] for r in res["disk"])
    print(f"median resumed: memory {mm:.3f} s, disk {md:.3f} s, disk/memory {md / mm:.2f}x")
    print(f"median first step: memory {fm:.3f} s, disk {fd:.3f} s, disk/memory {fd / fm:.2f}x")
    rm = statistics.median(r[2] for r in res["memory"])
    rd = statistics.median(r[2] for r in res["disk"])
    print(f"median restore alone: memory {rm:.3f} s, disk {rd:.3f} s, disk/memory {rd / rm:.2f}x")
    for mode in ("memory", "disk"):  # the restarted job's own account (PE 0's), before the restore
        if a.spare:
            ahead = statistics.median(r[4][0] for r in res[mode])
            print(f"median start-up done ahead by the spare ({mode}): {ahead:.3f} s")
            continue
        parts = [statistics.median(r[4][i] for r in res[mode]) for i in range(7)]
        print(f"median start-up before the restore ({mode}): {parts[0]:.3f} s: process start and "
              f"shmem_init {parts[1]:.3f} s, the data {parts[2]:.3f} s, the model, optimizer and "
              f"buffers {parts[3]:.3f} s (the model {parts[4]:.3f}, the optimizer "
              f"{parts[5]:.3f}, the rest {parts[6]:.3f})")


if __name__ == "__main__":
    main()
