#!/usr/bin/env bash
# The verification programs: applications written to check advice on programs the model was not built from (each fixed before its
# first measurement). On a GPU machine, from the checkout's root, after `source .device/bootstrap.sh`:
#   ROUNDS=5 bash benchmarks/apps/verification/run.sh
# Builds each (a .py program runs under python3), traces its own mode (the first listed) with Nsight Systems (rounds.sh),
# advises from the trace (umprof advise, text and --json), then times every mode by wall clock (process start to exit) in rounds,
# the even rounds in reverse order. Writes $OUT/verification.tar.gz: traces/, advise-*.txt|json, walls.txt
# ("app mode round exit seconds checksum"). two_gpus drives every GPU of the machine and runs only where ONLY names it
# (ONLY=two_gpus, on a machine of several GPUs).
set -u
OUT="${OUT:-verification-out}"; HERE=$(cd "$(dirname "$0")" && pwd); W="$OUT/verification"; mkdir -p "$W/bin" "$W/traces"
source "$HERE/rounds.sh"
declare -A MODES=(
  [jacobi]="pageable pinned registered managed managed-prefetch"
  [particles]="managed managed-prefetch managed-advise-accessed-by-gpu managed-advise-prefer-gpu pinned registered pinned-sampled registered-sampled"
  [matvec]="pageable pinned registered managed managed-prefetch mapped"
  [chunked_async]="pageable pinned write-combined registered mapped zero-copy managed managed-prefetch staged"
  [embedding]="pageable pinned registered managed managed-prefetch managed-advise-accessed-by-gpu mapped zero-copy"
  [twophase]="pageable pinned registered write-combined managed managed-prefetch mapped zero-copy"
  [blur]="pageable pinned registered write-combined mapped zero-copy managed managed-prefetch"
  [headers]="pageable pinned registered write-combined mapped zero-copy managed managed-prefetch managed-advise-accessed-by-gpu"
  [workers]="pageable pinned registered write-combined mapped zero-copy managed managed-prefetch"
  [two_gpus]="pageable pinned registered"
  [thrust_stats]="pageable pinned registered write-combined mapped zero-copy managed managed-prefetch"
  [pin_per_call]="register-each pageable registered pinned write-combined mapped zero-copy managed"
  [bounce_per_call]="bounce-each pinned pinned-direct pageable registered write-combined mapped zero-copy managed"
  [staged_upload]="bounce pageable registered pinned write-combined mapped zero-copy managed managed-prefetch"
  [snapshot]="pageable pinned registered write-combined mapped zero-copy managed managed-prefetch pinned-pipelined managed-advise-accessed-by-gpu"
  [refine]="pageable pinned registered write-combined mapped zero-copy managed managed-prefetch managed-advise-accessed-by-gpu"
  [monitor]="managed managed-prefetch managed-advise-prefer-gpu pinned registered pinned-probe registered-probe"
  [recopy]="pageable pinned registered managed managed-prefetch mapped once"
  [sources]="managed managed-prefetch managed-advise-accessed-by-gpu managed-advise-prefer-gpu pinned registered pinned-sampled registered-sampled"
  [prefetched]="managed-prefetch managed pinned registered pageable write-combined mapped zero-copy managed-advise-accessed-by-gpu managed-advise-prefer-gpu"
  [batches]="pageable pinned registered write-combined zero-copy managed mapped managed-prefetch staged"
  [cadence]="pageable pinned registered write-combined mapped zero-copy managed managed-prefetch managed-advise-accessed-by-gpu pinned-pipelined"
  [arrays]="pageable pinned registered write-combined zero-copy mapped managed managed-prefetch"
  [render]="pageable pinned registered mapped zero-copy managed managed-prefetch managed-advise-accessed-by-gpu pinned-pipelined"
  [histogram]="pageable pinned registered write-combined mapped zero-copy managed managed-prefetch managed-advise-accessed-by-gpu pinned-pipelined"
  [requests]="pageable pinned registered write-combined mapped zero-copy managed managed-prefetch managed-advise-accessed-by-gpu pinned-pipelined"
  [tiles]="pageable pinned registered mapped zero-copy managed managed-prefetch managed-advise-accessed-by-gpu managed-advise-prefer-gpu pinned-pipelined staged once"
)
apps="${ONLY:-jacobi particles chunked_async matvec embedding twophase blur headers workers thrust_stats pin_per_call bounce_per_call staged_upload snapshot refine monitor recopy sources prefetched batches cadence arrays render histogram requests tiles}"
for a in $apps; do
  if [ -f "$HERE/$a.py" ]; then  # a Python program: run by the interpreter, its process the one traced and timed
    printf '#!/bin/sh\nexec python3 "%s" "$@"\n' "$HERE/$a.py" > "$W/bin/$a"; chmod +x "$W/bin/$a"
  else
    nvcc -O2 -arch=sm_90 -std=c++17 -o "$W/bin/$a" "$HERE/$a.cu" > "$W/build-$a.log" 2>&1 || { echo "build $a failed"; tail -3 "$W/build-$a.log"; }
  fi
  own=${MODES[$a]%% *}
  trace_run "$W/traces/$a" "$W/trace-$a.log" "$W/bin/$a" --mem "$own"
  python3 -m umprof advise "$W/traces/$a.sqlite" > "$W/advise-$a.txt" 2>&1; echo "advise $a: rc $?"
  python3 -m umprof advise "$W/traces/$a.sqlite" --json > "$W/advise-$a.json" 2>/dev/null
  head -30 "$W/advise-$a.txt"
done
runs=""; for a in $apps; do for m in ${MODES[$a]}; do runs="$runs $a:$m"; done; done
for r in $(seq 1 "${ROUNDS:-5}"); do
  for am in $(in_round_order "$r" $runs); do a=${am%%:*}; m=${am#*:}
    echo "$a $m $r $(timed_run "$W/errors.txt" "$W/bin/$a" --mem "$m")" >> "$W/walls.txt"; done; done
python3 - "$W/walls.txt" <<'PY'
import sys, statistics, collections
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    a, m, r, rc, s, *_ = line.split(); t[(a, m)].append(float(s))
for (a, m), v in t.items(): print(f"{a:14s} {m:32s} median {statistics.median(v):.3f} s  runs {len(v)}  spread {max(v)-min(v):.3f}")
PY
tar czf "$OUT/verification.tar.gz" -C "$OUT" verification && rm -rf "$W"
