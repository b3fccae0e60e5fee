// Kernels of the multi-GPU scenarios: a copy done by SMs, 16 bytes per load and store, over
// memory that may live on another GPU (reached through peer access over NVLink or PCIe), as
// nvbandwidth's SM copies do. `n16` is the size in 16-byte words; every size umprof asks for
// is a multiple of 16 bytes.
extern "C" __global__ void copy_vec16(const uint4* __restrict__ src, uint4* __restrict__ dst, unsigned long long n16)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride)
        dst[i] = src[i];
}
