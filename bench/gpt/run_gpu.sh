#!/usr/bin/env bash
# bench/gpt/run_gpu.sh — GPT training on GPUs: symtrain (--device gpu, bf16
# compute, fp32 master weights and AdamW) beside PyTorch
# (bench/gpt/torch_gpt.py --device cuda: bf16 autocast, flash SDPA, fused
# AdamW) compiled and eager, in the same run, same model, batch, optimizer and
# clipping.
#
#   [MODEL=d12] [BATCH=16] [GPUS=1] [FSDP=0] bench/gpt/run_gpu.sh BUILD_DIR [PYTHON] [STEPS]
#
# MODEL: gpt:d12 (12 layers, 768 wide, 12 heads), d24 (24, 1024, 16), d36
# (36, 1280, 20) or d48 (48, 1600, 25); vocabulary 50257 padded to 50304,
# context 1024. BATCH sequences of 1024 tokens per GPU; STEPS (default 30)
# timed steps after 3 warm-up ones. GPUS > 1: data parallelism over that many
# GPUs, one PE (symrun) / one process (torchrun, DDP over NCCL; FSDP=1: FSDP2,
# compiled only) per GPU, the global batch GPUS x BATCH. symtrain's rate is the tokens per second over the steps after
# the first 3, from its --metrics file; its memory is the GPU memory the model
# holds (its one region, as it reports), PyTorch's the peak allocated. MFU is
# (6 x parameters + 6 x layers x context x width) FLOP per token against the
# GPU's dense bf16 peak (989 TFLOP/s on an H100 / H200 SXM).
set -u
build=$1
py=${2:-python3}
steps=${3:-30}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
peak=989e12
model=${MODEL:-d12}
gpus=${GPUS:-1}
case $model in
d12) L=12 C=768 H=12 ;;
d24) L=24 C=1024 H=16 ;;
d36) L=36 C=1280 H=20 ;;
d48) L=48 C=1600 H=25 ;;
*) echo "MODEL=$model: use d12, d24, d36 or d48" >&2; exit 2 ;;
esac
V=50257 T=1024 B=${BATCH:-16}
GB=$((B * gpus))
gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "# machine: $(nvidia-smi -L 2>/dev/null | wc -l) x ${gpu:-no nvidia-smi}; $(nproc) cores"
echo "# gpt:$model on $gpus GPU(s), batch $B x $T per GPU, AdamW (wd 0.01 on matrices), clip 1," \
     "bf16 compute; $steps timed steps (3 warm-up); MFU per GPU against $peak FLOP/s"

n=$((steps + 3))
launch=()
[ "$gpus" -gt 1 ] && launch=("$build/symrun" -n "$gpus")
"${launch[@]}" "$build/symtrain" train --model "gpt:$model" --generated --device gpu --precision bf16 \
    --batch $GB --steps $n --test-samples 1 --log-interval 1000 \
    --metrics "$tmp/m.jsonl" >"$tmp/sym.log" 2>&1 || { tail -20 "$tmp/sym.log"; exit 1; }
cp "$tmp/sym.log" "${SYM_BENCH_LOG:-/dev/null}" 2>/dev/null
params=$(sed -n 's/.*), \([0-9]*\) parameters;.*/\1/p' "$tmp/sym.log" | head -1)
smem=$(sed -n 's/.*; \([0-9.]* [KMGT]iB\) of GPU memory per PE.*/\1/p' "$tmp/sym.log" | head -1)
sym=$(python3 "$here/rate.py" "$tmp/m.jsonl")
mfu() { python3 -c "print(f'{100 * $1 / $gpus * (6 * $2 + 6 * $L * $T * $C) / $peak:.1f}%')"; }
printf "%-22s %12s %8s %8s %12s %10s\n" run tokens_per_s MFU vs_sym gpu_memory step_ms
step_ms() { python3 -c "print(f'{1e3 * $GB * $T / $1:.1f}')"; }
printf "%-22s %12s %8s %8s %12s %10s\n" "symtrain" "$sym" "$(mfu "$sym" "$params")" "1.00x" \
    "$smem" "$(step_ms "$sym")"
modes="compiled eager"
tlaunch=("$py")
if [ "$gpus" -gt 1 ]; then
    tlaunch=("$py" -m torch.distributed.run --standalone --nproc_per_node "$gpus")
    modes=compiled
fi
for mode in $modes; do
    extra=""; [ $mode = eager ] && extra=--eager
    [ "${FSDP:-0}" = 1 ] && extra="$extra --fsdp"
    out=$("${tlaunch[@]}" "$here/torch_gpt.py" --L $L --C $C --H $H --V $V --T $T --batch $GB \
        --device cuda --steps "$steps" --warmup 3 $extra 2>"$tmp/pt.err")
    pt=$(echo "$out" | sed -n 's/.*tokens_per_s=\([0-9.]*\).*/\1/p')
    if [ -z "$pt" ]; then
        printf "%-22s %12s\n" "pytorch $mode" error; tail -5 "$tmp/pt.err" >&2; continue
    fi
    pp=$(echo "$out" | sed -n 's/.*params=\([0-9]*\).*/\1/p')
    pm=$(echo "$out" | sed -n 's/.*peak_gib=\([0-9.]*\).*/\1/p')
    ratio=$(python3 -c "print(f'{$sym / $pt:.2f}x')")
    [ "${FSDP:-0}" = 1 ] && mode="$mode fsdp"
    printf "%-22s %12.0f %8s %8s %12s %10s\n" "pytorch $mode" "$pt" "$(mfu "$pt" "$pp")" \
        "$ratio" "$pm GiB" "$(step_ms "$pt")"
done
echo "# vs_sym: symtrain's rate over the row's (above 1: symtrain is faster);" \
     "$(echo "$out" | sed -n 's/.*\(torch=[^ ]*\).*/\1/p')"
