# Sourced by run.sh and passes.sh: how both trace a program and time its runs in rounds.

# trace_run STEM LOG CMD...: CMD traced with Nsight Systems (CUDA calls, NVTX, the nodes of CUDA graphs, both sides'
# unified-memory faults) into STEM.sqlite, nsys's output in LOG; the .nsys-rep is not kept
trace_run() {
  local stem=$1 log=$2; shift 2
  nsys profile -t cuda,nvtx --cuda-graph-trace=node --cuda-um-gpu-page-faults=true --cuda-um-cpu-page-faults=true \
    --export sqlite --force-overwrite true -o "$stem" "$@" > "$log" 2>&1
  rm -f "$stem.nsys-rep"
}

# in_round_order ROUND RUN...: the runs one a line, reversed in the even rounds (so that no run always follows the
# same one)
in_round_order() {
  local r=$1; shift
  if [ $((r % 2)) = 0 ]; then printf '%s\n' "$@" | tac; else printf '%s\n' "$@"; fi
}

# timed_run ERRORS CMD...: "EXIT SECONDS CHECKSUM" for one run of CMD, process start to exit by wall clock; its
# stderr appended to ERRORS, the checksum read from the JSON of its last line of output (None without one)
timed_run() {
  local errors=$1; shift
  local s e out rc sum
  s=$(date +%s.%N); out=$("$@" 2>>"$errors"); rc=$?; e=$(date +%s.%N)
  sum=$(echo "$out" | tail -1 | python3 -c "import json,sys; print(json.loads(sys.stdin.read() or '{}').get('checksum'))" 2>/dev/null)
  echo "$rc $(python3 -c "print(f'{$e-$s:.4f}')") $sum"
}
