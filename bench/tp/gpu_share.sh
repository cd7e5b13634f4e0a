#!/usr/bin/env bash
# bench/tp/gpu_share.sh — tensor parallelism on one GPU shared by its PEs
# (SYMTRAIN_GPU_SHARE=1): gpt:d12 at tp=1 (1 PE), tp=2 (2 PEs) and dp=2
# (2 PEs), the same seed and global batch. A correctness run, not a speed
# claim: two PEs on one GPU take turns on it. Per layout: tokens/s (the job's,
# bench/gpt/rate.py, after 3 warm-up steps), the GPU memory a PE holds, and
# the largest relative difference of a step's loss and gradient norm from
# the tp=1 run.
#
#   [MODEL=d12] [BATCH=8] bench/tp/gpu_share.sh BUILD_DIR [STEPS]
set -u
build=$1
steps=${2:-20}
here=$(cd "$(dirname "$0")/.." && pwd)
model=gpt:${MODEL:-d12}
B=${BATCH:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export SYMTRAIN_GPU_SHARE=1
echo "# machine: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null |
     head -1); $(nproc) cores"
echo "# $model, global batch $B x 1024 tokens, bf16, AdamW, $steps steps, one GPU shared by the PEs"
printf "%-10s %4s %12s %14s %14s %14s\n" layout PEs tokens_per_s gpu_mem_per_pe loss_rel_max \
    norm_rel_max
for lay in "1 dp=1" "2 tp=2" "2 dp=2"; do
    pes=${lay%% *} par=${lay#* } name=${lay#* }
    launch=()
    [ "$pes" -gt 1 ] && launch=("$build/symrun" -n "$pes")
    "${launch[@]}" "$build/symtrain" train --model "$model" --generated --device gpu \
        --parallel "$par" --batch "$B" --steps "$steps" --test-samples 1 --log-interval 1000 \
        --metrics "$tmp/$name.jsonl" >"$tmp/$name.log" 2>&1 || { tail -20 "$tmp/$name.log"; exit 1; }
    mem=$(sed -n 's/.*; \([0-9.]* [KMGT]iB\) of GPU memory per PE.*/\1/p' "$tmp/$name.log" | head -1)
    tps=$(python3 "$here/gpt/rate.py" "$tmp/$name.jsonl")
    diff=$(python3 - "$tmp/dp=1.jsonl" "$tmp/$name.jsonl" <<'PY'
import json, sys
def rows(p):
    return {r["step"]: r for r in map(json.loads, open(p)) if "loss" in r and "eval" not in r}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
rel = lambda k: max(abs(b[s][k] - a[s][k]) / abs(a[s][k]) for s in a)
print(f"{rel('loss'):.2e} {rel('grad_norm'):.2e}")
PY
)
    printf "%-10s %4s %12s %14s %14s %14s\n" "$par" "$pes" "$tps" "${mem:--}" ${diff}
done
