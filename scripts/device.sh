#!/usr/bin/env bash
# umprof's checks on a GPU machine, step by step (each step's logs and results under $OUT):
#   source .device/bootstrap.sh && bash scripts/device.sh STEP [STEP ...]
# Steps:
#   tests      the GPU test suite (logs the margins of its timing checks)
#   default    the default suite, timed from process start
#   um         the unified-memory scenarios (um-advice, um-sparse, um-pages)
#   staging    the staging ring swept, then in its scenario and in the loop, and the table against its
#              ceiling (benchmarks/staging_table.py); then the ring by what ran before it and one H2D
#              transfer's timeline (benchmarks/staging_context.py)
#   calibrate  the full calibration, then a quick one, each timed from process start (full, quick: one)
#   stores     the setup loop with the first write stored word by word and copied in (calibration-loop-setup-stores)
#   malloc     the setup loop of malloc'd pages (calibration-loop-setup-malloc) twice, numpy's between, and
#              benchmarks/first_touch.py
#   apps       benchmarks/apps: build, trace each application as written, time every mode (needs the
#              cuda-samples in .device/cuda-samples for NVIDIA's three; ROUNDS=N, default 3; ONLY=app,app for those)
#   set        a verification set (SET=holdout-17: benchmarks/workloads/$SET.toml) under every strategy, in
#              five rounds (ROUNDS=N for fewer: holdout-18's five took over 10 minutes on an H100, two fit a
#              600 s call; TAG=b names a second run of the same set apart); judge it with
#              `umprof recommend --workload benchmarks/workloads/$SET.toml --measured FILE [--steady]`
# A step's files are named after the GPU (nvidia-h100-80gb-hbm3-..., nvidia-h200-...). LIMIT=SECONDS stops each
# timed step after that long (what it wrote so far is kept and packed), so that one call can hold several steps.
# The applications' traces are written under $OUT ($OUT/GPU-traces.tar.gz); the repository keeps none.
set -uo pipefail
OUT="${OUT:-device-out}"
mkdir -p "$OUT"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-' | tr -cd 'A-Za-z0-9_-' | tr 'A-Z' 'a-z')
timed() {  # timed LABEL LOG COMMAND...: run, log, and say how long it took from process start to exit
  local label=$1 log=$2; shift 2
  local start; start=$(date +%s.%N)
  ${LIMIT:+timeout --signal=INT --kill-after=20 "$LIMIT"} "$@" >> "$log" 2>&1
  local rc=$?
  echo "$label: exit $rc, $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s (wall clock, $(date -u +%FT%TZ))" | tee -a "$log"
}
for step in "$@"; do
  case "$step" in
    tests)
      export UMPROF_MARGINS="$OUT/$gpu-margins.jsonl"
      # one process (-o addopts: not the checkout's spread over every core), GPU tests one after another
      timed "GPU suite" "$OUT/$gpu-gpu-tests.log" python3 -m pytest -o addopts=-ra -m gpu -q -p no:cacheprovider tests/gpu
      tail -3 "$OUT/$gpu-gpu-tests.log" ;;
    default)
      timed "default suite" "$OUT/$gpu-default-run.txt" python3 -m umprof run -o "$OUT/$gpu-default.parquet" --force ;;
    um)
      timed "unified memory" "$OUT/$gpu-um-run.txt" python3 -m umprof run um-advice um-sparse um-pages \
        -o "$OUT/$gpu-um.parquet" --force ;;
    staging)
      timed "staging" "$OUT/$gpu-staging.log" python3 -m umprof run staging-sweep staging staging-loop \
        -o "$OUT/$gpu-staging.parquet" --force
      python3 benchmarks/staging_table.py "$OUT/$gpu-staging.parquet" --json "$OUT/$gpu-staging.json" | tee -a "$OUT/$gpu-staging.log"
      timed "staging context" "$OUT/$gpu-staging.log" python3 benchmarks/staging_context.py --reps 15 \
        --json "$OUT/$gpu-staging-context.json"
      python3 benchmarks/staging_context.py --timeline --reps 9 --json "$OUT/$gpu-staging-timeline.json" \
        >> "$OUT/$gpu-staging.log" 2>&1 ;;
    calibrate|full)
      timed "full calibration" "$OUT/$gpu-calibrate.log" python3 -m umprof calibrate -o "$OUT/$gpu-calibration-full.parquet" --force ;;&
    calibrate|quick)
      timed "quick calibration" "$OUT/$gpu-calibrate.log" python3 -m umprof calibrate --quick -o "$OUT/$gpu-calibration-quick.parquet" --force ;;
    apps)
      samples=(); [ -d .device/cuda-samples ] && samples=(--samples .device/cuda-samples)
      timed "applications" "$OUT/$gpu-apps.log" python3 benchmarks/apps/run_apps.py "$OUT/apps" "${samples[@]}" --rounds "${ROUNDS:-3}" \
        ${ONLY:+--only "$ONLY"}
      mv "$OUT/apps/apps.json" "$OUT/$gpu-apps.json" 2>/dev/null
      mv "$OUT/apps/traces.tar.gz" "$OUT/$gpu-traces.tar.gz" 2>/dev/null \
        || tar czf "$OUT/$gpu-traces.tar.gz" -C "$OUT/apps" traces 2>/dev/null  # a run stopped by LIMIT
      rm -rf "$OUT/apps"
      tail -45 "$OUT/$gpu-apps.log" ;;
    set)
      timed "${SET:?SET=holdout-N} ${TAG:-}" "$OUT/$gpu-sets.log" python3 scripts/measure_workloads.py \
        "benchmarks/workloads/$SET.toml" "$OUT/$gpu-loop-$SET${TAG:+-$TAG}.parquet" ;;
    stores)
      timed "setup loop, first write by stores" "$OUT/$gpu-setup-stores.log" python3 -m umprof run \
        calibration-loop-setup-stores -o "$OUT/$gpu-setup-stores.parquet" --force ;;
    malloc)
      # the setup loop of malloc'd pages twice, numpy's of the same strategies between (one machine's ratio), then
      # benchmarks/first_touch.py at 1 GiB
      for run in a numpy b; do
        if [ "$run" = numpy ]; then
          timed "setup loop, numpy's pages" "$OUT/$gpu-setup-malloc.log" python3 -m umprof run calibration-loop-setup \
            -a strategy=pageable,mapped,pageable-staged,pageable-registered -o "$OUT/$gpu-setup-numpy.parquet" --force
        else
          timed "setup loop, malloc's pages ($run)" "$OUT/$gpu-setup-malloc.log" python3 -m umprof run \
            calibration-loop-setup-malloc -o "$OUT/$gpu-setup-malloc-$run.parquet" --force
        fi
      done
      timed "first touch" "$OUT/$gpu-setup-malloc.log" python3 benchmarks/first_touch.py --json "$OUT/$gpu-first-touch.json"
      tail -4 "$OUT/$gpu-setup-malloc.log" ;;
    full) ;;  # its calibration ran above
    *) echo "unknown step: $step (tests, default, um, staging, calibrate, full, quick, malloc, apps, set)"; exit 2 ;;
  esac
done
