// Layout and load paths (seed 004).
//
// aos_* / soa: seed 004's "add 10 to x and 20 to y" on an array of {float x, y} structures
// (unaligned: two 4-byte accesses per lane; __align__(8): one 8-byte access) and on a
// structure of two float arrays. copy_plain / copy_restrict / copy_ldg: seed 004's int copy
// with plain pointers, with const __restrict__ (the compiler may use the read-only path)
// and through __ldg (the read-only path, asked for). The L1 policy of the plain loads is a
// compile option (-Xptxas -dlcm=ca|cg), the `cache` axis of the ops that launch these.

struct Pair { float x, y; };
struct __align__(8) AlignedPair { float x, y; };

// the same source for both structures: only their alignment differs, and with it the loads
template <typename P>
__device__ __forceinline__ void increment(const P *in, P *out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        P t = in[i];
        t.x += 10.f;
        t.y += 20.f;
        out[i] = t;
    }
}

extern "C" __global__ void aos(const Pair *in, Pair *out, int n) { increment(in, out, n); }
extern "C" __global__ void aos_aligned(const AlignedPair *in, AlignedPair *out, int n) { increment(in, out, n); }

// the structure of arrays as two pointers: x[i] and y[i] are n floats apart
extern "C" __global__ void soa(const float *in, float *out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float x = in[i], y = in[n + i];
        out[i] = x + 10.f;
        out[n + i] = y + 20.f;
    }
}

extern "C" __global__ void copy_plain(int *out, int *in, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

extern "C" __global__ void copy_restrict(int *__restrict__ out, const int *__restrict__ in, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

extern "C" __global__ void copy_ldg(int *out, int *in, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __ldg(&in[i]);
}
