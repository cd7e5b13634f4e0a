#!/usr/bin/env bash
# bench/ddp/run_ddp.sh — data-parallel training throughput: symtrain beside
# PyTorch DDP (gloo) in the same run, same model, global batch, optimizer and
# threads per rank.
#
#   bench/ddp/run_ddp.sh BUILD_DIR "RANKS..." [THREADS_TOTAL] [STEPS] [BATCH]
#
# For each rank count R: symtrain on R PEs (symrun) with THREADS_TOTAL/R BLAS
# threads per PE, then PyTorch with the same (skipped, saying so, when torch
# is not importable). symtrain's rate is the global samples per second over the
# steps after the first 20, from its --metrics file; its communication share is
# comm_s / (compute_s + comm_s) over those steps.
set -u
build=$1
ranks=$2
total=${3:-$(nproc)}
steps=${4:-300}
batch=${5:-512}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
have_torch=0
python3 -c "import torch" 2>/dev/null && have_torch=1
[ $have_torch = 1 ] || echo "# PyTorch not importable here: its column is left out"
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# model mlp:784-512-256-10 relu dropout 0.2, AdamW lr 1e-3, clip 1, global batch $batch, $steps steps (20 warm-up)"
printf "%6s %8s %14s %10s %14s %8s\n" ranks threads symtrain_sps comm_share pytorch_sps ratio
for r in $ranks; do
    t=$((total / r))
    [ $t -ge 1 ] || t=1
    rm -f "$tmp/m.jsonl"
    "$build/symrun" -n "$r" "$build/symtrain" train --generated --batch "$batch" --epochs 100 \
        --max-steps "$steps" --threads "$t" --metrics "$tmp/m.jsonl" --quiet >"$tmp/sym.log" 2>&1 ||
        { cat "$tmp/sym.log"; exit 1; }
    read -r sps share < <(python3 - "$tmp/m.jsonl" "$batch" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"samples_per_s"' in l]
rows = [r for r in rows if r["step"] > 20]
b = int(sys.argv[2])
wall = sum(b / r["samples_per_s"] for r in rows)
comm = sum(r["comm_s"] for r in rows)
comp = sum(r["compute_s"] for r in rows)
print(f"{len(rows) * b / wall:.0f} {comm / (comm + comp):.3f}")
PY
)
    psps="-"
    ratio="-"
    if [ $have_torch = 1 ]; then
        psps=$(python3 "$here/torch_ddp.py" "$r" "$t" "$steps" "$batch" 2>/dev/null | awk '{print $NF}')
        [ -n "$psps" ] && ratio=$(python3 -c "print(f'{$sps/$psps:.2f}')")
    fi
    printf "%6s %8s %14s %10s %14s %8s\n" "$r" "$t" "$sps" "$share" "${psps:--}" "$ratio"
done
