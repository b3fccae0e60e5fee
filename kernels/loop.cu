// The application loop's kernel (op `loop`): one pass over the touched pages of a buffer that
// reads every word the pattern selects, adds it into a 64-bit result (what the host reads back
// each iteration: a few bytes), and writes x = 3x + 1 on the selected words of the first
// `write_pages` pages of the list (0: a read-only input; m: updated in place).
// Integer arithmetic, so the host checks the result and the buffer exactly.
//
// pages[0..m) lists the touched pages (page_words words each, a power of two), spread evenly.
//   pattern 0, streaming:  every word of the touched pages, 16 bytes per thread, coalesced;
//   pattern 1, strided:    every stride-th word (stride a power of two <= page_words);
//   pattern 2, random:     every word, in a scattered order (a bijection: consecutive threads land
//                          in different pages and scattered words of them);
//   pattern 3, warp-pages: one warp walks one whole page (seed 004's per-warp pages).

__device__ __forceinline__ unsigned long long visit(unsigned int* w, bool write)
{
    const unsigned int v = *w;
    if (write) *w = v * 3u + 1u;
    return v;
}

__device__ __forceinline__ unsigned long long visit4(uint4* p, bool write)
{
    uint4 v = *p;
    const unsigned long long s = (unsigned long long)v.x + v.y + v.z + v.w;
    if (write) {
        v.x = v.x * 3u + 1u; v.y = v.y * 3u + 1u; v.z = v.z * 3u + 1u; v.w = v.w * 3u + 1u;
        *p = v;
    }
    return s;
}

extern "C" __global__ void loop_pass(unsigned int* __restrict__ x, const unsigned int* __restrict__ pages,
                                     unsigned long long m, unsigned int page_words, int pattern,
                                     unsigned int stride, unsigned long long mult, unsigned long long write_pages,
                                     unsigned long long* __restrict__ result)
{
    const unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long pw = page_words;
    unsigned long long acc = 0;
    if (pattern == 0) {
        const unsigned long long per_page = pw / 4, items = m * per_page;
        for (unsigned long long i = tid; i < items; i += threads) {
            const unsigned long long q = i / per_page;
            acc += visit4(reinterpret_cast<uint4*>(x + (unsigned long long)pages[q] * pw) + i % per_page, q < write_pages);
        }
    } else if (pattern == 1) {
        const unsigned long long per_page = pw / stride, items = m * per_page;
        for (unsigned long long i = tid; i < items; i += threads) {
            const unsigned long long q = i / per_page;
            acc += visit(x + (unsigned long long)pages[q] * pw + (i % per_page) * stride, q < write_pages);
        }
    } else if (pattern == 2) {
        const unsigned long long items = m * pw;
        for (unsigned long long i = tid; i < items; i += threads) {
            const unsigned long long q = i % m, w = i / m;
            const unsigned long long slot = (q * mult) % m;
            const unsigned long long word = (w * 2654435761ull + q) & (pw - 1);
            acc += visit(x + (unsigned long long)pages[slot] * pw + word, slot < write_pages);
        }
    } else {
        const unsigned int lane = threadIdx.x & 31u;
        const unsigned long long warps = threads >> 5, per_page = pw / 4;
        for (unsigned long long q = tid >> 5; q < m; q += warps) {
            uint4* p4 = reinterpret_cast<uint4*>(x + (unsigned long long)pages[q] * pw);
            for (unsigned long long k = lane; k < per_page; k += 32)
                acc += visit4(p4 + k, q < write_pages);
        }
    }
    // one atomic per warp: the sum wraps modulo 2^64, as the host's check does
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, off);
    if ((threadIdx.x & 31u) == 0 && acc)
        atomicAdd(result, acc);
}
