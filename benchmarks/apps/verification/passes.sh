#!/usr/bin/env bash
# A verification program timed by wall clock at several --passes, to tell its run's fixed part (allocation, the host's
# first write, its last read, free) from each pass's, and traced in some of its modes. On a GPU machine, from the
# checkout's root, after `source .device/bootstrap.sh`:
#   APP=tiles MODES="pageable once managed-prefetch" PASSES="1 2 4" TRACE="pageable managed-prefetch" ROUNDS=5 \
#     bash benchmarks/apps/verification/passes.sh
# Writes $OUT/passes.tar.gz of passes/: walls.txt ("app mode passes round exit seconds checksum", rounds alternating in order),
# traces/APP-MODE.sqlite, and a context-only program's walls (bare: CUDA's start and exit alone).
set -u
OUT="${OUT:-passes-out}"; HERE=$(cd "$(dirname "$0")" && pwd); W="$OUT/passes"; mkdir -p "$W/bin" "$W/traces"
source "$HERE/rounds.sh"
APP="${APP:-tiles}"; MODES="${MODES:-pageable managed-prefetch}"; PASSES="${PASSES:-1 2 4}"; TRACE="${TRACE:-}"
nvcc -O2 -arch=sm_90 -std=c++17 -o "$W/bin/$APP" "$HERE/$APP.cu" > "$W/build.log" 2>&1 || { tail -3 "$W/build.log"; exit 1; }
printf '#include <cuda_runtime.h>\n#include <cstdio>\nint main(){cudaFree(0);printf("{\\"checksum\\": 0}\\n");return 0;}\n' > "$W/bare.cu"
nvcc -O2 -arch=sm_90 -o "$W/bin/bare" "$W/bare.cu" >> "$W/build.log" 2>&1
for m in $TRACE; do trace_run "$W/traces/$APP-$m" "$W/trace-$APP-$m.log" "$W/bin/$APP" --mem "$m"; done
runs="bare:-:1"; for m in $MODES; do for p in $PASSES; do runs="$runs $APP:$m:$p"; done; done
for r in $(seq 1 "${ROUNDS:-5}"); do
  for x in $(in_round_order "$r" $runs); do IFS=: read -r a m p <<< "$x"
    args=(); [ "$a" != bare ] && args=(--mem "$m" --passes "$p")
    echo "$a $m $p $r $(timed_run "$W/errors.txt" "$W/bin/$a" "${args[@]}")" >> "$W/walls.txt"; done; done
python3 - "$W/walls.txt" <<'PY'
import sys, statistics, collections
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    a, m, p, r, rc, s, *_ = line.split(); t[(a, m, p)].append(float(s))
for (a, m, p), v in t.items(): print(f"{a:8s} {m:32s} passes {p}  median {statistics.median(v):.3f} s  spread {max(v)-min(v):.3f}")
PY
tar czf "$OUT/passes.tar.gz" --exclude passes/bin -C "$OUT" passes && rm -rf "$W"
