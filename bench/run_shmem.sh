#!/bin/bash
# run_shmem.sh — symbench beside Open MPI's OpenSHMEM and Open MPI's MPI, in
# one run, on this machine, with 2 PEs; prints the tables side by side with
# the ratios and the two targets of issue 2.
#
#   bench/run_shmem.sh                 # from the repository root
#
# Environment:
#   BUILD=build          the CMake build directory (configured and built here)
#   ROUNDS=3             rounds; in each, symbench, the OpenSHMEM and the MPI
#                        baselines run one after the other, and each row keeps
#                        its best value over the rounds (the same best-of rule
#                        each program applies to its repetitions), so a burst of
#                        load on the machine cannot land on one program only
#   ARGS="..."           options for all three programs (symbench's names:
#                        --iters, --iters-large, --reps, --window, --min-size,
#                        --max-size, --stream)
#   TESTS="all"          the tests, e.g. "put get memcpy"; each round runs
#                        every test in every program before the next test
#   MPI=1                0: leave the MPI baseline out
#   OUTDIR=$BUILD/bench-results/<time>  where the raw outputs are kept
#
# Needs Open MPI (apt-get install openmpi-bin libopenmpi-dev): oshcc, oshrun,
# mpicc, mpirun. Shared memory only: UCX_TLS=sm,self. Open MPI's OpenSHMEM may
# crash in shmem_finalize here; its results are printed before, and a crash
# after the last table ("# osh_baseline: done") is tolerated.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
ARGS=${ARGS:-}
TESTS=${TESTS:-all}
MPI=${MPI:-1}
NP=2
STAMP=$(date +%Y%m%d-%H%M%S)
OUTDIR=${OUTDIR:-$BUILD/bench-results/$STAMP}

die() {
    echo "run_shmem.sh: $*" >&2
    exit 1
}
for t in oshcc oshrun mpicc mpirun cmake; do
    command -v "$t" >/dev/null || die "$t not found (apt-get install openmpi-bin libopenmpi-dev cmake)"
done

# ---- build ----
cmake -S "$ROOT" -B "$BUILD" >/dev/null || die "cmake configure failed"
cmake --build "$BUILD" -j "$(nproc)" --target symrun symbench >/dev/null ||
    die "building symrun and symbench failed (is cmake/bench.cmake included?)"
mkdir -p "$OUTDIR" "$BUILD/bench"
oshcc -O2 -Wall -o "$BUILD/bench/osh_baseline" bench/osh_baseline.c || die "oshcc failed"
mpicc -O2 -Wall -o "$BUILD/bench/mpi_baseline" bench/mpi_baseline.c || die "mpicc failed"

ROOTFLAG=""
[ "$(id -u)" = 0 ] && ROOTFLAG="--allow-run-as-root"
export UCX_TLS=sm,self
export SHMEM_SYMMETRIC_SIZE=512M SYMTRAIN_SYMMETRIC_SIZE=512M

# ---- the machine ----
{
    echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "commit:  $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
    echo "cpu:     $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
    echo "caches:  $(lscpu 2>/dev/null | awk -F: '/^L[123]/ {gsub(/^ +/, "", $2); printf "%s %s; ", $1, $2}')"
    echo "memory:  $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
    echo "kernel:  $(uname -sr)$(systemd-detect-virt 2>/dev/null | sed 's/^/, virtualised: /')"
    echo "mpi:     $(mpirun --version 2>/dev/null | head -1)"
    echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at the start"
    echo "command: ROUNDS=$ROUNDS TESTS='$TESTS' MPI=$MPI ARGS='$ARGS' bench/run_shmem.sh"
} | tee "$OUTDIR/machine.txt"

# ---- the runs ----
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r of $ROUNDS: symbench, OpenSHMEM$([ "$MPI" = 1 ] && echo ", MPI")" >&2
    for t in $TESTS; do
        "$BUILD/symrun" -n $NP "$BUILD/symbench" "$t" $ARGS >"$OUTDIR/symbench.$r.$t" 2>&1 ||
            die "symbench failed; see $OUTDIR/symbench.$r.$t"
        [ "$t" = memcpy ] && continue # symbench's own row, for the put table
        oshrun $ROOTFLAG --oversubscribe -np $NP "$BUILD/bench/osh_baseline" "$t" $ARGS \
            >"$OUTDIR/osh.$r.$t" 2>&1
        grep -q "^# osh_baseline: done" "$OUTDIR/osh.$r.$t" ||
            die "the OpenSHMEM baseline did not finish; see $OUTDIR/osh.$r.$t"
        [ "$MPI" = 1 ] || continue
        mpirun $ROOTFLAG --oversubscribe -np $NP "$BUILD/bench/mpi_baseline" "$t" $ARGS \
            >"$OUTDIR/mpi.$r.$t" 2>&1 || die "the MPI baseline failed; see $OUTDIR/mpi.$r.$t"
    done
done
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) at the end" | tee -a "$OUTDIR/machine.txt"

# ---- side by side ----
# Every file: "# <program> <test> <measure>: ..." then "# size <column>" then rows.
awk -v rounds="$ROUNDS" '
function keep(prog, key, size, v,   k) {
    k = prog SUBSEP key SUBSEP size
    if (!(k in val) || (lat[key] ? v < val[k] : v > val[k])) val[k] = v
    if (!((key, size) in seen)) { seen[key, size] = 1; order[key] = order[key] " " size }
}
FNR == 1 {
    prog = FILENAME; sub(/.*\//, "", prog); sub(/\..*/, "", prog)
    key = ""
}
/^# (symbench|osh_baseline|mpi_baseline) [a-z_]+ (latency|bandwidth):/ {
    key = $3 " " $4; sub(/:$/, "", key)
    lat[key] = ($4 ~ /^latency/)
    if (!(key in known)) { known[key] = 1; keys[++nkeys] = key }
    next
}
/^#/ { next }
key != "" && NF == 2 { keep(prog, key, $1, $2 + 0) }
function cell(prog, key, size,   k) {
    k = prog SUBSEP key SUBSEP size
    return (k in val) ? sprintf("%12.4f", val[k]) : sprintf("%12s", "-")
}
function ratio(a, b,   ka, kb) {
    if (!(a in val) || !(b in val) || val[b] == 0) return sprintf("%9s", "-")
    return sprintf("%8.2fx", val[a] / val[b])
}
END {
    for (i = 1; i <= nkeys; i++) {
        key = keys[i]
        if (key == "memcpy bandwidth") continue
        unit = lat[key] ? "us, lower is better" : "GB/s, higher is better"
        printf "\n## %s (%s)\n", key, unit
        if (lat[key])
            printf "%-10s %12s %12s %12s %9s %9s\n", "size", "symtrain", "openshmem", "mpi", "osh/sym", "mpi/sym"
        else
            printf "%-10s %12s %12s %12s %9s %9s%s\n", "size", "symtrain", "openshmem", "mpi", "sym/osh", "sym/mpi", (key == "put bandwidth" ? sprintf(" %12s %10s", "memcpy", "put/memcpy") : "")
        n = split(order[key], sizes, " ")
        for (j = 1; j <= n; j++) {
            s = sizes[j]
            S = "symbench" SUBSEP key SUBSEP s; O = "osh" SUBSEP key SUBSEP s; M = "mpi" SUBSEP key SUBSEP s
            line = sprintf("%-10s %s %s %s", s, cell("symbench", key, s), cell("osh", key, s), cell("mpi", key, s))
            if (lat[key]) line = line " " ratio(O, S) " " ratio(M, S)
            else line = line " " ratio(S, O) " " ratio(S, M)
            if (key == "put bandwidth") {
                C = "symbench" SUBSEP "memcpy bandwidth" SUBSEP s
                line = line " " cell("symbench", "memcpy bandwidth", s) " " ratio(S, C)
                if (s + 0 >= 1048576 && (C in val)) {
                    r = val[S] / val[C]
                    if (!("min" in big) || r < big["min"]) { big["min"] = r; big["at"] = s }
                }
            }
            print line
        }
    }
    printf "\n## targets (best of %d rounds)\n", rounds
    P = "pingpong latency" SUBSEP 8
    if ((("symbench" SUBSEP P) in val) && (("osh" SUBSEP P) in val)) {
        a = val["symbench" SUBSEP P]; b = val["osh" SUBSEP P]
        printf "ping-pong latency (p + wait_until, one way): symtrain %.4f us, Open MPI OpenSHMEM %.4f us: %s\n", a, b, (a <= b ? "met (no worse)" : "MISSED")
    }
    if ("min" in big)
        printf "put bandwidth >= 1 MiB vs single-core memcpy: lowest ratio %.1f%% (at %d bytes): %s\n", 100 * big["min"], big["at"], (big["min"] >= 0.9 ? "met (>= 90%)" : "MISSED")
}' "$OUTDIR"/symbench.* "$OUTDIR"/osh.* $(ls "$OUTDIR"/mpi.* 2>/dev/null) | tee "$OUTDIR/side-by-side.txt"
echo
echo "raw outputs: $OUTDIR"
