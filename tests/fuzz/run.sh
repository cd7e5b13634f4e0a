#!/bin/sh
# run.sh FUZZER SEEDS WORK SECONDS — one bounded libFuzzer run from the
# committed seeds. New inputs go to WORK/corpus (the seeds are never written);
# a crash, leak, sanitizer report or an allocation above 256 MB fails the
# test and leaves its input in WORK (the path is printed), to replay with
# `FUZZER FILE`.
set -eu
fuzzer=$1 seeds=$2 work=$3 secs=$4
mkdir -p "$work/corpus"
exec "$fuzzer" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=256 -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$seeds"
