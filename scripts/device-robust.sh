#!/usr/bin/env bash
# Issue 14's check on the lent GPU machine (or any GPU box with the kit), in one command:
#   source .device/bootstrap.sh && bash scripts/device-robust.sh
# 1. the default suite, timed by wall clock from a fresh process (kernels compiled afresh
#    unless the cubin cache already holds them);
# 2. the whole GPU suite RUNS times in a row (default 3), every run logged in one file, with
#    each timing check's margin (UMPROF_MARGINS) and the fault checks' findings (UMPROF_FAULT_LOG).
# SKIP_DEFAULT=1 skips step 1; RUNS=0 skips step 2; FIRST=N numbers the runs from N (a second call
# that goes on with run 3). Writes under $OUT (default ./device-out).
set -uo pipefail
OUT="${OUT:-device-out}"
mkdir -p "$OUT"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -cd 'A-Za-z0-9_-' | tr 'A-Z' 'a-z')
{ nvidia-smi; python3 -m umprof devices --no-measure; } > "$OUT/env.txt" 2>&1
if [ -z "${SKIP_DEFAULT:-}" ]; then
  start=$(date +%s.%N)
  python3 -m umprof run -o "$OUT/$gpu-default.parquet" --force > "$OUT/$gpu-default-run.txt" 2>&1
  rc=$?
  echo "default suite: exit $rc, took $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s (wall clock, process start to exit)" \
    | tee -a "$OUT/$gpu-default-run.txt"
fi
export UMPROF_MARGINS="$OUT/$gpu-margins.jsonl" UMPROF_FAULT_LOG="$OUT/$gpu-faults.log"
first=${FIRST:-1}
for i in $(seq "$first" $(( first + ${RUNS:-3} - 1 ))); do
  echo "=== GPU suite run $i on $gpu, $(date -u +%FT%TZ) ===" >> "$OUT/$gpu-gpu-tests.log"
  echo "=== run $i ===" >> "$UMPROF_FAULT_LOG"
  start=$(date +%s)
  python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu >> "$OUT/$gpu-gpu-tests.log" 2>&1
  echo "run $i: exit $?, $(( $(date +%s) - start )) s" | tee -a "$OUT/$gpu-gpu-tests.log"
done
