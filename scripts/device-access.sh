#!/usr/bin/env bash
# The access patterns' GPU check in one command, on a GPU machine with the CUDA toolkit:
#   source .device/bootstrap.sh && bash scripts/device-access.sh
# GPU tests, the `access` group of scenarios, and a Nsight Compute pass on a stride sweep.
set -uo pipefail
OUT="${OUT:-device-out}"
mkdir -p "$OUT"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -cd 'A-Za-z0-9_-' | tr 'A-Z' 'a-z')
timeout "${TEST_TIMEOUT:-240}" python3 -m pytest -o addopts=-ra -m gpu -q ${PYTEST_ARGS:-tests/gpu} 2>&1 | tee "$OUT/gpu-tests.log" | tail -15
start=$(date +%s)
timeout "${ACCESS_TIMEOUT:-300}" python3 -m umprof run access --um-counters off -q -o "$OUT/$gpu-access.parquet" --force > "$OUT/access-run.txt" 2>&1
echo "access group took $(( $(date +%s) - start )) s (rc $?)" | tee -a "$OUT/access-run.txt"
python3 -m umprof show "$OUT/$gpu-access.parquet" > "$OUT/$gpu-access-show.txt" 2>&1
timeout "${NCU_TIMEOUT:-120}" python3 -m umprof run coalescing-stride caches -a stride=1,2,4,32 -a offset=0,1 -a cache=default -a bytes=64MiB \
  --ncu --um-counters off -o "$OUT/$gpu-ncu.parquet" --force > "$OUT/ncu-run.txt" 2>&1
tail -40 "$OUT/ncu-run.txt"
