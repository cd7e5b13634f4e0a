#!/usr/bin/env python3
"""deploy_k8s.py — the Kubernetes manifests, rendered (deploy_k8s.sh drives it).

  deploy_k8s.py check OVERLAY RENDERED.yaml OUTDIR
      Parse the manifests `kubectl kustomize deploy/k8s/OVERLAY` rendered and
      check that they carry every field a symtrain job needs (below). Then
      write, for each pod index i, what the kubelet would start: OUTDIR/pod<i>.env
      (NAME=VALUE per line, NUL-free) and OUTDIR/pod<i>.argv (command + args,
      NUL-separated, each volume's mountPath replaced by OUTDIR/vol-<name>), and
      OUTDIR/hosts (the Service's DNS names of the pods, for host i at
      10.231.0.(i+1)), OUTDIR/pods (the pod count).
  deploy_k8s.py dockerfile DOCKERFILE
      Every Debian package the Dockerfile installs exists (apt-cache).
"""
import os
import re
import subprocess
import sys

import yaml

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg)


def by_kind(docs, kind):
    return [d for d in docs if d and d.get("kind") == kind]


def env_map(container):
    return {e["name"]: e for e in container.get("env", [])}


def check(overlay, rendered, outdir):
    docs = list(yaml.safe_load_all(open(rendered)))
    svc, = by_kind(docs, "Service") or [None]
    job, = by_kind(docs, "Job") or [None]
    if not svc or not job:
        fail("%s: want one Service and one Job, got %s" % (overlay, [d.get("kind") for d in docs if d]))
        return
    spec, tmpl = job["spec"], job["spec"]["template"]
    pod = tmpl["spec"]
    c, = [x for x in pod["containers"] if x["name"] == "symtrain"]
    env = env_map(c)
    n = spec.get("completions")
    # the headless Service names the pods
    if svc["spec"].get("clusterIP") != "None":
        fail("the Service is not headless (clusterIP: None)")
    sel = svc["spec"].get("selector", {})
    if not sel or any(tmpl["metadata"]["labels"].get(k) != v for k, v in sel.items()):
        fail("the Service's selector %s does not select the pods (labels %s)" %
             (sel, tmpl["metadata"]["labels"]))
    if pod.get("subdomain") != svc["metadata"]["name"]:
        fail("the pods' subdomain %r is not the Service %r" % (pod.get("subdomain"), svc["metadata"]["name"]))
    # an Indexed Job: RANK from the completion index, WORLD_SIZE the completions
    if spec.get("completionMode") != "Indexed":
        fail("the Job is not Indexed")
    if not isinstance(n, int) or n < 2 or spec.get("parallelism") != n:
        fail("completions %r and parallelism %r: every rank must run at once" % (n, spec.get("parallelism")))
    rank = env.get("RANK", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "")
    if rank != "metadata.annotations['batch.kubernetes.io/job-completion-index']":
        fail("RANK is not the job completion index (%r)" % rank)
    if env.get("WORLD_SIZE", {}).get("value") != str(n):
        fail("WORLD_SIZE %r is not the completions %r" % (env.get("WORLD_SIZE"), n))
    want_master = "%s-0.%s" % (job["metadata"]["name"], svc["metadata"]["name"])
    if env.get("MASTER_ADDR", {}).get("value") != want_master:
        fail("MASTER_ADDR %r is not pod 0's DNS name %s" % (env.get("MASTER_ADDR"), want_master))
    store = str(env.get("MASTER_PORT", {}).get("value"))
    ports = {p["name"]: p for p in c.get("ports", [])}
    svc_ports = {p["name"]: p for p in svc["spec"].get("ports", [])}
    if str(ports.get("store", {}).get("containerPort")) != store or \
            str(svc_ports.get("store", {}).get("port")) != store:
        fail("the store's port %s is not the container's and the Service's" % store)
    tok = env.get("SYMTRAIN_JOB_TOKEN", {}).get("valueFrom", {}).get("secretKeyRef", {})
    if not tok.get("name") or not tok.get("key"):
        fail("SYMTRAIN_JOB_TOKEN does not come from a Secret")
    if by_kind(docs, "Secret"):
        fail("the manifests carry a Secret: the job's token must not live in the repository")
    # the metrics port, annotated for scraping
    ann = tmpl["metadata"].get("annotations", {})
    mport = env.get("SYMTRAIN_METRICS_PORT", {}).get("value")
    if ann.get("prometheus.io/scrape") != "true" or ann.get("prometheus.io/port") != mport or \
            str(ports.get("metrics", {}).get("containerPort")) != mport or \
            ann.get("prometheus.io/path") != "/metrics":
        fail("the metrics port %r is not annotated for scraping (%s) and exposed" % (mport, ann))
    # volumes: the checkpoints on a shared claim, where --ckpt-dir points
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
    args = c.get("args", [])
    ck = args[args.index("--ckpt-dir") + 1] if "--ckpt-dir" in args else ""
    ckm = [m for m in mounts.values() if ck.startswith(m["mountPath"] + "/")]
    if not ckm or "persistentVolumeClaim" not in vols.get(ckm[0]["name"], {}):
        fail("--ckpt-dir %r is not on a mounted persistent volume" % ck)
    claims = {d["metadata"]["name"]: d for d in by_kind(docs, "PersistentVolumeClaim")}
    if ckm:
        claim = vols[ckm[0]["name"]]["persistentVolumeClaim"]["claimName"]
        if "ReadWriteMany" not in claims.get(claim, {}).get("spec", {}).get("accessModes", []):
            fail("the checkpoint claim %r is not ReadWriteMany (every PE reads on --resume)" % claim)
    res = c.get("resources", {})
    if overlay == "gpu":
        if str(res.get("limits", {}).get("nvidia.com/gpu")) != "1":
            fail("the GPU pods do not ask for nvidia.com/gpu")
        shm = [m for m in mounts.values() if m["mountPath"] == "/dev/shm"]
        if not shm or vols.get(shm[0]["name"], {}).get("emptyDir", {}).get("medium") != "Memory":
            fail("the GPU pods have no memory-backed /dev/shm")
        if args[-2:] != ["--device", "gpu"]:
            fail("the GPU job does not train on the GPU (args end %s)" % args[-2:])
    else:
        if not res.get("limits", {}).get("cpu"):
            fail("the CPU pods have no CPU limit (their BLAS threads follow it)")
        if args[-2:] != ["--device", "cpu"]:
            fail("the CPU job does not say --device cpu (args end %s)" % args[-2:])
    if FAILS:
        return
    # what the kubelet would start, pod by pod
    os.makedirs(outdir, exist_ok=True)
    sub = {m["mountPath"]: os.path.join(outdir, "vol-" + m["name"]) for m in mounts.values()
           if m["mountPath"] != "/dev/shm"}
    for d in sub.values():
        os.makedirs(d, exist_ok=True)
    def mapped(a):
        for mp, d in sub.items():
            if a == mp or a.startswith(mp + "/"):
                return d + a[len(mp):]
        return a
    secret = os.environ["DEPLOY_TOKEN"]
    for i in range(n):
        with open(os.path.join(outdir, "pod%d.env" % i), "w") as f:
            for name, e in env.items():
                if "value" in e:
                    v = str(e["value"])
                elif "fieldRef" in e.get("valueFrom", {}):
                    v = str(i)  # the only field the pods read: their completion index
                else:
                    v = secret  # the Secret's value
                f.write("%s=%s\n" % (name, v))
        with open(os.path.join(outdir, "pod%d.argv" % i), "wb") as f:
            f.write(b"\0".join(mapped(a).encode() for a in c["command"] + args) + b"\0")
    with open(os.path.join(outdir, "hosts"), "w") as f:
        f.write("127.0.0.1 localhost\n")
        for i in range(n):
            name = "%s-%d" % (job["metadata"]["name"], i)
            f.write("10.231.0.%d %s.%s %s\n" % (i + 1, name, svc["metadata"]["name"], name))
    open(os.path.join(outdir, "pods"), "w").write("%d\n" % n)
    open(os.path.join(outdir, "data"), "w").write(
        next((mapped(args[k + 1]) for k, a in enumerate(args) if a == "--data"), "") + "\n")


def dockerfile(path):
    text = open(path).read().replace("\\\n", " ")
    pkgs = set()
    for m in re.finditer(r"apt-get install ([^&|;)]*)", text):
        pkgs.update(w for w in m.group(1).split() if not w.startswith("-"))
    if not {"libmicrohttpd-dev", "libfabric-dev", "cmake"} <= pkgs:
        fail("the Dockerfile does not install the build's packages (%s)" % sorted(pkgs))
    pkgs.discard("libpmix2t64")  # Ubuntu 24.04's name, the fallback
    out = subprocess.run(["apt-cache", "policy"] + sorted(pkgs), capture_output=True,
                         text=True).stdout
    known = {m.group(1) for m in re.finditer(r"^(\S+):\n(?:\s+Installed: .*\n)?\s+Candidate: "
                                             r"(?!\(none\))\S+", out, re.M)}
    for p in sorted(pkgs - known):
        fail("the Dockerfile installs %s, which apt does not know" % p)
    if "cmake --install" not in text or "PATH=/opt/symtrain/bin" not in text:
        fail("the Dockerfile does not install the project on PATH")
    print("the Dockerfile's %d packages exist" % len(pkgs))


def main():
    if sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "dockerfile":
        dockerfile(sys.argv[2])
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
