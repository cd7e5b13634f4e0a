#!/usr/bin/env bash
# bench/gpt/run_cpu.sh — GPT training throughput on the CPU: symtrain beside
# PyTorch (bench/gpt/torch_gpt.py) in the same run, same model, global batch,
# optimizer and threads per rank, on random-order generated text (the rate
# does not depend on the tokens).
#
#   bench/gpt/run_cpu.sh BUILD_DIR [PYTHON] [STEPS]
#
# Rows: the `make run` GPT (gpt:L=4,C=128,H=4,V=256,T=128, global batch 16) on
# 1, 2 and 4 PEs / DDP ranks with the machine's cores split over them, then
# GPT-2 small (gpt:d12, batch 2 x 1024) on one PE with every core. symtrain's
# rate is the global tokens per second over the steps after the first 3, from
# its --metrics file. PYTHON is an interpreter with torch (default python3);
# without torch its column says so.
set -u
build=$1
py=${2:-python3}
steps=${3:-40}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cores=$(nproc)
have_torch=0
"$py" -c "import torch" 2>/dev/null && have_torch=1
[ $have_torch = 1 ] || echo "# PyTorch not importable with $py: its column is left out"
echo "# machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# AdamW, clip 1, fp32; $steps steps per row (3 warm-up)"
printf "%-34s %5s %7s %12s %12s %7s\n" model ranks threads symtrain_tps pytorch_tps ratio

row() { # spec L C H V T batch ranks steps
    local spec=$1 L=$2 C=$3 H=$4 V=$5 T=$6 batch=$7 r=$8 n=$9
    local t=$((cores / r)); [ $t -ge 1 ] || t=1
    rm -f "$tmp/m.jsonl"
    SYMTRAIN_SYMMETRIC_SIZE=${SYMTRAIN_SYMMETRIC_SIZE:-4G} \
    "$build/symrun" -n "$r" "$build/symtrain" train --model "$spec" --generated --device cpu \
        --batch "$batch" --steps "$n" --threads "$t" --test-samples 1 --metrics "$tmp/m.jsonl" \
        --quiet >"$tmp/sym.log" 2>&1 || { cat "$tmp/sym.log"; exit 1; }
    local sym
    sym=$(python3 "$here/rate.py" "$tmp/m.jsonl")
    local pt="-" ratio="-"
    if [ $have_torch = 1 ]; then
        pt=$("$py" "$here/torch_gpt.py" --L "$L" --C "$C" --H "$H" --V "$V" --T "$T" \
            --batch "$batch" --ranks "$r" --threads "$t" --steps "$n" --warmup 3 2>"$tmp/pt.err" |
            sed -n 's/.*tokens_per_s=\([0-9.]*\).*/\1/p')
        if [ -n "$pt" ]; then
            ratio=$(python3 -c "print(f'{$sym / $pt:.2f}x')")
        else
            pt="error"; tail -3 "$tmp/pt.err" >&2
        fi
    fi
    printf "%-34s %5d %7d %12s %12s %7s\n" "$spec x$batch" "$r" "$t" "$sym" "$pt" "$ratio"
}

for r in 1 2 4; do row gpt:L=4,C=128,H=4,V=256,T=128 4 128 4 256 128 16 "$r" "$steps"; done
row gpt:d12 12 768 12 50257 1024 2 1 $(( steps / 8 > 4 ? steps / 8 : 5 ))
