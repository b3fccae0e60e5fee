// Kernels for the lifecycle op: one pass over a buffer that reads and writes every element,
// wherever the buffer lives (device memory, mapped host memory, managed memory).
// Integer arithmetic so the host can check every element exactly.

// x[i] = x[i] * 3 + 1 (mod 2^32), 16 bytes per thread per step, grid-stride.
// The buffer must be 16-byte aligned (every umprof allocation is page aligned).
extern "C" __global__ void scale_inplace(unsigned int* __restrict__ x, unsigned long long n)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long n4 = n / 4;
    uint4* x4 = reinterpret_cast<uint4*>(x);
    for (unsigned long long i = tid; i < n4; i += stride) {
        uint4 v = x4[i];
        v.x = v.x * 3u + 1u;
        v.y = v.y * 3u + 1u;
        v.z = v.z * 3u + 1u;
        v.w = v.w * 3u + 1u;
        x4[i] = v;
    }
    for (unsigned long long i = n4 * 4 + tid; i < n; i += stride)
        x[i] = x[i] * 3u + 1u;
}

// One pass of a workload over the touched pages of a buffer (the workload model's lifecycle):
// x = x * 3 + 1 on every word the pattern selects, each selected word exactly once per pass.
// pages[0..m) lists the touched pages (page_words words each, a power of two); the host
// chooses them spread evenly, as um_sparse does.
//   pattern 0, streaming:  every word of the touched pages, 16 bytes per thread, coalesced;
//   pattern 1, strided:    every stride-th word (stride a power of two <= page_words);
//   pattern 2, random:     every word, visited in a scattered order: consecutive threads land in
//                          different pages (slot q -> q * mult mod m, mult coprime to m) and in
//                          scattered words of them (w -> w * odd + q mod page_words), a bijection;
//   pattern 3, warp-pages: one warp walks one whole page (seed 004's per-warp pages).
extern "C" __global__ void touch_pass(unsigned int* __restrict__ x, const unsigned int* __restrict__ pages,
                                      unsigned long long m, unsigned int page_words, int pattern,
                                      unsigned int stride, unsigned long long mult)
{
    const unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long pw = page_words;
    if (pattern == 0) {
        const unsigned long long per_page = pw / 4, items = m * per_page;
        for (unsigned long long i = tid; i < items; i += threads) {
            uint4* p4 = reinterpret_cast<uint4*>(x + (unsigned long long)pages[i / per_page] * pw);
            uint4 v = p4[i % per_page];
            v.x = v.x * 3u + 1u; v.y = v.y * 3u + 1u; v.z = v.z * 3u + 1u; v.w = v.w * 3u + 1u;
            p4[i % per_page] = v;
        }
    } else if (pattern == 1) {
        const unsigned long long per_page = pw / stride, items = m * per_page;
        for (unsigned long long i = tid; i < items; i += threads) {
            unsigned int* w = x + (unsigned long long)pages[i / per_page] * pw + (i % per_page) * stride;
            *w = *w * 3u + 1u;
        }
    } else if (pattern == 2) {
        const unsigned long long items = m * pw;
        for (unsigned long long i = tid; i < items; i += threads) {
            const unsigned long long q = i % m, w = i / m;
            const unsigned long long slot = (q * mult) % m;
            const unsigned long long word = (w * 2654435761ull + q) & (pw - 1);
            unsigned int* e = x + (unsigned long long)pages[slot] * pw + word;
            *e = *e * 3u + 1u;
        }
    } else {
        const unsigned int lane = threadIdx.x & 31u;
        const unsigned long long warps = threads >> 5, per_page = pw / 4;
        for (unsigned long long q = tid >> 5; q < m; q += warps) {
            uint4* p4 = reinterpret_cast<uint4*>(x + (unsigned long long)pages[q] * pw);
            for (unsigned long long k = lane; k < per_page; k += 32) {
                uint4 v = p4[k];
                v.x = v.x * 3u + 1u; v.y = v.y * 3u + 1u; v.z = v.z * 3u + 1u; v.w = v.w * 3u + 1u;
                p4[k] = v;
            }
        }
    }
}
