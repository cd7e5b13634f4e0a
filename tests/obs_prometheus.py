#!/usr/bin/env python3
"""obs_prometheus.py — the Prometheus endpoint, scraped by a real Prometheus.

  obs_prometheus.py scrape SYMRUN SYMTRAIN
      A 2-PE job serves /metrics on free ports (--metrics-port 0, read back from
      the lines the PEs log); a Prometheus server (the `prometheus` binary, on a
      loopback port, its own storage in a temporary directory) scrapes both
      every second. After a few scrapes the job is stopped with SIGTERM, and
      every sample Prometheus stored, read back through its HTTP query API, is
      compared with the job's --metrics JSONL at the step that sample shows.
  obs_prometheus.py port-taken SYMTRAIN
      --metrics-port on a port another process holds: one clear message, and
      training goes on and finishes.
  obs_prometheus.py names SYMRUN SYMTRAIN DASHBOARD
      Every metric a panel of the Grafana dashboard queries is one a real job's
      /metrics serves.

Exit 77 (SKIP, one line why) where prometheus or libmicrohttpd is missing;
under CI (CI=true) that is a failure: CI installs both.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

FAILS = []
NOPROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg)


def skip(why):
    if os.environ.get("CI") == "true":
        print("FAIL: CI=true, but " + why + ": CI installs it, so this test must run")
        sys.exit(1)
    print("SKIP: " + why)
    sys.exit(77)


def need_mhd():
    if os.environ.get("SYM_HAVE_MHD") != "ON":
        skip("this build has no libmicrohttpd (apt-get install libmicrohttpd-dev)")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(url, timeout=5):
    with NOPROXY.open(url, timeout=timeout) as r:
        return r.read().decode()


def start_job(symrun, symtrain, tmp, extra, launcher=(), env=None):
    """A 2-PE MLP job on the generated set, long enough to be stopped."""
    cmd = [symrun, "-n", "2", "--timeout", "120"] + list(launcher) + [symtrain, "train", "--generated",
           "--train-samples", "2048", "--test-samples", "512", "--epochs", "1000",
           "--batch", "32", "--threads", "1", "--metrics-port", "0",
           "--metrics", os.path.join(tmp, "m.jsonl"), "--log-interval", "1000"] + extra
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=tmp, env=dict(os.environ, **(env or {})))


def read_ports(job, n, log, deadline):
    """The ports the PEs log ("PE k serves Prometheus metrics at http://H:P/metrics")."""
    ports = {}
    while len(ports) < n and time.time() < deadline:
        line = job.stdout.readline()
        if not line:
            break
        log.append(line)
        m = re.search(r"PE (\d+) serves Prometheus metrics at http://[^:]+:(\d+)/metrics", line)
        if m:
            ports[int(m.group(1))] = int(m.group(2))
    return ports


def drain(job, log):
    out = job.stdout.read()
    log.append(out)


def exposed_names(text):
    """Names a PromQL query can use: the families, histograms' _bucket/_sum/_count."""
    names = set()
    for m in re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M):
        names.add(m.group(1))
        if m.group(2) == "histogram":
            names.update(m.group(1) + s for s in ("_bucket", "_sum", "_count"))
    return names


def jsonl(path):
    steps, evals = {}, []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("eval"):
                evals.append(r)
            else:
                steps[r["step"]] = r  # the last record of a step
    return steps, evals


# ---- scrape ----

def query(prom, q, at):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (prom, urllib.parse.urlencode({"query": q, "time": at}))
    r = json.loads(get(url))
    if r.get("status") != "success":
        raise RuntimeError("query %s: %s" % (q, r))
    return r["data"]["result"]


def series(prom, name, at, **labels):
    """{pe: {timestamp: value}} of every raw sample of `name` in the last 5 minutes."""
    sel = ",".join('%s="%s"' % kv for kv in labels.items())
    out = {}
    for s in query(prom, "%s{%s}[5m]" % (name, sel), at):
        pe = int(s["metric"]["pe"])
        out.setdefault(pe, {}).update({float(t): float(v) for t, v in s["values"]})
    return out


def scrape(symrun, symtrain):
    need_mhd()
    prometheus = shutil.which("prometheus")
    if not prometheus:
        skip("no prometheus binary (apt-get install prometheus)")
    tmp = tempfile.mkdtemp(prefix="symprom.")
    log, job, prom_proc = [], None, None
    try:
        t0 = time.time()
        job = start_job(symrun, symtrain, tmp, ["--ckpt-dir", os.path.join(tmp, "ck"),
                                                "--ckpt-steps", "25"])
        ports = read_ports(job, 2, log, time.time() + 30)
        if sorted(ports) != [0, 1]:
            if job.poll() is not None:
                drain(job, log)
            fail("the PEs did not log their metrics ports: %s" % "".join(log))
            return
        prom = free_port()
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: symtrain\n    static_configs:\n"
                    "      - targets: [%s]\n" % ", ".join("'127.0.0.1:%d'" % p for p in ports.values()))
        plog = open(os.path.join(tmp, "prometheus.log"), "w")
        prom_proc = subprocess.Popen(
            [prometheus, "--config.file", os.path.join(tmp, "prometheus.yml"),
             "--storage.tsdb.path", os.path.join(tmp, "data"),
             "--web.listen-address", "127.0.0.1:%d" % prom],
            stdout=plog, stderr=subprocess.STDOUT)
        # Wait for at least 4 scrapes of each PE (and the job still running).
        deadline = time.time() + 25
        n = {}
        while time.time() < deadline and job.poll() is None:
            try:
                res = query(prom, "count_over_time(symtrain_step[5m])", time.time())
                n = {int(s["metric"]["pe"]): int(float(s["value"][1])) for s in res}
                if len(n) == 2 and min(n.values()) >= 4:
                    break
            except (OSError, RuntimeError):
                pass  # not up yet
            time.sleep(0.5)
        if len(n) < 2 or min(n.values()) < 4:
            fail("Prometheus stored too few scrapes of the job (%s) in 25 s; its log:\n%s" %
                 (n, open(os.path.join(tmp, "prometheus.log")).read()[-2000:]))
            return
        job.send_signal(signal.SIGTERM)
        drain(job, log)
        if job.wait(60) != 0:
            fail("the job ended with %d after SIGTERM:\n%s" % (job.returncode, "".join(log)))
        at = time.time()
        steps, evals = jsonl(os.path.join(tmp, "m.jsonl"))
        check(prom, at, steps, evals)
        print("scraped %s samples per PE; job and Prometheus took %.1f s" % (n, time.time() - t0))
    finally:
        for p in (job, prom_proc):
            if p and p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def close(a, b, tol):
    return abs(a - b) <= tol


def check(prom, at, steps, evals):
    step = series(prom, "symtrain_step", at)
    loss = series(prom, "symtrain_loss", at)
    lr = series(prom, "symtrain_learning_rate", at)
    csum = series(prom, "symtrain_step_seconds_sum", at, phase="compute")
    wsum = series(prom, "symtrain_step_seconds_sum", at, phase="comm_wait")
    ccount = series(prom, "symtrain_step_seconds_count", at, phase="compute")
    inf = series(prom, "symtrain_step_seconds_bucket", at, phase="compute", le="+Inf")
    nbytes = series(prom, "symtrain_allreduce_bytes_total", at)
    vloss = series(prom, "symtrain_validation_loss", at)
    ck = series(prom, "symtrain_checkpoints_total", at)
    ckb = series(prom, "symtrain_checkpoint_bytes_total", at)
    runs = {}  # all-reduces of every algorithm, summed per sample
    for s in query(prom, "symtrain_runtime_allreduce_total[5m]", at):
        pe = int(s["metric"]["pe"])
        for t, v in s["values"]:
            runs.setdefault(pe, {}).setdefault(float(t), 0.0)
            runs[pe][float(t)] += float(v)
    if sorted(step) != [0, 1]:
        fail("symtrain_step has series for PEs %s, want 0 and 1" % sorted(step))
        return
    seen = set()
    checked = 0
    for pe in (0, 1):
        for ts, k in sorted(step[pe].items()):
            k = int(k)
            seen.add(k)
            if k not in steps:
                fail("PE %d at %.3f shows step %d, which the JSONL does not hold" % (pe, ts, k))
                continue
            rec = steps[k]
            upto = [steps[j] for j in range(1, k + 1)]
            if len(upto) != k:
                fail("the JSONL lacks steps before %d" % k)
                continue
            checked += 1
            # the loss is the global batch's mean: the same on every PE, printed alike
            if "%.9g" % loss[pe][ts] != "%.9g" % rec["loss"]:
                fail("PE %d step %d: loss %r, the JSONL %r" % (pe, k, loss[pe][ts], rec["loss"]))
            if not close(lr[pe][ts], rec["lr"], 1e-5 * rec["lr"]):
                fail("PE %d step %d: learning rate %r, the JSONL %r" % (pe, k, lr[pe][ts], rec["lr"]))
            if ccount[pe][ts] != k or inf[pe][ts] != k:
                fail("PE %d step %d: the step-time histogram counts %r steps (+Inf bucket %r)" %
                     (pe, k, ccount[pe][ts], inf[pe][ts]))
            want_bytes = sum(r["bytes_allreduced"] for r in upto)
            if nbytes[pe][ts] != want_bytes:
                fail("PE %d step %d: %r bytes all-reduced, the JSONL adds up to %d" %
                     (pe, k, nbytes[pe][ts], want_bytes))
            if runs[pe][ts] < k:
                fail("PE %d step %d: only %r all-reduces counted by the runtime" % (pe, k, runs[pe][ts]))
            if pe == 0:  # the JSONL holds PE 0's own times (printed to 1 us)
                for name, got, key in (("compute", csum, "compute_s"), ("comm_wait", wsum, "comm_s")):
                    want = sum(r[key] for r in upto)
                    if not close(got[0][ts], want, k * 1e-6 + 1e-9):
                        fail("PE 0 step %d: %s seconds sum %r, the JSONL adds up to %r" %
                             (k, name, got[0][ts], want))
                if ts in ck.get(0, {}):
                    saves = ck[0][ts]
                    if not (k // 25 - 1 <= saves <= k // 25):
                        fail("PE 0 step %d: %r checkpoints written, want about %d" % (k, saves, k // 25))
                    per = ckb[0][ts] / saves if saves else 0
                    if saves and per != int(per):
                        fail("PE 0: checkpoint bytes %r are not a whole number of checkpoints of "
                             "one size" % ckb[0][ts])
            if ts in vloss.get(pe, {}):
                done = [e for e in evals if e["step"] <= k]
                if not done or not any(close(vloss[pe][ts], e["test_loss"], 1e-6) for e in done):
                    fail("PE %d step %d: validation loss %r is none of the JSONL's evaluations" %
                         (pe, k, vloss[pe][ts]))
    if len(seen) < 2:
        fail("every scrape showed the same step (%s): training did not move between scrapes" % seen)
    if not ck.get(0):
        fail("PE 0 never showed symtrain_checkpoints_total")
    if 1 in ck:
        fail("PE 1 shows checkpoint metrics, but only PE 0 writes checkpoints")
    print("checked %d samples against the JSONL (steps %d..%d)" % (checked, min(seen), max(seen)))


# ---- a port already taken ----

def port_taken(symtrain):
    need_mhd()
    holder = socket.socket()
    holder.bind(("0.0.0.0", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    tmp = tempfile.mkdtemp(prefix="symprom.")
    try:
        p = subprocess.run([symtrain, "train", "--generated", "--train-samples", "256", "--steps",
                            "4", "--batch", "32", "--test-samples", "64", "--metrics-port",
                            str(port)], capture_output=True, text=True, cwd=tmp, timeout=60)
        want = ("PE 0: cannot serve metrics on port %d: Address already in use; choose a free "
                "--metrics-port (0 picks one); training goes on without the metrics endpoint" % port)
        if p.returncode != 0:
            fail("exit status %d, want 0 (training goes on):\n%s%s" % (p.returncode, p.stdout, p.stderr))
        if p.stderr.count(want) != 1:
            fail("stderr does not say once: %s\nstderr: %s" % (want, p.stderr))
        if "after 4 steps" not in p.stdout:
            fail("training did not finish its 4 steps:\n" + p.stdout)
        if "serves Prometheus metrics" in p.stdout:
            fail("it claims to serve metrics on a port it could not take:\n" + p.stdout)
        # a port that needs privileges, as a user without them
        setpriv = shutil.which("setpriv")
        if os.getuid() == 0 and setpriv:
            os.chmod(tmp, 0o777)
            p = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                                symtrain, "train", "--generated", "--train-samples", "256",
                                "--steps", "2", "--batch", "32", "--test-samples", "64",
                                "--metrics-port", "80"], capture_output=True, text=True, cwd=tmp,
                               timeout=60)
            want = ("PE 0: cannot serve metrics on port 80: Permission denied; ports below 1024 "
                    "need privileges: choose a port from 1024 up (0 picks a free one); training "
                    "goes on without the metrics endpoint")
            if p.returncode != 0 or p.stderr.count(want) != 1 or "after 2 steps" not in p.stdout:
                fail("port 80 without privileges: exit %d, want 0 and once: %s\nstdout: %s\n"
                     "stderr: %s" % (p.returncode, want, p.stdout, p.stderr))
        else:
            print("(not root: the no-privileges case is not tried)")
    finally:
        holder.close()
        shutil.rmtree(tmp, ignore_errors=True)


# ---- the dashboard's queries ----

PROMQL_WORDS = {"sum", "avg", "min", "max", "count", "rate", "irate", "increase", "by",
                "without", "histogram_quantile", "on", "ignoring", "group_left", "group_right",
                "topk", "bottomk", "delta", "deriv", "clamp_min", "clamp_max", "abs", "and", "or",
                "unless", "offset", "bool", "avg_over_time", "max_over_time", "min_over_time",
                "quantile", "stddev", "label_replace", "time", "vector", "scalar", "le", "pe",
                "phase", "algo", "job", "instance", "e", "inf", "nan", "resets", "changes",
                "sum_over_time", "last_over_time", "absent", "sort", "sort_desc", "round"}


def promql_metrics(expr):
    """The metric names a PromQL expression reads: identifiers outside label
    matchers, strings, durations and Grafana's $variables, that are not PromQL's words."""
    e = re.sub(r'"[^"]*"', "", expr)          # strings
    e = re.sub(r"\{[^}]*\}", "", e)           # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)          # ranges
    e = re.sub(r"\$\w+|\$\{[^}]*\}", "", e)   # Grafana variables
    e = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", e)  # grouping labels
    e = re.sub(r"(?<![A-Za-z_:])\d+(\.\d+)?([eE][+-]?\d+)?", "", e)  # numbers (1e6)
    names = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", e))
    return {n for n in names if n not in PROMQL_WORDS}


def panel_queries(dash):
    out = []
    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((p.get("title", "?"), t["expr"]))
            walk(p.get("panels", []))
    walk(dash.get("panels", []))
    return out


def names(symrun, symtrain, dashboard):
    need_mhd()
    with open(dashboard) as f:
        dash = json.load(f)
    queries = panel_queries(dash)
    if len(queries) < 8:
        fail("the dashboard has only %d panel queries" % len(queries))
    titles = " ".join(t for t, _ in queries).lower()
    for want in ("loss", "throughput", "step time", "per-pe", "memory", "checkpoint", "restart"):
        if want not in titles:
            fail("no panel about %s (titles: %s)" % (want, titles))
    # A real job's /metrics: PE 0 (it writes checkpoints) after an evaluation,
    # in the job's second start: PE 1 dies at step 12 of the first, symrun
    # restarts the job, and it resumes from its checkpoint of step 10.
    tmp = tempfile.mkdtemp(prefix="symprom.")
    log = []
    job = start_job(symrun, symtrain, tmp, ["--ckpt-dir", os.path.join(tmp, "ck"),
                                            "--ckpt-steps", "5", "--eval-every", "10", "--resume=auto"],
                    launcher=["--max-restarts", "1"], env={"SYMTRAIN_TEST_KILL_AT": "1:12"})
    try:
        ports = read_ports(job, 2, log, time.time() + 30)  # the first start's
        ports = read_ports(job, 2, log, time.time() + 30)  # the restarted job's
        if 0 not in ports or not any("resumed from" in line for line in log):
            fail("the restarted job did not log PE 0's metrics port:\n" + "".join(log))
            return
        served, text = set(), ""
        deadline = time.time() + 20
        while time.time() < deadline:
            text = get("http://127.0.0.1:%d/metrics" % ports[0])
            served = exposed_names(text)
            if "symtrain_validation_loss" in served and "symtrain_checkpoints_total" in served:
                break
            time.sleep(0.3)
        # Prometheus's own linter: format and naming conventions
        promtool = shutil.which("promtool")
        if promtool:
            lint = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                                  text=True)
            if lint.returncode != 0 or lint.stdout.strip() or lint.stderr.strip():
                fail("promtool check metrics: %s%s" % (lint.stdout, lint.stderr))
        else:
            print("(no promtool: the exposition is not linted)")
        if 'symtrain_restarts_total{pe="0"} 1\n' not in text:
            fail("after one restart PE 0 does not serve symtrain_restarts_total 1:\n" + text)
        # GPU-only families: exported by a GPU run, declared by the code
        gpu = {"symtrain_gpu_memory_bytes", "symtrain_mfu_ratio"}
        src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "train",
                                "obs", "prom.c")).read()
        for g in gpu:
            if '"%s"' % g not in src:
                fail("%s is not among the names prom.c exports" % g)
        for title, expr in queries:
            for m in sorted(promql_metrics(expr)):
                if m not in served and m not in gpu:
                    fail("panel '%s' queries %s, which the job does not export (%s)" % (title, m, expr))
        print("%d panel queries name only exported metrics (%d served)" % (len(queries), len(served)))
    finally:
        job.kill()
        job.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    mode = sys.argv[1]
    if mode == "scrape":
        scrape(sys.argv[2], sys.argv[3])
    elif mode == "port-taken":
        port_taken(sys.argv[2])
    elif mode == "names":
        names(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit("unknown mode " + mode)
    if FAILS:
        print("%d failed" % len(FAILS))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
