#!/usr/bin/env bash
# The multi-GPU check on a machine with two or more GPUs (two H200s, for one), in one command:
#   source .device/bootstrap.sh && bash scripts/device-multi-gpu.sh
# 1. the topology (nvidia-smi topo -m beside `umprof devices --device all`);
# 2. the multi-gpu group (p2p, host-links, um-peers) over every GPU, saved as results;
# 3. a two-rank MPI run (mpiexec from the mpich and mpi4py wheels in .mpi/, when present),
#    merged by rank 0 into one file;
# 4. the multi-GPU tests (FULL=1: the whole GPU suite), margins in UMPROF_MARGINS.
# Writes under $OUT (default ./device-out), at most eight files.
set -uo pipefail
OUT="${OUT:-device-out}"
mkdir -p "$OUT"
n=$(nvidia-smi -L | wc -l)
tag=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -cd 'A-Za-z0-9_-' | tr 'A-Z' 'a-z')-x$n
if ls .mpi/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/mpi .mpi/*.whl \
    && export PATH="/tmp/mpi/bin:$PATH" PYTHONPATH="$(echo /tmp/mpi/lib/python3*/site-packages):${PYTHONPATH:-}" \
              LD_LIBRARY_PATH="/tmp/mpi/lib:${LD_LIBRARY_PATH:-}"
fi
{ nvidia-smi topo -m; python3 -m umprof devices --device all; } > "$OUT/$tag-topology.txt" 2>&1
start=$(date +%s)
python3 -m umprof run multi-gpu --device all -o "$OUT/$tag-multi-gpu.parquet" --force > "$OUT/$tag-multi-gpu-run.txt" 2>&1
echo "multi-gpu group: exit $?, $(( $(date +%s) - start )) s" | tee -a "$OUT/$tag-multi-gpu-run.txt"
start=$(date +%s)
{ echo "mpiexec: $(command -v mpiexec || echo none)"
  mpiexec -n 2 python3 -m umprof run transfers -a strategy=pageable,pinned -o "$OUT/$tag-mpi.parquet" --force
  echo "two-rank MPI run: exit $?, $(( $(date +%s) - start )) s"; } > "$OUT/$tag-mpi-run.txt" 2>&1
tail -1 "$OUT/$tag-mpi-run.txt"
export UMPROF_MARGINS="$OUT/$tag-margins.jsonl"
tests=tests/gpu/test_multi_gpu.py
[ -n "${FULL:-}" ] && tests=tests/gpu
start=$(date +%s)
python3 -m pytest -o addopts=-ra -m gpu -q -p no:cacheprovider -rs $tests > "$OUT/$tag-gpu-tests.log" 2>&1
echo "GPU tests ($tests): exit $?, $(( $(date +%s) - start )) s" | tee -a "$OUT/$tag-gpu-tests.log"
