"""Every threshold the advice on a trace decides by: one named constant each, with why it is that figure."""

PREDICTION_ERROR = 0.10  # verification: median errors 5-15% per set on both GPUs; closer than this is a tie
NOISE = 0.05  # a saving under this share of the time the ways price (result.priced_s) is not worth a change
# the prediction's own error on a saving, a share of the time the ways price (result.priced_s: the time now less its
# first iteration's one-off setup): how far each advised change's predicted saving missed the one measured by wall
# clock, over the 256 judged program-machine pairs of results/advise/tie-policy.json.xz (H100 and H200, 2026-11-25 to
# -12-02); its 75th percentile (the median is 0.053; H100 0.103, H200 0.095), printed by
# benchmarks/apps/prediction_error.py. Those are C programs' misses as a share of their whole wall time as written;
# on the 106 of them whose program has a fixture trace, taken as a share of the time the ways price instead (the
# trace's priced share of its time now, 0.48-1.0), the 75th percentile moves from 0.089 to 0.093. A change is
# advised only where its saving exceeds it, and every saving is given with this band either side
SAVING_ERROR = 0.095
# A program that allocates and frees many buffers (NVIDIA's UnifiedMemoryStreams: 275 calls, 120 buffers of managed
# memory, 27.5 ms on an H100 where one buffer was priced 2.1 ms) makes as many calls under any other way: beyond
# this many calls, what they take beyond the model's one buffer is priced the same under every way.
MANY_ALLOCATION_CALLS = 16
# the share of its priced host accesses below which a loop's host time outside CUDA calls says the host cannot be
# making them: the host's own speed moved 1.5x between processes on the H100 and H200 machines measured, and
# the applications timed in every mode spent 0.8-2.4x their priced accesses outside CUDA calls
HOST_TIME_SHARE = 0.5
# the share of its input that a loop must copy in every iteration for its launches to be read as passes over what it
# copies (read.kernel_passes); less, and they step state kept on the GPU
STATE_SENT = 0.5
# what share of a host stall on managed pages faulting back that a trace shows the program spends without the trace:
# nsys tracing unified memory slows each fault. Measured on an H200 (580.159.04, 2026-12-01;
# benchmarks/host_touch.sh, results/host-touch/): the host touching a 256 MiB managed buffer the GPU held, a word
# every 64 KiB-2 MiB, took 12-35 µs a touch untraced and 16-70 µs traced, 0.32-0.73 of it (the median over six
# spacings, 0.50, is this figure; on 64 MiB at 4 KiB, 128 KiB and 2 MiB, 0.42-0.55). No H100 was measured.
TRACED_FAULT_SHARE = 0.50
# what share of the time a trace's kernels take faulting managed pages back (those the host touched since the last
# kernel) the program takes untraced. Measured by the same runs (benchmarks/host_touch.sh): the kernel that rewrites
# the buffer after the host's touches took 0.68-1.02 of its traced time untraced on 256 MiB over six spacings of
# 64 KiB-2 MiB (median 0.88) and 0.61-0.75 on 64 MiB at 4 KiB, 128 KiB and 2 MiB; the median of all nine, 0.75, is
# this figure (the 4 KiB spacing, a touch in every page, only the 64 MiB run measured). No H100 was measured.
TRACED_GPU_FAULT_SHARE = 0.75
# what nsys adds to each CUDA call it traces: a loop of 61,440 copies of 16 KiB took 15 µs a copy as traced,
# where the saving measured untraced says about 12 (H100, 2026-11-25; rules.pageable_copies)
TRACED_CALL_S = 3e-6
# what torch.profiler adds to the host for each operator or annotation it records (a trace's cpu_op and
# user_annotation events, nested ones each counted), its CUDA calls priced at TRACED_CALL_S: a host-bound training
# step of 395 recorded operators and 164 calls took 4.64 ms traced against about 3.2 ms untraced (H100, 2026-12-06),
# 2.4 µs an operator; a loop of 256 parameter copies a step, 385,000 operators and 154,000 calls in all, took 2.74 s
# traced against 1.72 s untraced (H200, the same day), at most 1.5 µs an operator. Their middle
TRACED_OP_S = 2e-6
# the most of a loop's traced time that is taken as the tracing's own: an estimate beyond it is not trusted
TRACED_MOST = 0.5
# how near an iteration's bytes out must be to its bytes in (a share of the larger) for a loop whose host does not
# touch what it moves to be read as carrying one dataset out and back again (rules.carried)
ROUND_TRIP = 0.10
# below this share of the buffer read back an iteration, a managed program told to copy is told to copy back that part
HOST_READS_PART = 0.5
SMALL_COPY = 256 * 1024  # copies this small, many to an iteration, pay their latency more than their bytes
# the share of a loop's copy time that its copies of SMALL_COPY or less may take for its pageable copies' traced time
# to stand for the model's price of them (rules.pageable_copies)
SMALL_SHARE = 0.05
# a flow of at least this many copies has later ones to tell its first copy's own first-use costs by
STEADY_COPIES = 3
MANY_COPIES = 16  # a flow copying this many small copies an iteration is told to batch them
FLOWS_ADVISED = 8  # the flows (largest first) that get a line of their own: more is a list nobody reads
# a saving this much above what copies and migrations take is said to come from elsewhere (the host's accesses, the
# loop's other steps): within it, the moving time the trace measured accounts for the saving
BEYOND_MOVING = 1.1
# the share of the saving beyond the moving time under which its part outside the host's accesses goes unsaid
OTHER_SHARE = 0.1
# past this share of the loop's traced time, the first iteration's setup (its time beyond a steady iteration's with the
# GPU no busier) outweighs the iterations every saving is made in, and is said
SETUP_SHARE = 0.5
# below this share of the run, copies and migrations are said to bound what any strategy could save
SMALL_MOVING_SHARE = 0.25
# past this share of a steady iteration the GPU waits on the host: the host's own work, not the copies or kernels,
# paces the loop (said where no change is advised)
HOST_BOUND_SHARE = 0.5
# the calibration's prediction of the loop as it runs now this far (a share) from the traced time is said in the
# verdict: savings are the prediction's differences, the rest of the run is the program's own
MODEL_MISS = 0.3
