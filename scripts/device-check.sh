#!/usr/bin/env bash
# The whole GPU check in one command, for the lent GPU machine (or any GPU box with the kit):
#   source .device/bootstrap.sh && bash scripts/device-check.sh
# Writes logs and result files under $OUT (default ./device-out).
set -uo pipefail
OUT="${OUT:-device-out}"
mkdir -p "$OUT"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -cd 'A-Za-z0-9_-' | tr 'A-Z' 'a-z')
{ nvidia-smi; python3 -c 'import cuda.bindings, sys; print("cuda-bindings", cuda.bindings.__version__)'; } > "$OUT/env.txt" 2>&1
python3 -m umprof devices > "$OUT/devices.txt" 2>&1; cat "$OUT/devices.txt"
python3 -m pytest -m gpu -q -x ${PYTEST_ARGS:-} tests/gpu 2>&1 | tee "$OUT/gpu-tests.log" | tail -25
if [ -z "${SKIP_DEFAULT:-}" ]; then
  start=$(date +%s)
  python3 -m umprof run -o "$OUT/$gpu-default.parquet" --force 2>&1 | tee "$OUT/default-run.txt" | tail -60
  echo "default suite took $(( $(date +%s) - start )) s" | tee -a "$OUT/default-run.txt"
fi
