// Kernels for the unified-memory ops (seed 004's last experiment and its neighbours).
// They work on any pointer a kernel can dereference: managed, mapped host or device memory.

// Seed 004's stream_thread: one thread per element, a grid that covers the whole buffer.
// Neighbouring warps touch the same page, so on-demand migration sees many duplicate faults.
extern "C" __global__ void stream_thread(const float* __restrict__ in, float* __restrict__ out, unsigned long long n)
{
    const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i];
}

// Seed 004's stream_warp: one warp per page of `page_elems` elements, the lanes sweeping it
// 32 consecutive elements at a time, so each page faults from a single warp.
extern "C" __global__ void stream_warp(const float* __restrict__ in, float* __restrict__ out, unsigned long long n,
                                       unsigned int page_elems)
{
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long warp = tid >> 5;
    const unsigned int lane = threadIdx.x & 31u;
    const unsigned long long base = warp * page_elems;
    if (base >= n)
        return;
    for (unsigned int k = lane; k < page_elems; k += 32u) {
        const unsigned long long i = base + k;
        if (i < n)
            out[i] = in[i];
    }
}

// Whether page p of a buffer is touched when a fraction f of its pages is: pages spread evenly,
// p touched when floor((p + 1) f) > floor(p f). The host computes the same set (umprof.measure.ops.um).
__device__ __forceinline__ bool page_touched(unsigned long long p, double f)
{
    return floor((double)(p + 1) * f) > floor((double)p * f);
}

// Sum of the 32-bit words of the touched pages (one warp per page, 16-byte loads), added
// into *result. `page_words` is a multiple of 4 and the buffer 16-byte aligned; n_words need
// not be a multiple of anything.
extern "C" __global__ void sum_pages(const unsigned int* __restrict__ data, unsigned long long n_words,
                                     unsigned int page_words, double fraction, unsigned long long* result)
{
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int lane = threadIdx.x & 31u;
    const unsigned long long pages = (n_words + page_words - 1) / page_words;
    const unsigned long long warps = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
    unsigned long long acc = 0;
    for (unsigned long long p = tid >> 5; p < pages; p += warps) {
        if (!page_touched(p, fraction))
            continue;
        const unsigned long long base = p * page_words;
        const unsigned long long end = min(base + page_words, n_words);
        const unsigned long long full4 = base + (end - base) / 4 * 4;
        const uint4* d4 = reinterpret_cast<const uint4*>(data + base);
        for (unsigned long long k = lane; base + 4 * k < full4; k += 32) {
            const uint4 v = d4[k];
            acc += (unsigned long long)v.x + v.y + v.z + v.w;
        }
        for (unsigned long long i = full4 + lane; i < end; i += 32)
            acc += data[i];
    }
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0 && acc)
        atomicAdd(result, acc);
}

// data[i] = i * 2654435761 + seed (mod 2^32): a write-only pass the host can check exactly.
extern "C" __global__ void fill_words(unsigned int* __restrict__ data, unsigned long long n, unsigned int seed)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long n4 = n / 4;
    uint4* d4 = reinterpret_cast<uint4*>(data);
    for (unsigned long long i = tid; i < n4; i += stride) {
        const unsigned int b = (unsigned int)(4 * i) * 2654435761u + seed;
        d4[i] = make_uint4(b, b + 2654435761u, b + 2u * 2654435761u, b + 3u * 2654435761u);
    }
    for (unsigned long long i = n4 * 4 + tid; i < n; i += stride)
        data[i] = (unsigned int)i * 2654435761u + seed;
}
