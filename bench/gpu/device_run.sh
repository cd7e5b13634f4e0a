#!/usr/bin/env bash
# bench/gpu/device_run.sh — the GPU part on a GPU machine, in one go: build
# (CMake Release into build-gpu), the GPU tests at 1 and 2 PEs (and PEs sharing
# GPUs), the benchmarks beside NCCL and MPI, and a short summary table last.
#
#   bench/gpu/device_run.sh [all|first|test|bench|tune]      (from the repository root)
#
# all: everything (about 8 minutes on 2 H200s); first: build, tests, the float
# all-reduce table, the other collectives, gpu-put and the tuning sweeps that
# pick the table's block counts; test, bench, tune: those parts alone.
# Logs and tables go to $OUT (default ./gpu-out), at most 8 files:
#   machine.txt build.log tests.log allreduce.txt colls.txt put.txt tune.txt summary.txt
# Everything runs under a time budget (SYMTRAIN_BUDGET_S, default 510 s): a step
# that would start too late is skipped and the summary says so.
# NVLink multicast stays off everywhere (NCCL_NVLS_ENABLE=0, NVSHMEM_DISABLE_NVLS=1).
set -u
MODE=${1:-all}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
B=${BUILD_DIR:-build-gpu}
BUDGET=${SYMTRAIN_BUDGET_S:-510}
T0=$(date +%s)
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export SYMTRAIN_GPU_TIMEOUT=${SYMTRAIN_GPU_TIMEOUT:-20}
PY=$(command -v python3 || true)
if [ -z "${NVSHMEM_HOME:-}" ] && [ -n "$PY" ]; then
  NVSHMEM_HOME=$($PY -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null) && export NVSHMEM_HOME
fi
if [ -z "${NCCL_HOME:-}" ] && [ -n "$PY" ]; then
  NCCL_HOME=$($PY -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null) && export NCCL_HOME
fi
case "$MODE" in
  all) STEPS="tests ar_f32 ar_bf16 colls private put tune_blocks tune_cross ring share" ;;
  first) STEPS="tests ar_f32 tune_blocks tune_cross colls put share" ;;
  test) STEPS="tests share" ;;
  bench) STEPS="ar_f32 ar_bf16 colls private put" ;;
  tune) STEPS="tune_blocks tune_cross ring" ;;
  *) echo "usage: $0 [all|first|test|bench|tune]"; exit 2 ;;
esac
STEPS=${SYMTRAIN_STEPS:-$STEPS} # e.g. SYMTRAIN_STEPS="tests ar_f32"
want() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
NOTES=()
note() { NOTES+=("$*"); echo "device_run: $*"; }
elapsed() { echo $(( $(date +%s) - T0 )); }
# run_step SECONDS_NEEDED name command...: skip if the budget is short
have_time() { [ $(( BUDGET - $(elapsed) )) -ge "$1" ]; }
SYMRUN="$B/symrun"

# ---- machine ----
{
  echo "# $(date -u +%FT%TZ) $(uname -srm)"
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv 2>&1
  nvidia-smi topo -m 2>&1
  nvcc --version 2>&1 | tail -2
  cmake --version 2>&1 | head -1
  (mpirun --version 2>&1 | head -1) || echo "mpirun: not found"
  echo "NVSHMEM_HOME=${NVSHMEM_HOME:-} NCCL_HOME=${NCCL_HOME:-}"
  nproc
} > "$OUT/machine.txt" 2>&1

# ---- build ----
if [ "$MODE" != bench ] && [ "$MODE" != tune ] || [ ! -x "$B/symbench-gpu" ]; then
  {
    cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release &&
    targets="symrun symgpu symgpu_nvshmem symbench-gpu gpu_nolib gpu_init gpu_coll gpu_user_kernel" &&
    if cmake --build "$B" --target help | grep -q symbench-gpu-mpi; then targets="$targets symbench-gpu-mpi"; fi &&
    targets=${SYMTRAIN_TARGETS:-$targets} &&
    cmake --build "$B" -j "$(nproc)" --target $targets
  } > "$OUT/build.log" 2>&1
  if [ $? -ne 0 ] || [ ! -x "$B/symrun" ]; then
    tail -40 "$OUT/build.log"
    echo "device_run: BUILD FAILED (see build.log)"
    exit 1
  fi
  grep -i "symtrain: GPU" "$OUT/build.log"
  echo "device_run: built in $(elapsed) s"
fi

# ---- tests ----
TESTS_LINE="tests: not run"
if want tests; then
  if have_time 120; then
    (cd "$B" && timeout 240 ctest -L gpu -E share --output-on-failure --timeout 150) > "$OUT/tests.log" 2>&1
    TESTS_LINE="tests (1 GPU per PE): $(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1)"
    echo "device_run: $TESTS_LINE ($(elapsed) s)"
  else
    note "tests skipped: out of time"
  fi
fi

bench() { # bench SECONDS_NEEDED OUTFILE [VAR=VALUE...] symbench-gpu-args...
  local need=$1 out=$2 envs=()
  shift 2
  while [ $# -gt 0 ] && [[ "$1" == *=* ]]; do envs+=("$1"); shift; done
  if ! have_time "$need"; then note "skipped (time): symbench-gpu $*"; return; fi
  echo "## ${envs[*]:-} symrun -n 2 symbench-gpu $*" >> "$out"
  env "${envs[@]}" timeout $(( BUDGET - $(elapsed) )) "$SYMRUN" -n 2 "$B/symbench-gpu" "$@" >> "$out" 2>&1 ||
    note "symbench-gpu $* ended with status $?"
  echo >> "$out"
}

# ---- benchmarks ----
: > "$OUT/allreduce.txt"
want ar_f32 && bench 60 "$OUT/allreduce.txt" gpu-allreduce -b 8 -e 1G -t float
want ar_bf16 && bench 40 "$OUT/allreduce.txt" gpu-allreduce -b 8 -e 1G -t bfloat16
# ---- tuning sweeps: block counts and the one-shot/two-shot crossover ----
: > "$OUT/tune.txt"
if want tune_blocks; then
  for nb in 64 96 128; do
    bench 25 "$OUT/tune.txt" gpu-allreduce -b 16M -e 1G -f 4 --algo twoshot --blocks "$nb" --no-graph --no-nccl
  done
fi
if want tune_cross; then
  for al in oneshot twoshot; do
    bench 20 "$OUT/tune.txt" gpu-allreduce -b 128K -e 2M --algo "$al" --no-nccl
  done
  for mc in 8K 16K; do
    bench 20 "$OUT/tune.txt" SYMTRAIN_GPU_MIN_CHUNK=$mc gpu-allreduce -b 512K -e 16M --algo twoshot --no-nccl --no-graph
  done
fi
want ring && bench 20 "$OUT/tune.txt" gpu-allreduce -b 8 -e 256M -f 8 --algo ring --no-graph

if want colls; then
  : > "$OUT/colls.txt"
  bench 40 "$OUT/colls.txt" gpu-reduce-scatter -b 8 -e 1G -f 4
  bench 40 "$OUT/colls.txt" gpu-allgather -b 8 -e 1G -f 4
  bench 40 "$OUT/colls.txt" gpu-broadcast -b 8 -e 1G -f 4
  bench 40 "$OUT/colls.txt" gpu-alltoall -b 8 -e 1G -f 4
fi
want private && bench 30 "$OUT/allreduce.txt" gpu-allreduce -b 1M -e 1G -f 4 --private --no-graph
if want put; then
  : > "$OUT/put.txt"
  MPI_TSV="$OUT/put.txt.mpi"
  if [ -x "$B/symbench-gpu-mpi" ] && command -v mpirun > /dev/null; then
    if have_time 60; then
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 \
        mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,vader,tcp \
        "$B/symbench-gpu-mpi" -b 8 -e 64M > "$MPI_TSV" 2>> "$OUT/put.txt" ||
        note "MPI baseline ended with status $?"
    fi
  else
    note "MPI baseline not measured: mpicc/mpirun not found at build time"
  fi
  bench 30 "$OUT/put.txt" gpu-put -b 8 -e 64M --mpi-table "$MPI_TSV"
  if [ -f "$MPI_TSV" ]; then
    { echo "## MPI baseline (symbench-gpu-mpi):"; cat "$MPI_TSV"; } >> "$OUT/put.txt"
    rm -f "$MPI_TSV"
  fi
fi

# ---- PEs sharing GPUs (time-sliced: last, and bounded) ----
if want share; then
  if have_time 40; then
    (cd "$B" && timeout $(( BUDGET - $(elapsed) - 5 )) ctest -L gpu -R share --output-on-failure --timeout 120) >> "$OUT/tests.log" 2>&1
    TESTS_LINE="$TESTS_LINE; shared GPUs: $(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1)"
  else
    note "shared-GPU tests skipped: out of time"
  fi
fi

# ---- summary ----
{
  echo "== symtrain GPU: $(head -3 "$OUT/machine.txt" | tail -1 | cut -c1-60) ... ($(elapsed) s)"
  echo "$TESTS_LINE"
  grep -E "^ +[0-9]+ - |Failed|\*\*\*" "$OUT/tests.log" 2>/dev/null | head -12
  if [ -s "$OUT/allreduce.txt" ]; then
    echo "all-reduce (first table: float, symmetric buffers): ours vs NCCL busbw GB/s, time ratio NCCL/ours"
    awk '/^## /{t++} t==1 && $1 ~ /^(8|1K|64K|1M|16M|256M|512M|1G)$/ {
           printf "  %6s %-8s busbw %7s vs %7s  ratio %5s  graph ratio %5s %s\n", $1, $4, $8, $14, $18, $19, $20 }' "$OUT/allreduce.txt"
    awk '/^## /{t++} t==1 && NF>=20 && $1 !~ /^#/ { n++; if ($18+0 < 1.0) below++;
           if (min=="" || $18+0 < min) {min=$18+0; at=$1} }
         END { printf "  stream ratio min %.2f at %s; sizes below NCCL: %d of %d\n", min, at, below, n }' "$OUT/allreduce.txt"
  fi
  if [ -s "$OUT/tune.txt" ]; then
    echo "tuning sweeps (ours, busbw GB/s):"
    awk '/^## /{h=$0; sub(/^## /,"",h); sub(/symrun -n 2 symbench-gpu gpu-allreduce /,"",h); gsub(/ --no-nccl| --no-graph|SYMTRAIN_GPU_/,"",h)}
         $1 ~ /^(64K|256K|1M|4M|16M|64M|256M|1G)$/ && NF>=10 && $1 !~ /^#/ {
           printf "  %-44s %5s %-8s %8s\n", substr(h,1,44), $1, $4, $8 }' "$OUT/tune.txt"
  fi
  if [ -s "$OUT/colls.txt" ]; then
    echo "other collectives (float): ours vs NCCL busbw, ratio"
    awk '/^## /{h=$3} $1 ~ /^(8|64K|1M|16M|256M|1G)$/ && NF>=20 {
           printf "  %-19s %6s %-8s %8s vs %8s  %5s\n", h, $1, $4, $8, $14, $18 }' "$OUT/colls.txt"
  fi
  (cd "$OUT" && grep -h "FAIL\|stuck\|rror" tests.log allreduce.txt colls.txt put.txt tune.txt 2>/dev/null) | grep -v "^#" | head -8
  for n in "${NOTES[@]}"; do echo "note: $n"; done
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
