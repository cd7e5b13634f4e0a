#!/bin/bash
# The placement experiment of docs/performance.md ("Copy speed: the page
# offset"): streaming put and get (--stream 256M), 512 B to 8 KiB, symbench
# with its private buffers page-aligned (as the symmetric buffer: the same
# offset in their pages), symbench with them 208 bytes into their pages (where
# Open MPI's shmem_malloc puts its symmetric buffer against page-aligned
# private ones), and Open MPI's OpenSHMEM; alternating, ROUNDS rounds. Run from
# the build directory after bench/run_shmem.sh has built bench/osh_baseline;
# OUT=dir for the raw outputs.
set -u
OUT=${OUT:-copy-offset}
ROUNDS=${ROUNDS:-4}
export UCX_TLS=sm,self SHMEM_SYMMETRIC_SIZE=512M SYMTRAIN_SYMMETRIC_SIZE=512M
ROOTFLAG=""
[ "$(id -u)" = 0 ] && ROOTFLAG="--allow-run-as-root"
mkdir -p "$OUT"
echo "start $(date -u '+%F %T') load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
A="--min-size 512 --max-size 8K --iters 10000 --stream 256M"
for r in $(seq 1 "$ROUNDS"); do
  for t in put get; do
    ./symrun -n 2 ./symbench $t $A > "$OUT/sym0.$r.$t" 2>&1
    ./symrun -n 2 ./symbench $t $A --local-offset 208 > "$OUT/sym208.$r.$t" 2>&1
    oshrun $ROOTFLAG --oversubscribe -np 2 bench/osh_baseline $t $A > "$OUT/osh.$r.$t" 2>&1
  done
  echo "round $r $(date -u '+%T') load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"
done
