// 2D traversal (seeds 000 and 001).
//
// sum_{rows,cols}_{f32,f32x4}: seed 000's sum of a square matrix. Blocks take rows (or
// columns) in turn and the threads of a block step along them, so by rows neighbouring
// threads read neighbouring elements and by columns they read elements a whole row apart.
// Each thread sums in double (the values are small integers: exact, checked against numpy);
// a block adds its sum to *sum once. Any block size works (seed 000 sweeps 16 .. 1024 in
// steps of 1), so the block's reduction goes through shared memory, not warp shuffles.
//
// add_*: seed 001's C = A + B on int matrices, with the organisations its tables compare:
// 2D grid / 2D block indexed row-major (y*cols + x) or column-major (x*cols + y), 1D grid /
// 1D block over the flattened matrix, and 2D grid / 1D block (one grid row per matrix row).

__device__ __forceinline__ float hsum(float v) { return v; }
__device__ __forceinline__ float hsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }

__device__ __forceinline__ void add_block_sum(double acc, double *sum) {
    __shared__ double block_sum;
    if (threadIdx.x == 0 && threadIdx.y == 0) block_sum = 0.0;
    __syncthreads();
    atomicAdd(&block_sum, acc);
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) atomicAdd(sum, block_sum);
}

// Blocks take the outer lines (rows BY_ROWS, else columns) in turn; threads step along them.
template <typename T, bool BY_ROWS>
__device__ __forceinline__ void sum_matrix(const T *__restrict__ in, int rows, int cols, double *sum) {
    const int outer = BY_ROWS ? rows : cols, inner = BY_ROWS ? cols : rows;
    double acc = 0.0;
    for (int o = blockIdx.x; o < outer; o += gridDim.x)
        for (int i = threadIdx.x; i < inner; i += blockDim.x) {
            const long long r = BY_ROWS ? o : i, c = BY_ROWS ? i : o;
            acc += hsum(in[r * cols + c]);
        }
    add_block_sum(acc, sum);
}

extern "C" __global__ void sum_rows_f32(const float *__restrict__ in, int rows, int cols, double *sum) {
    sum_matrix<float, true>(in, rows, cols, sum);
}
extern "C" __global__ void sum_rows_f32x4(const float4 *__restrict__ in, int rows, int cols, double *sum) {
    sum_matrix<float4, true>(in, rows, cols, sum);
}
extern "C" __global__ void sum_cols_f32(const float *__restrict__ in, int rows, int cols, double *sum) {
    sum_matrix<float, false>(in, rows, cols, sum);
}
extern "C" __global__ void sum_cols_f32x4(const float4 *__restrict__ in, int rows, int cols, double *sum) {
    sum_matrix<float4, false>(in, rows, cols, sum);
}

extern "C" __global__ void add_2d_row(const int *a, const int *b, int *c, int rows, int cols) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (y < rows && x < cols) {
        const long long i = (long long)y * cols + x;
        c[i] = a[i] + b[i];
    }
}

extern "C" __global__ void add_2d_col(const int *a, const int *b, int *c, int rows, int cols) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < rows && y < cols) {  // seed 001: matC[x * col + y], the square matrix read across
        const long long i = (long long)x * cols + y;
        c[i] = a[i] + b[i];
    }
}

extern "C" __global__ void add_1d(const int *a, const int *b, int *c, int rows, int cols) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long long)rows * cols) c[i] = a[i] + b[i];
}

extern "C" __global__ void add_2d_grid_1d_block(const int *a, const int *b, int *c, int rows, int cols) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (y < rows && x < cols) {
        const long long i = (long long)y * cols + x;
        c[i] = a[i] + b[i];
    }
}
