#!/usr/bin/env bash
# bench/balance/run.sh — dynamic load balancing: one of 4 PEs slowed 2x and 4x,
# the static even split (--balance off) beside --balance throughput, in the same
# run, for the MLP and the GPT.
#
#   bench/balance/run.sh BUILD_DIR [MLP_STEPS] [GPT_STEPS]
#
# The slow PE is PE 3 through the test-only SYMTRAIN_TEST_SLOW_PE=3:F (it sleeps
# F - 1 times its compute after computing, so it runs at 1/F speed). Two
# scenarios:
#   cpu     the models' real CPU compute (on a small machine the 4 PEs share
#           its cores, so the slow PE's sleep lends CPU to the others: the
#           speeds the balancer sees move with the shares);
#   device  every PE also spends SYMTRAIN_TEST_SAMPLE_MS per sample asleep, as
#           a GPU PE's host waits while its device works: speeds that do not
#           depend on the host's cores.
# Per row: the steady step time (median over the last 60% of the steps) and the
# global tokens/s (samples/s for the MLP) over those steps; the ideal step, the
# global batch over the sum of the PEs' measured speeds at the end of the
# balanced run; the speed-up over static (and the ideal's); the steps to settle
# (the first step from which every PE's share stays within 10% or one sample
# of its final share); the balanced run's final shares.
set -u
build=$1
mlp_steps=${2:-60}
gpt_steps=${3:-30}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# 4 PEs (symrun -n 4), 1 BLAS thread each; PE 3 slowed by the factor; rebalance every 10 steps"
printf "%-7s %-38s %4s %9s %9s %9s %11s %11s %8s %8s %6s  %s\n" scenario model slow \
    static_ms bal_ms ideal_ms static_tps bal_tps speedup ideal_x settle shares

DATA="--generated --train-samples 20000 --test-samples 1"

run() { # name args steps env... -> $tmp/name.jsonl
    local name=$1 args=$2 steps=$3
    shift 3
    rm -f "$tmp/$name.jsonl"
    env "$@" "$build/symrun" -n 4 "$build/symtrain" train $args --max-steps "$steps" --threads 1 \
        --quiet --metrics "$tmp/$name.jsonl" >"$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; exit 1; }
}

row() { # scenario label args steps slow sample_ms
    local scen=$1 label=$2 args=$3 steps=$4 slow=$5 ms=$6
    run static "$args --balance off" "$steps" SYMTRAIN_TEST_SLOW_PE=3:$slow SYMTRAIN_TEST_SAMPLE_MS=$ms
    run bal "$args --balance throughput" "$steps" SYMTRAIN_TEST_SLOW_PE=3:$slow SYMTRAIN_TEST_SAMPLE_MS=$ms
    python3 - "$tmp/static.jsonl" "$tmp/bal.jsonl" "$scen" "$label" "$slow" <<'PY'
import json, statistics, sys
def load(path):
    return [r for r in map(json.loads, open(path)) if "eval" not in r]
st, bal = load(sys.argv[1]), load(sys.argv[2])
n = len(bal)
lo = int(n * 0.4)
B = sum(p["share"] for p in bal[-1]["pes"])
tok = bal[-1]["tokens_per_s"] / bal[-1]["samples_per_s"]  # tokens per sample
def step_s(r): return B / r["samples_per_s"]
def steady(rs): return statistics.median(step_s(r) for r in rs[lo:])
def rate(rs): return (n - lo) * B * tok / sum(step_s(r) for r in rs[lo:])
ts, tb = steady(st), steady(bal)
ideal = B / sum(p["samples_per_s"] for p in bal[-1]["pes"])
final = [p["share"] for p in bal[-1]["pes"]]
def near(r): return all(abs(p["share"] - f) <= max(1, 0.1 * f) for p, f in zip(r["pes"], final))
settle = next(i + 1 for i in range(n) if all(near(r) for r in bal[i:]))
shares = " ".join(str(p["share"]) for p in bal[-1]["pes"])
print(f"{sys.argv[3]:<7} {sys.argv[4]:<38} {sys.argv[5]:>3}x {1e3*ts:9.1f} {1e3*tb:9.1f} "
      f"{1e3*ideal:9.1f} {rate(st):11.0f} {rate(bal):11.0f} {ts/tb:7.2f}x {ts/ideal:7.2f}x "
      f"{settle:6d}  {shares}")
PY
}

for slow in 2 4; do
    row cpu "mlp:784-256-10 x128" "$DATA --model mlp:784-256-10 --batch 128" "$mlp_steps" $slow 0
    row cpu "gpt:L=2,C=64,H=2,V=256,T=64 x16" \
        "$DATA --model gpt:L=2,C=64,H=2,V=256,T=64 --device cpu --batch 16" "$gpt_steps" $slow 0
done
for slow in 2 4; do
    row device "mlp:784-128-10 x64 +3ms" "$DATA --model mlp:784-128-10 --batch 64" \
        "$mlp_steps" $slow 3
    row device "gpt:L=1,C=32,H=2,V=256,T=32 x16 +30ms" \
        "$DATA --model gpt:L=1,C=32,H=2,V=256,T=32 --device cpu --batch 16" "$gpt_steps" $slow 30
done
