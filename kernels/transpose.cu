// Matrix transpose (seed 004): out (nx rows of ny) = transpose of in (ny rows of nx).
//
// naive_rowcol: read rows (coalesced), write columns (strided). naive_colrow: read columns,
// write rows. diag_*: the same with blocks mapped along diagonals (seed 004's "diagonal
// coordinate system", meant to spread the blocks over memory partitions; square grids only).
// smem / smem_pad: a 32x32 tile staged in shared memory, read and written along rows; without
// padding the tile's column reads hit one bank 32 times (bank conflicts), with one float of
// padding per row they spread over all 32 banks. The tiled kernels run 32x8 blocks, each
// thread moving four elements.

#define TILE 32
#define TILE_ROWS 8

extern "C" __global__ void naive_rowcol(float *out, const float *in, int nx, int ny) {
    const int ix = blockDim.x * blockIdx.x + threadIdx.x, iy = blockDim.y * blockIdx.y + threadIdx.y;
    if (ix < nx && iy < ny) out[(long long)ix * ny + iy] = in[(long long)iy * nx + ix];
}

extern "C" __global__ void naive_colrow(float *out, const float *in, int nx, int ny) {
    const int ix = blockDim.x * blockIdx.x + threadIdx.x, iy = blockDim.y * blockIdx.y + threadIdx.y;
    // seed 004 reads column-wise and writes row-wise: thread (ix, iy) writes out[iy][ix] = in[ix][iy]
    if (ix < ny && iy < nx) out[(long long)iy * ny + ix] = in[(long long)ix * nx + iy];
}

extern "C" __global__ void diag_rowcol(float *out, const float *in, int nx, int ny) {
    const int blk_x = (blockIdx.x + blockIdx.y) % gridDim.x, blk_y = blockIdx.x;
    const int ix = blockDim.x * blk_x + threadIdx.x, iy = blockDim.y * blk_y + threadIdx.y;
    if (ix < nx && iy < ny) out[(long long)ix * ny + iy] = in[(long long)iy * nx + ix];
}

extern "C" __global__ void diag_colrow(float *out, const float *in, int nx, int ny) {
    const int blk_x = (blockIdx.x + blockIdx.y) % gridDim.x, blk_y = blockIdx.x;
    const int ix = blockDim.x * blk_x + threadIdx.x, iy = blockDim.y * blk_y + threadIdx.y;
    if (ix < ny && iy < nx) out[(long long)iy * ny + ix] = in[(long long)ix * nx + iy];
}

template <int PAD>
__device__ __forceinline__ void tiled(float *out, const float *in, int nx, int ny) {
    __shared__ float tile[TILE][TILE + PAD];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += TILE_ROWS)
        if (x < nx && y + j < ny) tile[threadIdx.y + j][threadIdx.x] = in[(long long)(y + j) * nx + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;  // the block's tile, transposed
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += TILE_ROWS)
        if (x < ny && y + j < nx) out[(long long)(y + j) * ny + x] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" __global__ void smem(float *out, const float *in, int nx, int ny) { tiled<0>(out, in, nx, ny); }
extern "C" __global__ void smem_pad(float *out, const float *in, int nx, int ny) { tiled<1>(out, in, nx, ny); }
