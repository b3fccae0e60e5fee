/* The host's read of a buffer as a compiled program makes it: every 32-bit word summed in turn into a double
 * (umprof's loop op, host_reader = words; umprof/measure/host_read.py loads it). numpy's sum, the loop's other
 * reader, is vectorized; on managed pages faulting back from the GPU, this loop's read of 64 MiB took 1.4-4.4 ms
 * more beyond pinned memory's than numpy's did (an H200 and an H100, 2026-12-04 and -06). A C program's consume()
 * is this loop (benchmarks/apps/frame_loop.h). Built without -ffast-math, so the adds stay in order, one after
 * another, as the program's do; needs no CUDA header or library.
 */
#include <stddef.h>
#include <stdint.h>

double umprof_sum_words(const uint32_t *p, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += (double)p[i];
    return s;
}
