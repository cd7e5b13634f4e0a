#!/usr/bin/env bash
# bench/ckpt/stall.sh — what checkpoints cost training: the step loop's time
# lost per checkpoint (the stall) with the write in the step loop
# (--ckpt-async off, the baseline) and in the background (--ckpt-async on),
# beside a run without checkpoints, in the same run of this script on the
# same machine; then --ckpt-every 5s in the background against no
# checkpoints (tokens per second).
#
#   [MODEL=d12] [BATCH=..] [SEQ=..] [NPES=1] [EVERY=K] bench/ckpt/stall.sh BUILD_DIR cpu|gpu [STEPS]
#
# cpu: gpt:MODEL on the CPU, BATCH sequences (default 1) of SEQ tokens
# (default 128: the checkpoint is the whole model's state whatever the batch),
# on NPES PEs; gpu: --device gpu (bf16), BATCH 16 x 1024 tokens. A checkpoint
# every EVERY steps (default: 2 on the CPU, 20 on the GPU) in the stall rows,
# whole-tensor format, in a
# directory under $TMPDIR (default /tmp: the disk the figures are of); then
# the same with sharded checkpoints (--ckpt-format sharded: every PE writes
# its shard; on the GPU from an asynchronous snapshot with --ckpt-async on).
# The stall is symtrain's own figure (the step loop's time in taking and, with
# --ckpt-async off, writing each checkpoint, the last one's included; "max" the
# largest), the step time its mean step, stall/step their ratio (the target:
# under 1); tok/s_steps is bench/gpt/rate.py's rate over the steps after the
# first 3 (a background write that slows the steps shows there), tok/s_loop
# the rate over every step with every stall added in (the first, slow, step
# in every row alike). On the GPU the next step's AdamW waits for the
# snapshot's copy, so part of a stall shows as step time.
set -u
build=$1
dev=${2:-cpu}
here=$(cd "$(dirname "$0")" && pwd)
rate=$here/../gpt/rate.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=${MODEL:-d12}
npes=${NPES:-1}
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
case $dev in
cpu) steps=${3:-8} every=${EVERY:-2} B=${BATCH:-1} T=${SEQ:-128}
     export SYMTRAIN_SYMMETRIC_SIZE=${SYMTRAIN_SYMMETRIC_SIZE:-4G}
     echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs);" \
          "load average $(cut -d' ' -f1-3 /proc/loadavg) at the start" ;;
gpu) steps=${3:-150} every=${EVERY:-50} B=${BATCH:-16} T=${SEQ:-1024}
     echo "# machine: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null |
          head -1); $(nproc) cores" ;;
*) echo "usage: bench/ckpt/stall.sh BUILD_DIR cpu|gpu [STEPS]" >&2; exit 2 ;;
esac
echo "# gpt:$model on $npes PE(s) ($dev), batch $B x $T tokens; $steps steps; checkpoints in" \
     "$(df -h --output=source,fstype "$tmp" | tail -1 | xargs) under $tmp"
printf "%-24s %5s %9s %9s %10s %10s %10s %11s %11s\n" run ckpts stall_ms max_ms step_ms \
    stall/step disk_ms "tok/s_steps" "tok/s_loop"

# run NAME ARGS...: one training run and its row
run() {
    local name=$1; shift
    rm -rf "$tmp/ck" "$tmp/m.jsonl"
    local launch=()
    [ "$npes" -gt 1 ] && launch=("$build/symrun" -n "$npes")
    "${launch[@]}" "$build/symtrain" train --model "gpt:$model" --generated --device "$dev" \
        --batch "$B" --seq "$T" --steps "$steps" --test-samples 1 --log-interval 1000 \
        --metrics "$tmp/m.jsonl" "$@" >"$tmp/log" 2>&1 || { tail -20 "$tmp/log"; exit 1; }
    cp "$tmp/log" "$tmp/$name.log"
    local line n=0 stall=- max=- step=- disk=-
    line=$(grep -m1 '^symtrain: checkpoints: ' "$tmp/log")
    if [ -n "$line" ]; then
        n=$(echo "$line" | sed -n 's/.*checkpoints: \([0-9]*\) taken.*/\1/p')
        stall=$(echo "$line" | sed -n 's/.*step loop \([0-9.]*\) ms each.*/\1/p')
        max=$(echo "$line" | sed -n 's/.*(largest \([0-9.]*\) ms).*/\1/p')
        step=$(echo "$line" | sed -n 's/.*against \([0-9.]*\) ms a step.*/\1/p')
        disk=$(echo "$line" | sed -n 's/.*took \([0-9.]*\) ms on disk.*/\1/p')
    fi
    # tok/s_steps: rate.py's; tok/s_loop: every step's time plus the stalls
    local tps loop tok=$((B * T))
    tps=$(python3 "$rate" "$tmp/m.jsonl")
    loop=$(python3 - "$tmp/m.jsonl" "$tok" "$n" "${stall/-/0}" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"tokens_per_s"' in l]
tok, n, stall = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
secs = sum(tok / r["tokens_per_s"] for r in rows)
print(f"{len(rows) * tok / (secs + n * stall / 1e3):.0f} {1e3 * secs / len(rows):.1f}")
PY
)
    [ "$step" = - ] && step=${loop#* }
    loop=${loop% *}
    local ratio=-
    [ "$stall" != - ] && ratio=$(python3 -c "print(f'{$stall / $step:.2f}')")
    printf "%-24s %5s %9s %9s %10s %10s %10s %11s %11s\n" "$name" "$n" "$stall" "$max" "$step" \
        "$ratio" "$disk" "$tps" "$loop"
}

run "none"
run "every $every, async off" --ckpt-dir "$tmp/ck" --ckpt-keep 2 --ckpt-steps "$every" --ckpt-async off
run "every $every, async on" --ckpt-dir "$tmp/ck" --ckpt-keep 2 --ckpt-steps "$every"
run "every $every, sharded, off" --ckpt-dir "$tmp/ck" --ckpt-keep 2 --ckpt-steps "$every" \
    --ckpt-format sharded --ckpt-async off
run "every $every, sharded, on" --ckpt-dir "$tmp/ck" --ckpt-keep 2 --ckpt-steps "$every" \
    --ckpt-format sharded
run "every 5s, async on" --ckpt-dir "$tmp/ck" --ckpt-keep 2 --ckpt-every 5s
