#!/usr/bin/env bash
# Issue 4/5 checks on the GPU machine, after: source .device/bootstrap.sh
# Runs the unified-memory scenarios (results kept under $OUT) and captures nsys fixtures.
set -uo pipefail
OUT="${OUT:-device-out}"; mkdir -p "$OUT"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -cd 'A-Za-z0-9_-' | tr 'A-Z' 'a-z')
start=$(date +%s)
python3 -m umprof run um-pages um-advice um-sparse -o "$OUT/$gpu-um.parquet" --force 2>&1 | tee "$OUT/um-run.txt" | tail -80
echo "um scenarios took $(( $(date +%s) - start )) s" | tee -a "$OUT/um-run.txt"
python3 -m umprof show "$OUT/$gpu-um.parquet" --um > "$OUT/um-table.txt" 2>&1
nsys stats --help-reports > "$OUT/nsys-help-reports.txt" 2>&1
