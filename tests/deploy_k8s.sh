#!/usr/bin/env bash
# deploy_k8s.sh — the Kubernetes manifests (deploy/k8s), rendered offline by
# `kubectl kustomize` and checked field by field (deploy_k8s.py), and the CPU
# overlay's pods run as a cluster would: each pod a network namespace (a
# "node", tests/netns.sh) whose /etc/hosts resolves the headless Service's
# names, each started with exactly the command line and environment the
# rendered Job gives it (RANK from its completion index, the Secret's token,
# volumes mapped to directories); the job trains on token shards in its data
# volume. The stand-in only shortens the run (--max-steps 3) and names the
# namespace's interface for libfabric. Then Kubeflow's PET_* variables: two
# "pods" of two processes each (LOCAL_RANK 0 and 1) make one 4-PE job.
#   deploy_k8s.sh SYMTRAIN SOURCE_DIR
# SKIP (77) without kubectl, PyYAML or namespaces; FAIL for that under CI=true.
set -u
symtrain=$1 root=$2
here=$(cd "$(dirname "$0")" && pwd)
bindir=$(cd "$(dirname "$symtrain")" && pwd)
. "$here/netns.sh"
NETNS_TAG="sk$$"
command -v kubectl >/dev/null || { netns_skip "no kubectl (apt-get install kubernetes-client)"; exit; }
python3 -c 'import yaml' 2>/dev/null || { netns_skip "no PyYAML (apt-get install python3-yaml)"; exit; }
tmp=$(mktemp -d)
cleanup() {
    netns_down
    rm -rf /etc/netns/"${NETNS_TAG}"h* "$tmp"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
export DEPLOY_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')

# ---- rendered manifests ----
for o in cpu gpu; do
    if ! kubectl kustomize "$root/deploy/k8s/$o" >"$tmp/$o.yaml" 2>"$tmp/$o.err"; then
        fail "kubectl kustomize deploy/k8s/$o: $(cat "$tmp/$o.err")"
        continue
    fi
    python3 "$here/deploy_k8s.py" check "$o" "$tmp/$o.yaml" "$tmp/$o" || fail "deploy/k8s/$o"
done
python3 "$here/deploy_k8s.py" dockerfile "$root/deploy/Dockerfile" || fail "deploy/Dockerfile"
[ -f "$tmp/cpu/pods" ] || { echo "$fails failed"; exit 1; }

# What `env -i` keeps besides the pod's environment: a sanitizer build's
# settings (its suppressions among them), as any process of the test gets them.
san_env=()
for v in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS; do
    [ -n "${!v:-}" ] && san_env+=("$v=${!v}")
done

# ---- Kubeflow's variables that do not fit: one clear line each ----
pet() { env -i PATH="$bindir:/usr/bin:/bin" "${san_env[@]}" PET_MASTER_ADDR=127.0.0.1 PET_MASTER_PORT=1 \
        SYMTRAIN_JOB_TOKEN=x "$@" timeout 20 "$symtrain" train --generated --steps 1 2>&1; }
out=$(pet PET_NNODES=1 PET_NODE_RANK=0 PET_NPROC_PER_NODE=2 LOCAL_RANK=2)
grep -q "LOCAL_RANK=2 and PET_NPROC_PER_NODE=2 do not fit" <<<"$out" || fail "LOCAL_RANK past the pod: $out"
out=$(pet PET_NNODES=1:3 PET_NODE_RANK=0)
grep -q "PET_NNODES='1:3' asks for an elastic job of 1 to 3 pods" <<<"$out" || fail "elastic PET_NNODES: $out"

# ---- the CPU job's pods on namespace "nodes" ----
n=$(cat "$tmp/cpu/pods")
netns_up "$n"
rc=$?
[ $rc = 0 ] || exit $rc
# the data volume: token shards of this project's docs (symtrain tokenize)
data=$(cat "$tmp/cpu/data")
"$symtrain" tokenize "$root"/README.md "$root"/docs/*.md -o "$(dirname "$data")" >/dev/null ||
    fail "symtrain tokenize"
start_pod() { # start_pod NODE LOG ENVFILE ARGVFILE [EXTRA_ENV...] -- [EXTRA_ARGS...]
    local h=$1 log=$2 envf=$3 argvf=$4
    shift 4
    local extra_env=() extra_args=() argv envs
    while [ $# -gt 0 ] && [ "$1" != -- ]; do extra_env+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    extra_args=("$@")
    mapfile -d '' argv <"$argvf"
    mapfile -t envs <"$envf"
    mkdir -p "/etc/netns/${NETNS_TAG}h$h"
    cp "$tmp/cpu/hosts" "/etc/netns/${NETNS_TAG}h$h/hosts"
    (cd "$tmp" && ip netns exec "${NETNS_TAG}h$h" env -i PATH="$bindir:/usr/bin:/bin" HOME="$tmp" \
        "${san_env[@]}" "${envs[@]}" "${extra_env[@]}" FI_TCP_IFACE="${NETNS_TAG}a$h" FI_NET_IFACE="${NETNS_TAG}a$h" \
        SYMTRAIN_BOOT_TIMEOUT=60 timeout 120 "${argv[@]}" "${extra_args[@]}") >"$log" 2>&1 &
    pids+=($!)
}
pids=()
for ((i = 0; i < n; i++)); do
    start_pod $i "$tmp/pod$i.log" "$tmp/cpu/pod$i.env" "$tmp/cpu/pod$i.argv" -- \
        --max-steps 3 --test-samples 8
done
for ((i = 0; i < n; i++)); do
    wait "${pids[$i]}" || { fail "pod $i exited $?:"; sed "s/^/  pod $i: /" "$tmp/pod$i.log"; }
done
log0=$tmp/pod0.log
grep -q "^symtrain: $n PEs x " "$log0" || fail "pod 0 did not train with $n PEs: $(cat "$log0")"
grep -q "after 3 steps" "$log0" || fail "the job did not finish 3 steps: $(cat "$log0")"
for ((i = 0; i < n; i++)); do
    grep -q "PE $i serves Prometheus metrics at http://.*:9400/metrics" "$tmp/pod$i.log" ||
        fail "pod $i does not serve metrics on the annotated port: $(cat "$tmp/pod$i.log")"
done
ls "$tmp/cpu/vol-checkpoints/run/step-00000003/manifest.json" >/dev/null 2>&1 ||
    fail "no checkpoint in the checkpoint volume: $(ls -R "$tmp/cpu/vol-checkpoints")"
[ "$(grep -c '"step"' "$tmp/cpu/vol-checkpoints/metrics.jsonl" 2>/dev/null)" -ge 3 ] ||
    fail "the metrics file in the checkpoint volume lacks the steps"

# ---- Kubeflow (PyTorchJob / TrainJob): 2 pods x 2 processes ----
printf 'SYMTRAIN_JOB_TOKEN=%s\n' "$DEPLOY_TOKEN" >"$tmp/pet.env"
printf '%s\0' symtrain train --generated --train-samples 256 --test-samples 64 --batch 16 \
    --steps 3 --threads 1 >"$tmp/pet.argv"
pids=()
for ((i = 0; i < 2; i++)); do
    for l in 0 1; do
        # RANK / WORLD_SIZE as the operator sets them (the pod's); PET_* must win
        start_pod $i "$tmp/pet$i$l.log" "$tmp/pet.env" "$tmp/pet.argv" PET_NNODES=2 \
            PET_NODE_RANK=$i PET_NPROC_PER_NODE=2 LOCAL_RANK=$l PET_MASTER_ADDR=symtrain-0.symtrain \
            PET_MASTER_PORT=29400 RANK=$i WORLD_SIZE=2 --
    done
done
k=0
for i in 0 1; do
    for l in 0 1; do
        wait "${pids[$k]}" || { fail "Kubeflow pod $i process $l exited $?:"; cat "$tmp/pet$i$l.log"; }
        k=$((k + 1))
    done
done
grep -q "^symtrain: 4 PEs x " "$tmp/pet00.log" || fail "PET_*: not one 4-PE job: $(cat "$tmp/pet00.log")"
grep -q "after 3 steps" "$tmp/pet00.log" || fail "PET_*: the job did not finish: $(cat "$tmp/pet00.log")"

echo "took ${SECONDS}s"; [ $fails = 0 ] && echo "PASS: manifests rendered and checked; $n pods trained; 2x2 Kubeflow processes trained"
exit $((fails > 0))
