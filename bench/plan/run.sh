#!/usr/bin/env bash
# bench/plan/run.sh — the planner beside the measurement, on 4 CPU PEs: each
# layout of 4 PEs trained by `symtrain train` (tokens/s over the steps after
# the first 3, from its --metrics file; memory per PE from its start line, the
# allocators' figures) beside what `symtrain plan --device cpu --layout`
# predicts for it (step time, memory per PE); then `symtrain train --parallel
# auto` (the planner's choice, trained), and at the end the planner's choice,
# the fastest layout measured and the ratio of their tokens/s.
#
#   bench/plan/run.sh BUILD_DIR [STEPS] [LAYOUT[:TRAIN ARGS]]...
#
# BUILD_DIR without symtrain and symrun in it is configured and built first
# (cmake, the CPU part only: -DSYMTRAIN_GPU=OFF), so on a clean tree
#   bench/plan/run.sh build-plan 20
# does everything. No network, no GPU. About 2 minutes on an idle 16-core
# machine (3 s to 10 s a layout, the build aside).
#
# Layouts (the planner's spelling): dp=4, dp=2,tp=2, dp=2,pp=2 each with ZeRO
# 0, 1 and 2, tp=2,pp=2, tp=4, pp=4 (pipelines with their default
# micro-batches, one a stage), dp=2,pp=2 and tp=2,pp=2 at 2 virtual stages;
# micro=M runs as --micro-batches M, zero=Z as --zero Z, virtual=V as
# --virtual-stages V, and what follows ':' goes to symtrain train as it is. A layout the
# training loop refuses in this build is listed with its message, not trained.
# Every prediction uses the rates PE 0 measured at the start of the auto run
# (printed under the table; passed as --flops and --mem-bw), so the rows and
# the choice are predicted from the same figures.
# Model: the `make run` GPT, gpt:L=4,C=128,H=4,V=256,T=128, global batch 16,
# AdamW, fp32; cores / 4 BLAS threads a PE.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:?usage: bench/plan/run.sh BUILD_DIR [STEPS] [LAYOUT[:TRAIN ARGS]]...}
steps=${2:-20}
shift $(( $# >= 2 ? 2 : $# ))
layouts=("$@")
[ ${#layouts[@]} -gt 0 ] || layouts=(dp=4 dp=4,zero=1 dp=4,zero=2 dp=2,tp=2 dp=2,tp=2,zero=1
                                     dp=2,tp=2,zero=2 dp=2,pp=2 dp=2,pp=2,zero=1 dp=2,pp=2,zero=2
                                     tp=2,pp=2 tp=4 pp=4 dp=2,pp=2,micro=2,virtual=2
                                     tp=2,pp=2,micro=2,virtual=2)
model=gpt:L=4,C=128,H=4,V=256,T=128
batch=16
seq=128
pes=4
cores=$(nproc)
threads=$((cores / pes)); [ $threads -ge 1 ] || threads=1
if [ ! -x "$build/symtrain" ] || [ ! -x "$build/symrun" ]; then
    t0=$(date +%s)
    { cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSYMTRAIN_GPU=OFF &&
      cmake --build "$build" -j"$cores" --target symrun symtrain_cli; } >"$build.log" 2>&1 ||
        { tail -40 "$build.log"; echo "bench/plan/run.sh: the build failed ($build.log)"; exit 1; }
    echo "# built $build in $(( $(date +%s) - t0 )) s (cmake, -DSYMTRAIN_GPU=OFF)"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--generated --model "$model" --device cpu --batch $batch --steps "$steps"
        --threads $threads --test-samples 1 --lr 0.001)

# train SPEC NAME ARGS...: run it; 0 trained, 3 refused by this build (the log says why)
train() {
    local name=$1; shift
    "$build/symrun" -n $pes "$build/symtrain" train "${common[@]}" --metrics "$tmp/$name.jsonl" \
        "$@" >"$tmp/$name.log" 2>&1 && return 0
    grep -q "not in this build" "$tmp/$name.log" && return 3
    cat "$tmp/$name.log"; echo "bench/plan/run.sh: symtrain train $* failed"; exit 1
}
tokens_s() { python3 "$root/bench/gpt/rate.py" "$1"; }

echo "# machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# $model, global batch $batch x $seq, AdamW, fp32, $steps steps a layout (rates after the first 3), $pes PEs x $threads BLAS threads"

# the planner's choice first: its rates are the table's
train auto --parallel auto
line=$(grep -m1 -- '--parallel auto: ' "$tmp/auto.log")
read -r gflops gbs < <(echo "$line" | sed -n 's/.*CPU measured on PE 0: \([0-9.e+]*\) GFLOP\/s, \([0-9.e+]*\) GB\/s.*/\1 \2/p')
choice=$(echo "$line" | sed -n 's/.*--parallel auto: dp=\([0-9]*\),tp=\([0-9]*\),pp=\([0-9]*\), \([0-9]*\) micro-batch[es]*, ZeRO-\([0-9]\).*/dp=\1,tp=\2,pp=\3,micro=\4,zero=\5/p')
virt=$(echo "$line" | sed -n 's/.*, ZeRO-[0-9], \([0-9]*\) virtual stages.*/\1/p')
[ -z "$virt" ] || choice="$choice,virtual=$virt"
[ -n "$choice" ] && [ -n "${gbs:-}" ] || { cat "$tmp/auto.log"; echo "no choice in the auto run"; exit 1; }

printf "%-32s %9s %9s %9s %6s %12s %12s %6s\n" layout tok/s meas_ms pred_ms ratio pred_mem \
    meas_mem ratio
# row NAME SPEC [LABEL]: the measured and predicted figures of the layout run as NAME
row() {
    local name=$1 spec=$2 label=${3:-$1}
    "$build/symtrain" plan --device cpu --model "$model" --pes $pes --batch $batch \
        --layout "$spec" --device-mem 1T --flops "${gflops}e9" --mem-bw "${gbs}e9" --json \
        >"$tmp/$name.plan" 2>&1 || { cat "$tmp/$name.plan"; exit 1; }
    python3 - "$tmp/$name.jsonl" "$tmp/$name.plan" "$tmp/$name.log" "$label" "$batch" "$seq" \
        "$(tokens_s "$tmp/$name.jsonl")" <<'PY' | tee -a "$tmp/rows"
import json, re, sys
metrics, plan, log, name, batch, seq, tok = sys.argv[1:8]
lay = json.load(open(plan))["layouts"][0]
pred = lay["time"]["step"] * 1e3
m = re.search(r"; \S+ \S+ in all \((\d+) bytes\)", open(log).read())
mm = int(m.group(1)) if m else float("nan")
pm = lay["mem"]["total"]
meas = int(batch) * int(seq) / float(tok) * 1e3 if tok != "none" else float("nan")
print("%-32s %9s %9.1f %9.1f %6.2f %12d %12d %6.3f" % (name, tok, meas, pred, pred / meas, pm, mm,
      pm / mm))
with open(metrics + ".canon", "w") as f:  # the layout as the planner spells it in full
    f.write("dp=%(dp)d,tp=%(tp)d,pp=%(pp)d,micro=%(micro)d,zero=%(zero)d" % lay +
            (",virtual=%d" % lay["virtual"] if lay["virtual"] > 1 else "") + "\n")
PY
    echo "$(cat "$tmp/$name.jsonl.canon") $label" >>"$tmp/canon"
}

for entry in "${layouts[@]}"; do
    spec=${entry%%:*}
    extra=""
    [ "$spec" = "$entry" ] || extra=${entry#*:}
    dp=1 tp=1 pp=1 micro="" zero=0 virtual=1
    for kv in ${spec//,/ }; do
        case $kv in dp=*) dp=${kv#dp=} ;; tp=*) tp=${kv#tp=} ;; pp=*) pp=${kv#pp=} ;;
                    micro=*) micro=${kv#micro=} ;; zero=*) zero=${kv#zero=} ;;
                    virtual=*) virtual=${kv#virtual=} ;; esac
    done
    [ $((dp * tp * pp)) = $pes ] || { echo "$spec: not $pes PEs"; exit 2; }
    args=(--parallel "dp=$dp,tp=$tp,pp=$pp")
    if [ -n "$micro" ]; then
        args+=(--micro-batches "$micro")
    fi
    [ "$zero" = 0 ] || args+=(--zero "$zero")
    [ "$virtual" = 1 ] || args+=(--virtual-stages "$virtual")
    name=$(echo "$spec" | tr -d ' ')
    # shellcheck disable=SC2086
    train "$name" "${args[@]}" $extra
    case $? in
        0) row "$name" "$spec" ;;
        3) printf "%-32s not trained: %s\n" "$name" "$(grep -m1 'not in this build' \
               "$tmp/$name.log" | sed 's/^symtrain[a-z ]*: \(PE [0-9]*: \)\{0,1\}//' | cut -c1-100)" ;;
    esac
done
echo "# --parallel auto: ${line#symtrain: --parallel auto: }"
row auto "$choice" "auto=$choice" >/dev/null
best=$(grep -v '^auto=' "$tmp/rows" | sort -k2,2 -g -r | head -1)
mine=$(grep '^auto=' "$tmp/rows")
# the choice's own row in the table, where one of the layouts is the same
same=$(awk -v c="$choice" '$1 == c && $2 !~ /^auto=/ { print $2; exit }' "$tmp/canon")
twin=""
[ -z "$same" ] || twin=$(awk -v n="$same" '$1 == n { print $2; exit }' "$tmp/rows")
python3 - "$best" "$mine" "$same" "$twin" <<'PY'
import sys
best, mine, same, twin = sys.argv[1].split(), sys.argv[2].split(), sys.argv[3], sys.argv[4]
name = mine[0][len("auto="):]
print("%-32s %9s %9s %9s %6s %12s %12s %6s" % tuple(["auto: " + name] + mine[1:8]))
auto = float(mine[1]) / float(best[1])
if twin:  # the table's rows ran one after the other under the same conditions
    print("planner's choice %s (%s), fastest measured %s, ratio %.2f (%s / %s tok/s; the auto "
          "run itself %s tok/s, ratio %.2f)" % (same, name, best[0], float(twin) / float(best[1]),
                                                twin, best[1], mine[1], auto))
else:
    print("planner's choice %s (not a layout of the table; its auto run), fastest measured %s, "
          "ratio %.2f (%s / %s tok/s)" % (name, best[0], auto, mine[1], best[1]))
PY
echo "# rates (PE 0 at the start of the auto run, passed to every prediction): $gflops GFLOP/s, $gbs GB/s a PE"
echo "# ratio = predicted / measured; memory in bytes a PE (the largest PE's, allocators)"
