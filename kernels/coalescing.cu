// Coalescing (seeds 000, 002, 004): read, write and copy of element i*stride + offset,
// i = 0 .. n-1, for float, float2 and float4 elements.
//
// Grid-stride with UNROLL independent accesses per trip: every load of a trip is issued
// before any is used, so each thread keeps UNROLL requests in flight (what a copy needs to
// approach the device-to-device copy on HBM); the remainder runs one access per trip.
// `read` sums what it reads in double (the values are small integers, so the sum is exact
// and checked against numpy) and writes one partial per block to partials[blockIdx.x] (no
// atomics: one address hit by every block would serialise a one-pass grid); `write` stores
// value(e) = ((e * 2654435761) >> 29) per float. Blocks are a multiple of 32 threads.

typedef unsigned long long u64;

enum { READ = 0, WRITE = 1, COPY = 2 };

__device__ __forceinline__ unsigned small_int(u64 e) { return ((unsigned)e * 2654435761u) >> 29; }

__device__ __forceinline__ float hsum(float v) { return v; }
__device__ __forceinline__ float hsum(float2 v) { return v.x + v.y; }
__device__ __forceinline__ float hsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }

template <typename T> __device__ __forceinline__ T value_at(u64 e);
template <> __device__ __forceinline__ float value_at<float>(u64 e) { return (float)small_int(e); }
template <> __device__ __forceinline__ float2 value_at<float2>(u64 e) {
    return make_float2((float)small_int(2 * e), (float)small_int(2 * e + 1));
}
template <> __device__ __forceinline__ float4 value_at<float4>(u64 e) {
    return make_float4((float)small_int(4 * e), (float)small_int(4 * e + 1), (float)small_int(4 * e + 2),
                       (float)small_int(4 * e + 3));
}

__device__ __forceinline__ void block_partial(double acc, double *partials) {
    __shared__ double warp_sums[32];
    for (int d = 16; d > 0; d >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, d);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) warp_sums[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        double v = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.0;
        for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
        if (lane == 0) partials[blockIdx.x] = v;
    }
}

template <typename T, int OP>
__device__ __forceinline__ void visit(const T *__restrict__ in, T *__restrict__ out, long long e, const T &v,
                                      double &acc) {
    if (OP == READ) acc += hsum(v);
    if (OP == COPY) out[e] = v;
    if (OP == WRITE) out[e] = value_at<T>(e);
}


template <typename T, int OP, int UNROLL>
__device__ __forceinline__ void sweep(const T *__restrict__ in, T *__restrict__ out, long long n, int stride,
                                      int offset, double *partials) {
    const long long step = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    double acc = 0.0;
    for (; i + (UNROLL - 1) * step < n; i += UNROLL * step) {  // full trips: no bounds checks
        T v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            if (OP != WRITE) v[u] = in[(i + u * step) * stride + offset];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) visit<T, OP>(in, out, (i + u * step) * stride + offset, v[u], acc);
    }
    for (; i < n; i += step) {
        T v;
        if (OP != WRITE) v = in[i * stride + offset];
        visit<T, OP>(in, out, i * stride + offset, v, acc);
    }
    if (OP == READ) block_partial(acc, partials);
}

#define SWEEP(NAME, T, OP, U)                                                                                  \
    extern "C" __global__ void NAME(const T *__restrict__ in, T *__restrict__ out, long long n, int stride,     \
                                    int offset, double *partials) {                                            \
        sweep<T, OP, U>(in, out, n, stride, offset, partials);                                                      \
    }

#define FAMILY(T, SUFFIX, U)                       \
    SWEEP(read_##SUFFIX##_u##U, T, READ, U)        \
    SWEEP(write_##SUFFIX##_u##U, T, WRITE, U)      \
    SWEEP(copy_##SUFFIX##_u##U, T, COPY, U)

FAMILY(float, f32, 1)
FAMILY(float, f32, 4)
FAMILY(float2, f32x2, 1)
FAMILY(float2, f32x2, 4)
FAMILY(float4, f32x4, 1)
FAMILY(float4, f32x4, 2)
FAMILY(float4, f32x4, 4)
FAMILY(float4, f32x4, 8)
