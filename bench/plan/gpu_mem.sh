#!/usr/bin/env bash
# bench/plan/gpu_mem.sh — the planner's GPU memory a PE beside what the GPU
# code allocates: for each layout, `symtrain train --device gpu` (bf16, 2
# steps, PEs sharing the one GPU: SYMTRAIN_GPU_SHARE=1) prints the bytes its
# one region holds (the heaviest PE's: a pipeline's stages hold different
# amounts), and `symtrain plan --layout ... --json` predicts the heaviest
# PE's; the ratio is printed.
#
#   [MODEL=d12] [BATCH=8] bench/plan/gpu_mem.sh BUILD_DIR
set -u
build=$1
model=gpt:${MODEL:-d12}
B=${BATCH:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export SYMTRAIN_GPU_SHARE=1 SYMTRAIN_SYMMETRIC_SIZE=${SYMTRAIN_SYMMETRIC_SIZE:-3G}
echo "# $model, global batch $B x 1024, bf16, AdamW; $(nvidia-smi --query-gpu=name \
    --format=csv,noheader 2>/dev/null | head -1)"
printf "%-18s %4s %14s %14s %8s\n" layout PEs measured_bytes predicted_bytes pred/meas
for lay in "1 dp=1 0 1" "2 dp=2 0 1" "2 dp=2 1 1" "2 dp=2 2 1" "2 tp=2 0 1" "4 dp=2,tp=2 0 1" \
           "4 dp=2,tp=2 2 1" "4 dp=4 1 1" "4 dp=4 2 1" "2 pp=2 0 4" "4 dp=2,pp=2 1 4" \
           "4 dp=2,pp=2 2 4" "4 tp=2,pp=2 0 4"; do
    read -r pes par zero micro <<<"$lay"
    launch=()
    [ "$pes" -gt 1 ] && launch=("$build/symrun" -n "$pes")
    "${launch[@]}" "$build/symtrain" train --model "$model" --generated --device gpu \
        --precision bf16 --parallel "$par" --zero "$zero" --micro-batches "$micro" \
        --batch "$B" --steps 2 \
        --test-samples 1 --log-interval 1000 >"$tmp/run.log" 2>&1 ||
        { echo "$par zero=$zero: the run failed:"; tail -5 "$tmp/run.log"; continue; }
    meas=$(sed -n 's/.*; \([0-9.]*\) \([KMGT]\)iB of GPU memory per PE.*/\1 \2/p' "$tmp/run.log" |
           head -1 | awk '{m=$1; u=$2; f=(u=="K")?2^10:(u=="M")?2^20:(u=="G")?2^30:2^40;
                          printf "%.0f", m*f}')
    pred=$("$build/symtrain" plan --model "$model" --pes "$pes" --batch "$B" \
           --layout "$par,zero=$zero,micro=$micro" --json | python3 -c \
           'import json,sys; print(json.load(sys.stdin)["choice"]["mem"]["total"])')
    python3 - "$par,zero=$zero,m=$micro" "$pes" "$meas" "$pred" <<'PY'
import sys
lay, pes, meas, pred = sys.argv[1], sys.argv[2], float(sys.argv[3] or 0), float(sys.argv[4])
ratio = f"{pred / meas:.3f}" if meas else "-"
print(f"{lay:<18} {pes:>4} {meas:>14.0f} {pred:>14.0f} {ratio:>8}")
PY
done
