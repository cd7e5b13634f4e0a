#!/usr/bin/env bash
# bench/pipeline/layouts.sh — a GPT trained on CPU PEs in each layout of data
# and pipeline parallelism, beside plain data parallelism on the same PEs, in
# one run on one machine: tokens per second (the median step after the first
# 3, from --metrics), the ratio to dp=N, and PE 0's peak memory.
#
#   [MODEL=gpt:L=8,C=128,H=4,V=256,T=64] [BATCH=16] [STEPS=20] [PES=4] \
#       bench/pipeline/layouts.sh BUILD_DIR
#
# Layouts for PES=4: dp=4 (the baseline), dp=2,pp=2, pp=4 (micro-batches: the
# stages' count), pp=4 with 8 micro-batches, and dp=2,pp=2 with 4 and pp=4
# with 8 micro-batches each at V=1 and V=2 virtual stages (--virtual-stages,
# interleaved 1F1B). One BLAS thread per PE; the generated corpus. The
# pipeline's bubble is (pp - 1) / (M + pp - 1) of a step on a balanced
# pipeline, so pp=4 with 4 micro-batches idles 3/7 of the time: expect it
# below dp, and closer with more micro-batches; with V virtual stages
# (pp - 1) / (V M + pp - 1), for twice the messages.
set -u
build=$1
model=${MODEL:-gpt:L=8,C=128,H=4,V=256,T=64}
batch=${BATCH:-16}
steps=${STEPS:-20}
pes=${PES:-4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(--generated --model "$model" --batch "$batch" --max-steps "$steps" --threads 1
      --device cpu --test-samples 16 --lr 0.001 --eval-every "$steps")
case $pes in
  2) layouts=(dp=2 pp=2 pp=2,M=8 pp=2,M=8,V=2) ;;
  4) layouts=(dp=4 dp=2,pp=2 pp=4 pp=4,M=8 dp=2,pp=2,M=4 dp=2,pp=2,M=4,V=2 pp=4,M=8,V=2) ;;
  *) echo "PES is 2 or 4" >&2; exit 2 ;;
esac
# median tokens/s of the steps after the first 3
rate() { awk -F'"tokens_per_s":' '!/"eval"/ && NR > 3 { split($2, a, ","); print a[1] }' "$1" |
         sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }
printf '%-18s %12s %8s %14s\n' layout tokens/s "vs dp" "PE 0 peak mem"
base=
for l in "${layouts[@]}"; do
  par=${l%%,[MV]=*}
  extra=()
  case $l in *,M=*) m=${l##*,M=}; extra=(--micro-batches "${m%%,*}") ;; esac
  case $l in *,V=*) extra+=(--virtual-stages "${l##*,V=}") ;; esac
  name=$(echo "$l" | tr ',=' '__')
  "$build/symrun" -n "$pes" "$build/symtrain" train "${args[@]}" --parallel "$par" "${extra[@]}" \
    --metrics "$tmp/$name.jsonl" > "$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; exit 1; }
  r=$(rate "$tmp/$name.jsonl")
  mem=$(sed -n 's/.*PE 0 peak memory \(.*\)$/\1/p' "$tmp/$name.log" | tail -1)
  [ -z "$base" ] && base=$r
  printf '%-18s %12.0f %7.2fx %14s\n' "$l" "$r" "$(echo "$r $base" | awk '{ print $1 / $2 }')" "$mem"
done
