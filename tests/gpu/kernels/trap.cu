// Fault injection for tests/gpu/test_faults.py: lifecycle's scale_inplace (x = x * 3 + 1 on every
// word), except that a buffer of exactly TRAP_WORDS words makes the kernel trap, a sticky error
// that leaves the CUDA context unusable until it is re-created.
#ifndef TRAP_WORDS
#define TRAP_WORDS 0ull
#endif

extern "C" __global__ void scale_inplace(unsigned int* __restrict__ x, unsigned long long n)
{
    if (n == TRAP_WORDS)
        __trap();
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        x[i] = x[i] * 3u + 1u;
}
