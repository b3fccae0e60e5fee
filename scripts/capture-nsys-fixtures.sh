#!/usr/bin/env bash
# On the GPU machine (after source .device/bootstrap.sh): trace umprof and the example app with nsys,
# keep each trace's SQLite export trimmed to the tables umprof reads (tests/fixtures/nsys/*.sqlite), and
# nsys' own reports of the same traces as CSV (*_<report>.csv), which the tests hold umprof's reading to.
set -uo pipefail
OUT="${OUT:-device-out}"; mkdir -p "$OUT/nsys"
t=/tmp/umprof-trace; mkdir -p $t
nsys --version > "$OUT/nsys/version.txt" 2>&1
nsys profile -t cuda,nvtx -o $t/run --force-overwrite true \
  python3 -m umprof run transfers -a bytes=64MiB -a strategy=pinned,pageable --min-samples 3 --timeout 0.3 -q -o $t/run.parquet --force \
  > "$OUT/nsys/profile-run.log" 2>&1
nsys profile -t cuda,nvtx --cuda-um-gpu-page-faults=true --cuda-um-cpu-page-faults=true -o $t/um --force-overwrite true \
  python3 -m umprof run host-strategies -a strategy=managed,managed-prefetch -a bytes=16MiB -a reuse=1 --min-samples 2 --timeout 0.2 -q -o $t/um.parquet --force \
  > "$OUT/nsys/profile-um.log" 2>&1
nsys profile -t cuda,nvtx -o $t/app --force-overwrite true python3 examples/annotated_app.py --mib 16 > "$OUT/nsys/profile-app.log" 2>&1
for rep in run um app; do
  nsys export --type sqlite --force-overwrite true --output $t/$rep.sqlite $t/$rep.nsys-rep >> "$OUT/nsys/export.log" 2>&1
  python3 benchmarks/apps/trim_trace.py $t/$rep.sqlite "$OUT/nsys/$rep.sqlite"
  for r in nvtx_pushpop_trace nvtx_gpu_proj_trace um_total_sum cuda_gpu_mem_size_sum cuda_gpu_mem_time_sum; do
    nsys stats --report $r --format csv --output $OUT/nsys/$rep $t/$rep.sqlite >> "$OUT/nsys/stats.log" 2>&1 || echo "FAILED $rep $r" >> "$OUT/nsys/stats.log"
  done
done
ls -la $OUT/nsys | head -60
