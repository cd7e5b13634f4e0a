#!/usr/bin/env bash
# bench/gpt/check_gpu.sh — what the GPU part needs run on a GPU machine, in
# one call: a build, the GPU tests (ctest -L gpu), gpt:d12 beside PyTorch
# (run_gpu.sh), and the Prometheus endpoint of a GPU run (its GPU memory, MFU
# and balancer gauges).
#
#   bench/gpt/check_gpu.sh OUT_DIR [BUILD_DIR]
set -u
out=$1
build=${2:-build-gpu}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cmake -S . -B "$build" >"$out/cmake.log" 2>&1 && cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log"; exit 1; }
echo "== GPU tests"
(cd "$build" && ctest -L gpu --output-on-failure --timeout 300) >"$out/gpu_tests.log" 2>&1
grep -E "Test +#|tests passed|tests failed" "$out/gpu_tests.log"
echo "== gpt:d12 beside PyTorch"
bash bench/gpt/run_gpu.sh "$build" python3 30 2>&1 | tee "$out/d12_bf16.txt"
echo "== the metrics endpoint of a GPU run"
"$build/symtrain" train --model gpt:d12 --generated --device gpu --batch 16 --steps 400 \
    --test-samples 1 --log-interval 1000 --metrics-port 0 >"$out/prom_run.log" 2>&1 &
pid=$!
python3 - "$out/prom_run.log" <<'PY'
import re, sys, time, urllib.request
for _ in range(120):
    m = re.search(r"metrics at http://[^:]+:(\d+)/metrics", open(sys.argv[1]).read())
    if m:
        break
    time.sleep(0.5)
else:
    sys.exit("no metrics endpoint announced")
time.sleep(8)  # some steps
text = urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/metrics").read().decode()
for line in text.splitlines():
    if re.match(r"symtrain_(gpu_memory|mfu|balance|straggler|step\{|tokens_per_second)", line):
        print(line)
PY
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
exit 0
