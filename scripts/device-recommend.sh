#!/usr/bin/env bash
# Issue 6's GPU work, in two steps that each fit one device call:
#   source .device/bootstrap.sh && STEP=calibrate bash scripts/device-recommend.sh
#       the workload GPU tests, then `umprof run calibration`
#   source .device/bootstrap.sh && STEP=verify CAL=results/<gpu>-calibration.parquet bash scripts/device-recommend.sh
#       `recommend --verify --verify-top all` on scenarios/workloads/verify.toml, then `umprof run crossovers`
# Writes logs and result files under $OUT (default ./device-out).
set -uo pipefail
OUT="${OUT:-device-out}"
mkdir -p "$OUT"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -cd 'A-Za-z0-9_-' | tr 'A-Z' 'a-z')
case "${STEP:-calibrate}" in
  calibrate)
    python3 -m pytest -m gpu -q ${PYTEST_ARGS:-tests/gpu/test_workload.py} 2>&1 | tee "$OUT/gpu-tests.log" | tail -15
    start=$(date +%s)
    python3 -m umprof run calibration -o "$OUT/$gpu-calibration.parquet" --force --um-counters off -q 2>&1 | tail -20
    echo "calibration took $(( $(date +%s) - start )) s" | tee "$OUT/calibration-run.txt"
    python3 -m umprof show "$OUT/$gpu-calibration.parquet" >> "$OUT/calibration-run.txt" 2>&1
    ;;
  verify)
    start=$(date +%s)
    python3 -m umprof recommend --from "${CAL:?CAL=calibration results}" --workload scenarios/workloads/verify.toml \
      --verify --verify-top all -o "$OUT/$gpu-verify.parquet" --force > "$OUT/recommend-verify.txt" 2>&1
    echo "verification took $(( $(date +%s) - start )) s" | tee -a "$OUT/recommend-verify.txt"
    tail -25 "$OUT/recommend-verify.txt"
    start=$(date +%s)
    python3 -m umprof run crossovers -o "$OUT/$gpu-crossovers.parquet" --force -q 2>&1 | tail -20
    echo "crossovers took $(( $(date +%s) - start )) s" | tee "$OUT/crossovers-run.txt"
    ;;
esac
