#!/usr/bin/env bash
# The host touching GPU-held managed memory a word every SPACING bytes (benchmarks/host_touch.cu), untraced and
# under Nsight Systems with unified memory's faults traced, as a program's trace for `umprof advise` is made: what
# each touch costs, and how much longer a trace shows it. On a GPU machine, from the checkout's root, after
# `source .device/bootstrap.sh`:   bash benchmarks/host_touch.sh
# Writes $OUT/host-touch.tar.gz: untraced.jsonl (a line a rep), traced-SPACING.sqlite and traced-SPACING.jsonl;
# then `python3 benchmarks/host_touch_table.py DIR --json FILE` reads them.
set -u
OUT="${OUT:-host-touch-out}"; W="$OUT/host-touch"; mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$W/gpu.txt"
date -u +%F > "$W/date.txt"
nvcc -O2 -arch=sm_90 -std=c++17 -o "$W/host_touch" benchmarks/host_touch.cu || exit 1
for s in ${SPACINGS:-65536 131072 262144 524288 1048576 2097152}; do
  "$W/host_touch" --mib "${MIB:-256}" --spacing "$s" --reps 5 >> "$W/untraced.jsonl" || exit 1
  nsys profile -t cuda --cuda-um-gpu-page-faults=true --cuda-um-cpu-page-faults=true --export sqlite \
    --force-overwrite true -o "$W/traced-$s" "$W/host_touch" --mib "${MIB:-256}" --spacing "$s" --reps 5 \
    > "$W/traced-$s.log" 2>&1
  grep '^{' "$W/traced-$s.log" > "$W/traced-$s.jsonl"; rm -f "$W/traced-$s.nsys-rep" "$W/traced-$s.log"
done
rm -f "$W/host_touch"
tar czf "$OUT/host-touch.tar.gz" -C "$OUT" host-touch && rm -rf "$W"
