#!/usr/bin/env bash
# bench/multigpu/run.sh — issue 21's run on a machine with several GPUs, in one
# call (nvidia-h200-x2, -x4 or -x8): the build, the GPU tests at one GPU per
# PE, gpt:d12 data parallelism on 1, 2, 4 ... N GPUs beside PyTorch DDP
# (torchrun, torch.compile) with the scaling efficiency, gpt:d48 beside
# PyTorch FSDP, the hybrid layouts the build offers on GPUs, the planner's
# choice, and the collectives' tables beside NCCL.
#
#   bench/multigpu/run.sh OUT_DIR [BUILD_DIR]          (from the repository root)
#
# Each part runs under a time budget (SYMTRAIN_BUDGET_S, default 560 s, one
# device call): a part that would start too late is skipped and the summary
# says so; SYMTRAIN_PARTS (default "tests d12 d48 layouts plan coll") picks
# parts, so a second call can run the rest. Results: OUT_DIR/summary.txt and a
# log per part. NVLink multicast stays off in every program started here.
set -u
out=$1
build=${2:-build-gpu}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
budget=${SYMTRAIN_BUDGET_S:-560}
parts=${SYMTRAIN_PARTS:-tests d12 d48 layouts plan coll}
t0=$(date +%s)
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
sum="$out/summary.txt"
: >"$sum"
say() { echo "$*" | tee -a "$sum"; }
left() { echo $((budget - ($(date +%s) - t0))); }
# part NAME NEEDS_S: run the part if NEEDS_S seconds are left and it was asked for
want() {
    case " $parts " in *" $1 "*) ;; *) return 1 ;; esac
    if [ "$(left)" -lt "$2" ]; then say "skipped $1: $(left) s left of the budget, it needs about $2"; return 1; fi
    return 0
}
say "# $(date -u +%F) $ngpu x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); $(nproc) cores"
nvidia-smi topo -m >"$out/topo.txt" 2>&1
if [ "$ngpu" -lt 2 ]; then say "only $ngpu GPU: this script is for 2 or more (issue 21)"; fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 &&
    cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
say "built in $(( $(date +%s) - t0 )) s"

# GPU counts to scale over: 1, 2, 4, 8 up to what the machine has
counts=""
for n in 1 2 4 8; do [ "$n" -le "$ngpu" ] && counts="$counts $n"; done

if want tests 150; then
    # one GPU per PE: the np2 tests run on separate GPUs here (they SKIP on one)
    (cd "$build" && ctest -L gpu --output-on-failure --timeout 240) >"$out/tests.log" 2>&1
    say "tests: $(grep -E 'tests passed|tests failed' "$out/tests.log")"
    grep -E "\*\*\*(Failed|Timeout)" "$out/tests.log" | tee -a "$sum"
fi

if want d12 120; then
    say "## gpt:d12 data parallelism, 16 x 1024 tokens per GPU (symtrain dp over PEs vs PyTorch DDP, compiled)"
    base_s="" base_t=""
    for n in $counts; do
        [ "$(left)" -lt 60 ] && { say "skipped d12 at $n GPUs: budget"; continue; }
        GPUS=$n MODEL=d12 BATCH=16 bash bench/gpt/run_gpu.sh "$build" python3 20 >"$out/d12_$n.txt" 2>&1
        s=$(awk '$1=="symtrain"{print $2}' "$out/d12_$n.txt")
        p=$(awk '$1=="pytorch" && $2=="compiled"{print $3}' "$out/d12_$n.txt")
        [ -z "$base_s" ] && base_s=$s && base_t=$p
        python3 - "$n" "${s:-0}" "${p:-0}" "${base_s:-0}" "${base_t:-0}" <<'PY' | tee -a "$sum"
import sys
n, s, p, bs, bt = int(sys.argv[1]), *map(float, sys.argv[2:])
eff = lambda r, b: f"{100 * r / (n * b):.0f}%" if b else "-"
print(f"{n} GPU(s): symtrain {s:.0f} tok/s (scaling {eff(s, bs)}), PyTorch DDP {p:.0f} tok/s "
      f"(scaling {eff(p, bt)}), ratio {s / p if p else 0:.2f}x")
PY
    done
fi

if want d48 200; then
    n=${ngpu}
    say "## gpt:d48 (1.5B) on $n GPUs, 8 x 1024 tokens per GPU (symtrain dp vs PyTorch FSDP2, compiled)"
    GPUS=$n MODEL=d48 BATCH=8 FSDP=1 bash bench/gpt/run_gpu.sh "$build" python3 10 >"$out/d48.txt" 2>&1
    grep -E "^(symtrain|pytorch)" "$out/d48.txt" | tee -a "$sum" || tail -5 "$out/d48.txt" | tee -a "$sum"
fi

if want layouts 90; then
    say "## hybrid layouts of gpt:d12 on $ngpu GPUs (whatever --parallel offers on GPUs in this build)"
    # LAYOUT[:MORE OPTIONS]: data, tensor and pipeline parallelism, ZeRO-1 and 2, the planner's choice
    for spec in "dp=$ngpu" "dp=$ngpu:--zero 1" "dp=$ngpu:--zero 2" "tp=2,dp=$((ngpu / 2))" \
                "pp=2,dp=$((ngpu / 2)):--micro-batches 4" \
                "pp=2,dp=$((ngpu / 2)):--micro-batches 4 --zero 1" "auto"; do
        [ "$ngpu" -lt 2 ] && break
        lay=${spec%%:*}
        more=""; [ "$spec" != "$lay" ] && more=${spec#*:}
        name=$(printf %s "$spec" | tr -c 'A-Za-z0-9=,.-' _)
        # shellcheck disable=SC2086
        "$build/symrun" -n "$ngpu" "$build/symtrain" train --model gpt:d12 --generated --device gpu \
            --parallel "$lay" $more --batch $((16 * ngpu)) --steps 23 --test-samples 1 \
            --log-interval 1000 --metrics "$out/layout.jsonl" >"$out/layout_$name.log" 2>&1
        rc=$?
        r="$(python3 bench/gpt/rate.py "$out/layout.jsonl" 2>/dev/null) tok/s"
        [ $rc -eq 0 ] && say "$spec: $r" || say "$spec: exit $rc: $(grep -m1 -i 'symtrain' "$out/layout_$name.log" | tail -c 200)"
        rm -f "$out/layout.jsonl"
    done
fi

if want plan 10; then
    say "## the planner"
    for n in $counts; do
        "$build/symtrain" plan --model gpt:d12 --pes "$n" --device gpu --device-mem 141G --link nvlink \
            >"$out/plan_d12_$n.txt" 2>&1 && say "d12 on $n: $(grep -m1 -i 'choice\|chosen\|pick' "$out/plan_d12_$n.txt")" ||
            say "d12 on $n: symtrain plan: $(head -1 "$out/plan_d12_$n.txt")"
    done
    "$build/symtrain" plan --model gpt:d48 --pes "$ngpu" --device gpu --device-mem 141G --link nvlink \
        >"$out/plan_d48.txt" 2>&1 && say "d48 on $ngpu: $(grep -m1 -i 'choice\|chosen\|pick' "$out/plan_d48.txt")"
fi

if want coll 300; then
    say "## the collectives beside NCCL (bench/gpu/device_run.sh bench)"
    OUT="$out/coll" BUILD_DIR="$build" SYMTRAIN_BUDGET_S=$(($(left) - 20)) bash bench/gpu/device_run.sh bench \
        >"$out/coll.log" 2>&1
    [ -f "$out/coll/summary.txt" ] && cat "$out/coll/summary.txt" | tee -a "$sum"
fi
say "done in $(( $(date +%s) - t0 )) s"
