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
