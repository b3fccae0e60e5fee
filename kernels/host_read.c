/* The host's read of a buffer as a compiled program makes it: every 32-bit word summed in turn into a double
 * (umprof's loop op, host_reader = words; umprof/measure/host_read.py loads it). numpy's sum, the loop's other
 * reader, is vectorized and reads ahead of its faults; a loop like this one waits on each page in turn. A C
 * program's consume() is this loop (benchmarks/apps/frame_loop.h). Built without -ffast-math, so the adds stay
 * in order, one after another, as the program's do; needs no CUDA header or library.
 */
#include <stddef.h>
#include <stdint.h>

double umprof_sum_words(const uint32_t *p, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += (double)p[i];
    return s;
}
