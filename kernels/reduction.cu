// Reduction (seed 002): the sum of n doubles, four ways.
//
// chunked: thread t sums its own m consecutive elements (seed 002's "don't copy this"):
//   neighbouring threads read 8*m bytes apart, so a warp's request spreads over many lines.
// grid_stride: thread t sums elements t, t + T, t + 2T ..: neighbours read neighbours.
//   Both write one partial per thread; the host adds them up.
// block_tree: grid-stride, then a tree in shared memory per block; one partial per block.
// block_tree + finish_tree: the whole sum on the GPU in two kernels, the second a single block
//   of as many threads as the first had blocks (seed 002's tip).
// block_tree and finish_tree need a power-of-two block of at most 1024 threads.

extern "C" __global__ void chunked(double *res, const double *x, long long n, int m) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long begin = t * m;
    const long long end = min(n, begin + m);
    double acc = 0.0;
    for (long long i = begin; i < end; ++i) acc += x[i];
    if (begin < n) res[t] = acc;
}

extern "C" __global__ void grid_stride(double *res, const double *x, long long n) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long step = (long long)gridDim.x * blockDim.x;
    double acc = 0.0;
    for (long long i = t; i < n; i += step) acc += x[i];
    res[t] = acc;
}

__device__ __forceinline__ void tree(double acc, double *out) {
    extern __shared__ double part[];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = part[0];
}

extern "C" __global__ void block_tree(double *res, const double *x, long long n) {
    const long long step = (long long)gridDim.x * blockDim.x;
    double acc = 0.0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) acc += x[i];
    tree(acc, &res[blockIdx.x]);
}

extern "C" __global__ void finish_tree(double *res, const double *partials, int count) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
    tree(acc, res);
}
