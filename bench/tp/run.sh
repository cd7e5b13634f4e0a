#!/usr/bin/env bash
# bench/tp/run.sh — tensor parallelism on CPU PEs: tokens/s and activation
# memory a PE of plain TP (the baseline), TP with its all-reduces overlapped
# with the GEMMs in C row chunks (--tp-overlap C) and sequence parallelism
# (--parallel ...,sp), each beside the baseline measured in the same run on
# the same machine, with the ratio. The variants of one layout run
# interleaved, REPS rounds, and each figure is the median of its rounds (the
# machine may be shared: say so beside the figures).
#
#   bench/tp/run.sh BUILD_DIR [STEPS] [REPS]
#
# Layouts: tp=2 on 2 PEs, tp=4 and dp=2,tp=2 on 4 PEs. Model
# gpt:L=2,C=256,H=8,V=256,T=64, global batch 8, AdamW, fp32, --threads 1;
# tokens/s by bench/gpt/rate.py over the steps after 3 warm-up steps.
set -u
build=$1
steps=${2:-10}
reps=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
model=gpt:L=2,C=256,H=8,V=256,T=64
batch=8
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs);" \
     "load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
echo "# $model, global batch $batch, AdamW, fp32, $steps steps (3 warm-up), median of $reps rounds"
printf "%-12s %-16s %10s %10s %7s %12s %7s\n" layout variant tok/s base_tok/s ratio acts_bytes ratio
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for lay in "2 tp=2" "4 tp=4" "4 dp=2,tp=2"; do
    pes=${lay%% *}
    par=${lay#* }
    variants=("plain|" "overlap 2|--tp-overlap 2" "overlap 4|--tp-overlap 4" "sp|,sp")
    for r in $(seq "$reps"); do
        for i in "${!variants[@]}"; do
            v=${variants[$i]#*|}
            p=$par extra=""
            case $v in ,sp) p=$par,sp ;; *) extra=$v ;; esac
            # shellcheck disable=SC2086
            "$build/symrun" -n "$pes" "$build/symtrain" train --model "$model" --generated \
                --device cpu --batch $batch --steps "$steps" --threads 1 --test-samples 1 \
                --metrics "$tmp/m.jsonl" --parallel "$p" $extra >"$tmp/train.log" 2>&1 ||
                { cat "$tmp/train.log"; exit 1; }
            python3 "$here/gpt/rate.py" "$tmp/m.jsonl" >>"$tmp/rate.$i"
            sed -n 's/.*activations \([0-9.]* [KMG]*i*B\).*/\1/p' "$tmp/train.log" | head -1 \
                >"$tmp/acts.$i"
        done
    done
    base=$(median <"$tmp/rate.0")
    for i in "${!variants[@]}"; do
        rate=$(median <"$tmp/rate.$i")
        acts=$(cat "$tmp/acts.$i")
        python3 - "$par" "${variants[$i]%%|*}" "$rate" "$base" "$acts" "$(cat "$tmp/acts.0")" <<'PY'
import sys
lay, name, rate, base, acts, base_acts = sys.argv[1:7]
def size(s):
    v, u = s.split()
    return float(v) * {"B": 1, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}[u]
print("%-12s %-16s %10.0f %10.0f %7.3f %12s %7.3f" % (lay, name, float(rate), float(base),
      float(rate) / float(base), acts.replace(" ", ""), size(acts) / size(base_acts)))
PY
    done
    rm -f "$tmp"/rate.* "$tmp"/acts.*
done
echo "# ratio: the variant over plain TP of the same layout, same run; acts: the activation"
echo "# pool's blocks in use a PE (the largest PE's, from the start line)"
