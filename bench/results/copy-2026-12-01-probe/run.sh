#!/bin/bash
# The copy comparison of docs/performance.md ("Copy speed ... probe"): in each
# round, for cached and then streaming (--stream 256M) buffers and for put then
# get: symbench as built (measured threshold and probe), symbench with
# SYMTRAIN_COPY_NT_MIN=53760K (the rule before: half this machine's L3, no
# probe), Open MPI's OpenSHMEM; one after the other, so the three see the same
# load. Run from the build directory after bench/run_shmem.sh has built
# bench/osh_baseline; OUT=dir for the raw outputs; rounds START (default 1)
# to ROUNDS (default 4). symbench's first PE says what it measured (VERBOSE=1).
set -u
OUT=${OUT:-copy-probe}
ROUNDS=${ROUNDS:-4}
START=${START:-1}
VERBOSE=${VERBOSE:-0}
export UCX_TLS=sm,self SHMEM_SYMMETRIC_SIZE=512M SYMTRAIN_SYMMETRIC_SIZE=512M
ROOTFLAG=""
[ "$(id -u)" = 0 ] && ROOTFLAG="--allow-run-as-root"
mkdir -p "$OUT/cache" "$OUT/stream"
echo "start $(date -u '+%F %T') load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
for r in $(seq "$START" "$ROUNDS"); do
  for mode in cache stream; do
    A="--min-size 8 --max-size 4M --iters 10000"
    [ $mode = stream ] && A="$A --stream 256M"
    for t in put get; do
      SYMTRAIN_VERBOSE=$VERBOSE ./symrun -n 2 ./symbench $t $A > "$OUT/$mode/sym.$r.$t" 2>&1
      SYMTRAIN_COPY_NT_MIN=53760K ./symrun -n 2 ./symbench $t $A > "$OUT/$mode/old.$r.$t" 2>&1
      oshrun $ROOTFLAG --oversubscribe -np 2 bench/osh_baseline $t $A > "$OUT/$mode/osh.$r.$t" 2>&1
    done
  done
  echo "round $r $(date -u '+%T') load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
done
