#!/usr/bin/env bash
# bench/gpt/pipeline_gpu.sh — what a GPU pipeline's messages cost: gpt:d12,
# bf16, global batch 16 x 1024 in 8 micro-batches, pp=2 on two PEs sharing
# the one GPU (SYMTRAIN_GPU_SHARE=1: the stages time-slice it, so this is the
# message path's cost, not a pipeline's speed), GPU to GPU beside the host
# way (SYMTRAIN_PIPE_VIA_HOST=1), with one PE and no pipeline for scale, in
# the same run.
#
#   bench/gpt/pipeline_gpu.sh BUILD_DIR [STEPS]
set -u
build=$1
steps=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export SYMTRAIN_GPU_SHARE=1 SYMTRAIN_SYMMETRIC_SIZE=${SYMTRAIN_SYMMETRIC_SIZE:-4G}
echo "# $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); gpt:d12 bf16," \
     "batch 16 x 1024; $steps timed steps (3 warm-up)"
printf "%-22s %12s %10s %8s\n" run tokens_per_s step_ms vs_host
args="--model gpt:d12 --generated --device gpu --precision bf16 --batch 16 --steps $((steps + 3))
      --test-samples 1 --log-interval 1000"
host=""
for run in one_pe host gpu_to_gpu; do
    case $run in
    one_pe) cmd=("$build/symtrain" train $args) ;;
    *) cmd=("$build/symrun" -n 2 "$build/symtrain" train $args --parallel pp=2 --micro-batches 8) ;;
    esac
    if [ $run = host ]; then export SYMTRAIN_PIPE_VIA_HOST=1; else unset SYMTRAIN_PIPE_VIA_HOST; fi
    "${cmd[@]}" --metrics "$tmp/$run.jsonl" >"$tmp/$run.log" 2>&1 || { tail -20 "$tmp/$run.log"; exit 1; }
    grep -h "activations and gradients go" "$tmp/$run.log" | sed 's/^/# /'
    r=$(python3 "$here/rate.py" "$tmp/$run.jsonl")
    [ $run = host ] && host=$r
    python3 -c "h='$host'; r=$r; print(f'{\"$run\":<22} {r:12.0f} {1e3 * 16 * 1024 / r:10.1f} ' + (f'{r / float(h):7.2f}x' if h else '      -'))"
done
