#!/usr/bin/env bash
# Issue 13's GPU work (the application loop), in steps that each fit one device call:
#   source .device/bootstrap.sh && STEP=measure bash scripts/device-decide.sh
#       the loop's GPU tests; `umprof run calibration`; the verification set under every strategy
#   source .device/bootstrap.sh && STEP=calibrate [SCENARIOS="calibration-loop-sizes ..."] bash scripts/device-decide.sh
#       `umprof run calibration` alone (or the scenarios named), for a calibration split over calls
#   source .device/bootstrap.sh && STEP=set SET=holdout-2 bash scripts/device-decide.sh
#       a workload set (scenarios/workloads/$SET.toml) under every strategy, in ROUNDS rounds (default 5);
#       TAG=b names a second run of the same set apart ($gpu-loop-$SET-b.parquet)
#   source .device/bootstrap.sh && STEP=verify CAL=results/<gpu>-loop-calibration.parquet bash scripts/device-decide.sh
#       `recommend --verify --verify-top all` on scenarios/workloads/verify.toml (the whole run), then the same
#       measurements judged per steady iteration (--steady --measured: one measurement serves both modes)
# Writes logs and result files under $OUT (default ./device-out).
set -uo pipefail
OUT="${OUT:-device-out}"
mkdir -p "$OUT"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -cd 'A-Za-z0-9_-' | tr 'A-Z' 'a-z')
case "${STEP:-measure}" in
  measure)
    python3 -m pytest -m gpu -q tests/gpu/test_loop.py 2>&1 | tee "$OUT/loop-tests.log" | tail -8
    start=$(date +%s)
    timeout -s INT "${CAL_LIMIT:-300}" python3 -m umprof run calibration -o "$OUT/$gpu-loop-calibration.parquet" \
      --force --um-counters off -q 2>&1 | tail -5
    echo "calibration took $(( $(date +%s) - start )) s" | tee "$OUT/calibration-run.txt"
    start=$(date +%s)
    timeout -s INT "${VERIFY_LIMIT:-540}" python3 scripts/measure_workloads.py \
      scenarios/workloads/verify.toml "$OUT/$gpu-loop-verify.parquet" 2>&1 | tail -5
    echo "verification measured in $(( $(date +%s) - start )) s" | tee -a "$OUT/calibration-run.txt"
    ;;
  calibrate)
    start=$(date +%s)
    # shellcheck disable=SC2086  # SCENARIOS is a list of names
    timeout -s INT "${CAL_LIMIT:-540}" python3 -m umprof run ${SCENARIOS:-calibration} \
      -o "$OUT/$gpu-loop-calibration${PART:+-$PART}.parquet" --force --um-counters off -q 2>&1 | tail -5
    echo "calibration${PART:+ ($PART)} took $(( $(date +%s) - start )) s" | tee -a "$OUT/calibration-run.txt"
    ;;
  set|holdout)
    set_name="${SET:-holdout}"
    start=$(date +%s)
    timeout -s INT "${VERIFY_LIMIT:-540}" python3 scripts/measure_workloads.py \
      "scenarios/workloads/$set_name.toml" "$OUT/$gpu-loop-$set_name${TAG:+-$TAG}.parquet" 2>&1 | tail -5
    echo "$set_name${TAG:+ ($TAG)} measured in $(( $(date +%s) - start )) s" | tee -a "$OUT/calibration-run.txt"
    ;;
  verify)
    start=$(date +%s)
    python3 -m umprof recommend --from "${CAL:?CAL=calibration results}" --workload scenarios/workloads/verify.toml \
      --verify --verify-top all -o "$OUT/$gpu-loop-verify.parquet" --force > "$OUT/$gpu-recommend-verify.txt" 2>&1
    echo "verification took $(( $(date +%s) - start )) s" | tee -a "$OUT/$gpu-recommend-verify.txt"
    python3 -m umprof recommend --from "$CAL" --workload scenarios/workloads/verify.toml --steady \
      --measured "$OUT/$gpu-loop-verify.parquet" > "$OUT/$gpu-recommend-verify-steady.txt" 2>&1
    tail -20 "$OUT/$gpu-recommend-verify.txt" "$OUT/$gpu-recommend-verify-steady.txt"
    ;;
esac
