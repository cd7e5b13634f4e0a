#!/usr/bin/env bash
# bench/plan/run.sh — the planner beside the measurement: for each layout, the
# step time and memory per PE `symtrain plan --device cpu` predicts, and what
# `symtrain train` measures on this machine in the same run (median step time
# over the steps after the first 3, from its --metrics file; memory from its
# start line, the allocators' figures). The rates the planner uses are
# measured by it at plan time (sgemm, a copy) and printed under the table.
#
#   bench/plan/run.sh BUILD_DIR [STEPS] [LAYOUT[:TRAIN ARGS]]...
#
# Default layouts: dp=1, dp=2, dp=4 (what symtrain train runs on main); one
# with tp or pp > 1 runs with --parallel dp=N,tp=M,pp=K, and what follows ':'
# goes to symtrain train as it is (e.g. "dp=2,zero=1:--zero 1"), so the
# layouts of the other issue-17 branches can be added once merged:
#   bench/plan/run.sh build 20 dp=4 dp=2,tp=2 tp=4 "dp=2,pp=2,micro=4:--micro 4"
# Model: the `make run` GPT, gpt:L=4,C=128,H=4,V=256,T=128, global batch 16.
set -u
build=$1
steps=${2:-20}
shift $(( $# >= 2 ? 2 : $# ))
layouts=("$@")
[ ${#layouts[@]} -gt 0 ] || layouts=(dp=1 dp=2 dp=4)
model=gpt:L=4,C=128,H=4,V=256,T=128
batch=16
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cores=$(nproc)
echo "# machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# $model, global batch $batch, AdamW, fp32, $steps steps a layout (3 warm-up)"
printf "%-28s %4s %8s %12s %12s %7s %12s %12s %7s\n" layout pes GFLOP/s pred_ms meas_ms ratio \
    pred_mem meas_mem ratio
for entry in "${layouts[@]}"; do
    spec=${entry%%:*}
    extra=""
    [ "$spec" = "$entry" ] || extra=${entry#*:}
    dp=1 tp=1 pp=1
    for kv in ${spec//,/ }; do
        case $kv in dp=*) dp=${kv#dp=} ;; tp=*) tp=${kv#tp=} ;; pp=*) pp=${kv#pp=} ;; esac
    done
    pes=$((dp * tp * pp))
    par=""
    [ "$tp" = 1 ] && [ "$pp" = 1 ] || par="--parallel dp=$dp,tp=$tp,pp=$pp"
    threads=$((cores / pes)); [ $threads -ge 1 ] || threads=1
    rm -f "$tmp/m.jsonl"
    # shellcheck disable=SC2086
    "$build/symrun" -n "$pes" "$build/symtrain" train --model "$model" --generated --device cpu \
        --batch $batch --steps "$steps" --threads $threads --test-samples 1 \
        --metrics "$tmp/m.jsonl" $par $extra >"$tmp/train.log" 2>&1 ||
        { cat "$tmp/train.log"; exit 1; }
    "$build/symtrain" plan --device cpu --model "$model" --pes "$pes" --batch $batch \
        --layout "$spec" --device-mem 1T --json >"$tmp/plan.json" 2>&1 ||
        { cat "$tmp/plan.json"; exit 1; }
    [ -n "${rates:-}" ] || rates=$(python3 -c 'import json,sys; print("\n".join("# " + a for a in json.load(open(sys.argv[1]))["assumptions"][:2]))' "$tmp/plan.json")
    python3 - "$tmp/m.jsonl" "$tmp/plan.json" "$tmp/train.log" "$entry" "$pes" "$batch" <<'PY'
import json, re, statistics, sys
metrics, plan, log, entry, pes, batch = sys.argv[1:7]
steps = [json.loads(l) for l in open(metrics) if '"eval"' not in l]
dts = [int(batch) / s["samples_per_s"] for s in steps[3:]] or [int(batch) / steps[-1]["samples_per_s"]]
meas = statistics.median(dts) * 1e3
doc = json.load(open(plan))
lay = doc["layouts"][0]
pred = lay["time"]["step"] * 1e3
m = re.search(r"; \S+ \S+ in all \((\d+) bytes\)", open(log).read())
mm = int(m.group(1)) if m else float("nan")
pm = lay["mem"]["total"]
print("%-28s %4s %8.2f %12.2f %12.2f %7.2f %12d %12d %7.3f" % (entry, pes, doc["rates"]["flops"] / 1e9,
      pred, meas, pred / meas, pm, mm, pm / mm))
PY
done
echo "${rates:-}" | sed '1s/^# /# first layout: /'
echo "# GFLOP/s: the rate a PE the planner measured for that layout's PE count (a training"
echo "# pass of a 1-layer GPT of the model's width), so each row's prediction is its own"
echo "# ratio = predicted / measured; memory in bytes a PE (the largest PE's)"
