"""The committed H200 result files the unit tests read (no GPU needed)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
WORKLOADS = ROOT / "scenarios" / "workloads"
CAL = RESULTS / "nvidia-h200-loop-calibration.parquet"  # the loop calibration (recommend predicts from it)
LIFECYCLE_CAL = RESULTS / "nvidia-h200-calibration.parquet"  # the one-shot lifecycle calibration of issue 6
VERIFY = RESULTS / "nvidia-h200-loop-verify.parquet"  # the verification set measured under every strategy
# the same-day calibrations and two-round measurements of the verification and held-out sets (README's table)
CAL2 = {gpu: RESULTS / f"nvidia-{gpu}-loop-calibration-2.parquet" for gpu in ("h200", "h100")}
VERIFY2_H200 = RESULTS / "nvidia-h200-loop-verify-2.parquet"
HOLDOUT = {gpu: RESULTS / f"nvidia-{gpu}-loop-holdout.parquet" for gpu in ("h200", "h100")}
CAL3 = {gpu: RESULTS / f"nvidia-{gpu}-loop-calibration-3.parquet" for gpu in ("h200", "h100")}  # seven sizes
HOLDOUT2 = {gpu: RESULTS / f"nvidia-{gpu}-loop-holdout-2.parquet" for gpu in ("h200", "h100")}
CAL4 = {gpu: RESULTS / f"nvidia-{gpu}-loop-calibration-4.parquet" for gpu in ("h200", "h100")}  # 2026-11-23
HOLDOUT3 = {gpu: RESULTS / f"nvidia-{gpu}-loop-holdout-3.parquet" for gpu in ("h200", "h100")}  # five rounds
CAL5 = {gpu: RESULTS / f"nvidia-{gpu}-loop-calibration-5.parquet" for gpu in ("h200", "h100")}  # with long loops
HOLDOUT4 = {gpu: RESULTS / f"nvidia-{gpu}-loop-holdout-4.parquet" for gpu in ("h200", "h100")}
HOLDOUT2_ROUNDS5_H200 = RESULTS / "nvidia-h200-loop-holdout-2-rounds5.parquet"  # holdout-2 again, five rounds
# 2026-11-23, third session: calibration-5 + calibration-loop-setup (6), + calibration-loop-walk (7)
CAL6 = {gpu: RESULTS / f"nvidia-{gpu}-loop-calibration-6.parquet" for gpu in ("h200", "h100")}
CAL7 = {gpu: RESULTS / f"nvidia-{gpu}-loop-calibration-7.parquet" for gpu in ("h200", "h100")}
HOLDOUT5 = {gpu: RESULTS / f"nvidia-{gpu}-loop-holdout-5.parquet" for gpu in ("h200", "h100")}
HOLDOUT6 = {gpu: RESULTS / f"nvidia-{gpu}-loop-holdout-6.parquet" for gpu in ("h200", "h100")}  # H100: three rounds
HOLDOUT7 = {gpu: RESULTS / f"nvidia-{gpu}-loop-holdout-7.parquet" for gpu in ("h200", "h100")}  # H100: three rounds
# fifth session of 2026-11-23: holdout-8 judged by calibration-7 (two days old), the model frozen
HOLDOUT8 = {gpu: RESULTS / f"nvidia-{gpu}-loop-holdout-8.parquet" for gpu in ("h200", "h100")}
# holdout-9, measured twice on one H200 lease (two runs of five rounds; the first cut in its last round)
HOLDOUT9_H200 = [RESULTS / "nvidia-h200-loop-holdout-9.parquet", RESULTS / "nvidia-h200-loop-holdout-9-b.parquet"]
# seventh session: calibration-8, measured on one H200 lease just before holdout-10 on the same lease
CAL8_H200 = RESULTS / "nvidia-h200-loop-calibration-8.parquet"
HOLDOUT10_H200 = RESULTS / "nvidia-h200-loop-holdout-10.parquet"
HOLDOUT10_H100 = RESULTS / "nvidia-h100-loop-holdout-10.parquet"
HOLDOUT11_H200 = RESULTS / "nvidia-h200-loop-holdout-11.parquet"
HOLDOUT12_H200 = RESULTS / "nvidia-h200-loop-holdout-12.parquet"
# 2026-11-23, tenth session: holdout-13 on both GPUs, written after the model change it is judged by (b56cc9f)
HOLDOUT13 = {gpu: RESULTS / f"nvidia-{gpu}-loop-holdout-13.parquet" for gpu in ("h200", "h100")}
# 2026-11-23, eleventh session: holdout-14 on both GPUs, written after write-combined memory joined the cached pool
HOLDOUT14 = {gpu: RESULTS / f"nvidia-{gpu}-loop-holdout-14.parquet" for gpu in ("h200", "h100")}
# 2026-11-23, twelfth session: holdout-15 on both GPUs, written after the mean steady iteration (ae89d0e)
HOLDOUT15 = {gpu: RESULTS / f"nvidia-{gpu}-loop-holdout-15.parquet" for gpu in ("h200", "h100")}
# holdout-16 (thirteenth session): two runs of five rounds on each GPU, one lease each, judged pooled (ten rounds)
HOLDOUT16 = {gpu: [RESULTS / f"nvidia-{gpu}-loop-holdout-16{tag}.parquet" for tag in ("", "-b")] for gpu in ("h200", "h100")}
# holdout-17 (thirteenth session), after the pipelined plan's chunks walking at once: the H200, a run of five rounds
# and one of four (cut at 355 s, the session's device time), one lease, judged alone and pooled
HOLDOUT17_H200 = [RESULTS / f"nvidia-h200-loop-holdout-17{tag}.parquet" for tag in ("", "-b")]
CROSS = RESULTS / "nvidia-h200-crossovers.parquet"
MiB = 1024**2
