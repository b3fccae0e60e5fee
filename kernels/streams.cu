// Kernels of the streams scenarios (seed 003): work on one chunk of a pipelined buffer, and a
// pointer chase that measures the latency of a load from host (or device) memory.

// x = x * 3 + 1, `iters` times, on every word of a chunk (in place): the work per byte is
// set by `iters`, from one memory pass (copy-bound) to many times the chunk's copy time
// (compute-bound). The result is A·x + B in closed form, so the host checks it exactly.
extern "C" __global__ void chunk_work(unsigned int* __restrict__ x, unsigned long long n, unsigned int iters)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long n4 = n / 4;
    uint4* x4 = reinterpret_cast<uint4*>(x);
    for (unsigned long long i = tid; i < n4; i += stride) {
        uint4 v = x4[i];
        for (unsigned int k = 0; k < iters; ++k) {
            v.x = v.x * 3u + 1u;
            v.y = v.y * 3u + 1u;
            v.z = v.z * 3u + 1u;
            v.w = v.w * 3u + 1u;
        }
        x4[i] = v;
    }
    for (unsigned long long i = n4 * 4 + tid; i < n; i += stride) {
        unsigned int v = x[i];
        for (unsigned int k = 0; k < iters; ++k)
            v = v * 3u + 1u;
        x[i] = v;
    }
}

// One thread follows `hops` links of a cyclic chain from index `start` (next[i] is the index
// of the next word to read): every load waits for the one before, so the time per hop is the
// load's latency (nvbandwidth's host_device_latency_sm). The last index is written out so the
// chase is not optimised away, and the host checks it against the chain.
extern "C" __global__ void pointer_chase(const unsigned int* __restrict__ next, unsigned long long hops,
                                         unsigned int start, unsigned int* __restrict__ out)
{
    unsigned int i = start;
    for (unsigned long long h = 0; h < hops; ++h)
        i = *((volatile const unsigned int*)next + i);
    *out = i;
}

// A small copy done by a kernel: dst[i] = src[i], one thread per word (src may be mapped
// host memory: the kernel's reads cross the link, as a zero-copy consumer's do).
extern "C" __global__ void copy_words(const unsigned int* __restrict__ src, unsigned int* __restrict__ dst,
                                      unsigned long long n)
{
    const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = src[i];
}
