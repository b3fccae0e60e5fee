#!/usr/bin/env bash
# The verification programs on a GPU machine: built, traced (nsys and torch.profiler) and timed (every mode, in
# rounds). From the checkout's root, after `source .device/bootstrap.sh` (nsys on PATH, python3 with torch, CuPy and pycuda):
#   OUT=DIR bash benchmarks/verification/run_gpu.sh     [ROUNDS=3] [BUDGET_S=430] [ONLY=name,name] [SKIP_TRACES=1]
#                                                       [LIMIT=SECONDS: run_gpu.py stopped then, what it wrote packed]
#                                                       [NSYS_PYTORCH=autograd-nvtx [NSYS_PYTORCH_ONLY=1]: run_gpu.py's]
# Leaves in $OUT at most 8 files: log.txt, timings.tar.gz (timings/NAME.json) and traces.tar.gz (traces/: the
# as_written mode's nsys SQLite export trimmed to the tables umprof reads (*.trim.sqlite) and with the OS runtime
# calls too (*.osrt.sqlite), its torch.profiler trace (*.json.gz), nsys's log), split in 15 MiB parts if larger.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT="${OUT:-verification-out}"; mkdir -p "$OUT"
W=$(mktemp -d /tmp/verification.XXXX)
# NVLink multicast stays off (the machine's rule), also for the two-rank job's processes
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, cupy; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0), '| cupy', cupy.__version__)"
  python3 -c "import pycuda; print('pycuda', pycuda.VERSION_TEXT)"
  echo "nsys: $(command -v nsys) $(nsys --version 2>/dev/null)"; nproc; free -g | head -2
  ${LIMIT:+timeout --signal=INT --kill-after=15 "$LIMIT"} python3 "$HERE/run_gpu.py" --out "$W" --rounds "${ROUNDS:-3}" --budget-s "${BUDGET_S:-430}" ${ONLY:+--only "$ONLY"} ${SKIP_TRACES:+--skip-traces}
} 2>&1 | tee "$OUT/log.txt"
tar czf "$OUT/timings.tar.gz" -C "$W" timings
tar cf - -C "$W" traces | gzip -6 > "$OUT/traces.tar.gz"
if [ "$(stat -c %s "$OUT/traces.tar.gz")" -gt $((15 * 1024 * 1024)) ]; then
  split -b 15m -d "$OUT/traces.tar.gz" "$OUT/traces.tar.gz.part"; rm "$OUT/traces.tar.gz"
fi
ls -l "$OUT"
