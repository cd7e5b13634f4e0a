#!/usr/bin/env bash
# bench/gpt/dropout_gpu.sh — what dropout costs a GPU step: gpt:d12, bf16,
# batch 16 x 1024 on one GPU, --dropout 0 beside 0.1 (the embedding's, the
# residual branches' and the attention probabilities' masks, drawn in the
# kernels), in the same run.
#
#   bench/gpt/dropout_gpu.sh BUILD_DIR [STEPS]
set -u
build=$1
steps=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
echo "# $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); gpt:d12 bf16," \
     "batch 16 x 1024; $steps timed steps (3 warm-up)"
printf "%-10s %12s %10s %8s\n" dropout tokens_per_s step_ms vs_off
base=""
for p in 0 0.1; do
    "$build/symtrain" train --model gpt:d12 --generated --device gpu --precision bf16 --batch 16 \
        --steps $((steps + 3)) --test-samples 1 --log-interval 1000 --dropout $p \
        --metrics "$tmp/m$p.jsonl" >"$tmp/log$p" 2>&1 || { tail -20 "$tmp/log$p"; exit 1; }
    r=$(python3 "$here/rate.py" "$tmp/m$p.jsonl")
    [ -z "$base" ] && base=$r
    python3 -c "print(f'{\"$p\":<10} {$r:12.0f} {1e3 * 16 * 1024 / $r:10.1f} {$r / $base:7.2f}x')"
done
