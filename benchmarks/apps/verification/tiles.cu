// An out-of-core image filter, written as it is for a GPU smaller than its image: a 512 MiB image of floats (16384 x
// 8192, rows of 64 KiB) in malloc'd memory, filled by the host once (a scan it loaded), smoothed in 4 passes. Each
// pass sweeps the image's 32 tiles of 2048 x 2048 floats (16 MiB; rows of 8 KiB out of the image's 64 KiB) through
// one device tile and one device result: cudaMemcpy2D in, a five-point stencil clamped at the tile's edges,
// cudaMemcpy2D out into a second image of the same size; the two images swap between passes, and the host reads the
// last (a checksum). Fixed before its first measurement, to check advice on pitched copies of part of each row, and
// on a loop whose host does not touch what goes out and comes back between passes.
//
//   tiles [--mem MODE] [--passes 4]
//
// pageable is the program as written; the other modes are the ways advice can ask for, applied to both images:
//   pinned, registered   the images from cudaMallocHost / malloc'd and cudaHostRegister'ed, copied as written
//   write-combined       the first image (the one the host fills) from cudaHostAlloc write-combined, the second
//                        pinned; the host's checksum reads whichever the last pass wrote (after an even number of
//                        passes the first, uncached: run.sh leaves it out)
//   mapped, zero-copy    the images registered mapped / from cudaHostAlloc mapped: the kernel reads and writes each
//                        tile in host memory (no device tiles, no copies)
//   managed              the images from cudaMallocManaged, the kernel reading and writing each tile in place
//   managed-prefetch     the same, the tile's rows of both images prefetched to the GPU before its kernel, the last
//                        image to the host before the checksum
//   managed-advise-accessed-by-gpu, managed-advise-prefer-gpu  the managed images, advised once after they are
//                        allocated (accessed by the GPU / preferring the GPU's memory), the kernel as in managed
//   pinned-pipelined     pinned images, two device tiles and results on two streams: tile t+1 copies in while
//                        tile t is filtered (cudaMemcpy2DAsync)
//   staged               malloc'd images, one 16 MiB pinned buffer each way: the host packs the tile's rows into it
//                        and copies it in one cudaMemcpy, and unpacks the result the same way
//   once                 malloc'd images, each copied in and out once (two device images, the passes between them
//                        on the GPU, tile by tile as written): the change the copies of unchanged data ask for
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "host_memory.h"

static const size_t W = 16384, H = 8192, T = 2048;  // floats: the image's width and height, a tile's side
static const size_t TILES_X = W / T, TILES_Y = H / T, IMAGE = W * H * sizeof(float), TILE = T * T * sizeof(float);

// out = half the point and an eighth of each of its four neighbours, the tile's edge clamped (each tile on its own,
// as the device holds one at a time); in and out are the tile's first row, `pitch` floats apart
__global__ void smooth(const float *in, size_t in_pitch, float *out, size_t out_pitch) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < T * T; i += (size_t)gridDim.x * blockDim.x) {
        const size_t y = i / T, x = i % T;
        const float *r = in + y * in_pitch;
        const float c = r[x], w = r[x ? x - 1 : x], e = r[x + 1 < T ? x + 1 : x];
        const float n = (y ? r - in_pitch : r)[x], s = (y + 1 < T ? r + in_pitch : r)[x];
        out[y * out_pitch + x] = 0.5f * c + 0.125f * (w + e + n + s);
    }
}

static double checksum(const float *img) {  // the host reads every pixel
    double a[4] = {0, 0, 0, 0};
    for (size_t j = 0; j < W * H; j += 4)
        for (int k = 0; k < 4; ++k) a[k] += img[j + k];
    return a[0] + a[1] + a[2] + a[3];
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int passes = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--passes")) passes = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    if (passes < 1) { fprintf(stderr, "--passes must be positive\n"); return 2; }
    Kind k[2];
    if (mem == "pageable" || mem == "staged" || mem == "once") k[0] = k[1] = MALLOC;
    else if (mem == "pinned" || mem == "pinned-pipelined") k[0] = k[1] = PINNED;
    else if (mem == "registered") k[0] = k[1] = REGISTERED;
    else if (mem == "write-combined") k[0] = WRITE_COMBINED, k[1] = PINNED;
    else if (mem == "mapped") k[0] = k[1] = REGISTERED_MAPPED;
    else if (mem == "zero-copy") k[0] = k[1] = ALLOC_MAPPED;
    else if (mem == "managed" || mem == "managed-prefetch" || mem == "managed-advise-accessed-by-gpu" ||
             mem == "managed-advise-prefer-gpu") k[0] = k[1] = MANAGED;
    else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    const bool managed = k[0] == MANAGED, prefetch = mem == "managed-prefetch";
    const bool in_place = managed || k[0] == REGISTERED_MAPPED || k[0] == ALLOC_MAPPED;
    const bool pipelined = mem == "pinned-pipelined", staged = mem == "staged", once = mem == "once";
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (managed && 2 * IMAGE > free_b / 2) {  // managed memory is never oversubscribed here
        fprintf(stderr, "the managed images (%zu MiB) are more than half the GPU's free memory (%zu MiB)\n",
                (2 * IMAGE) >> 20, free_b >> 20);
        return 2;
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, cpu{cudaMemLocationTypeHost, 0};
    float *img[2] = {(float *)host_alloc(k[0], IMAGE), (float *)host_alloc(k[1], IMAGE)};
    for (float *m : img) {
        if (mem == "managed-advise-accessed-by-gpu") CHECK(cudaMemAdvise(m, IMAGE, cudaMemAdviseSetAccessedBy, gpu));
        if (mem == "managed-advise-prefer-gpu") CHECK(cudaMemAdvise(m, IMAGE, cudaMemAdviseSetPreferredLocation, gpu));
    }
    for (size_t i = 0; i < W * H; ++i) img[0][i] = (float)((i * 7) & 1023) * (1.0f / 1024.0f);  // the scan
    float *dimg[2] = {img[0], img[1]};  // what the kernel reads and writes: in place, or the device's copies
    if (k[0] == REGISTERED_MAPPED || k[0] == ALLOC_MAPPED)
        for (int b = 0; b < 2; ++b) CHECK(cudaHostGetDevicePointer((void **)&dimg[b], img[b], 0));
    float *d_in[2] = {nullptr, nullptr}, *d_out[2] = {nullptr, nullptr}, *pack[2] = {nullptr, nullptr};
    if (once) {
        for (int b = 0; b < 2; ++b) CHECK(cudaMalloc((void **)&dimg[b], IMAGE));
    } else if (!in_place) {
        for (int b = 0; b < (pipelined ? 2 : 1); ++b) {
            CHECK(cudaMalloc((void **)&d_in[b], TILE));
            CHECK(cudaMalloc((void **)&d_out[b], TILE));
        }
        if (staged) for (auto &p : pack) CHECK(cudaMallocHost((void **)&p, TILE));
    }
    cudaStream_t st[2] = {0, 0};
    cudaEvent_t done[2];
    if (pipelined)
        for (int b = 0; b < 2; ++b) {
            CHECK(cudaStreamCreate(&st[b]));
            CHECK(cudaEventCreateWithFlags(&done[b], cudaEventDisableTiming));
        }
    const dim3 grid(132 * 8), block(256);
    const size_t row = T * sizeof(float), pitch = W * sizeof(float);
    if (once) CHECK(cudaMemcpy(dimg[0], img[0], IMAGE, cudaMemcpyHostToDevice));
    int src = 0;
    for (int p = 0; p < passes; ++p, src ^= 1) {
        const int dst = src ^ 1;
        for (size_t t = 0; t < TILES_X * TILES_Y; ++t) {
            const size_t origin = (t / TILES_X) * T * W + (t % TILES_X) * T;  // the tile's first float in the image
            if (in_place || once) {  // the kernel on the tile where it lies
                if (prefetch) {  // the tile's rows, of both images (their whole width: a range is contiguous)
                    const size_t band = (t / TILES_X) * T * W;
                    CHECK(cudaMemPrefetchAsync(img[src] + band, T * pitch, gpu, 0, 0));
                    CHECK(cudaMemPrefetchAsync(img[dst] + band, T * pitch, gpu, 0, 0));
                }
                smooth<<<grid, block>>>(dimg[src] + origin, W, dimg[dst] + origin, W);
                CHECK(cudaGetLastError());
            } else if (staged) {  // packed on the host into one pinned buffer, one copy each way
                for (size_t y = 0; y < T; ++y) memcpy(pack[0] + y * T, img[src] + origin + y * W, row);
                CHECK(cudaMemcpy(d_in[0], pack[0], TILE, cudaMemcpyHostToDevice));
                smooth<<<grid, block>>>(d_in[0], T, d_out[0], T);
                CHECK(cudaGetLastError());
                CHECK(cudaMemcpy(pack[1], d_out[0], TILE, cudaMemcpyDeviceToHost));
                for (size_t y = 0; y < T; ++y) memcpy(img[dst] + origin + y * W, pack[1] + y * T, row);
            } else {  // the tile's rows in, filtered, out (on two streams in turn, where pipelined)
                if (pipelined) {
                    const int b = (int)(t & 1);
                    CHECK(cudaEventSynchronize(done[b]));  // its stream's tile before: two tiles in flight at most
                    CHECK(cudaMemcpy2DAsync(d_in[b], row, img[src] + origin, pitch, row, T, cudaMemcpyHostToDevice,
                                            st[b]));
                    smooth<<<grid, block, 0, st[b]>>>(d_in[b], T, d_out[b], T);
                    CHECK(cudaGetLastError());
                    CHECK(cudaMemcpy2DAsync(img[dst] + origin, pitch, d_out[b], row, row, T, cudaMemcpyDeviceToHost,
                                            st[b]));
                    CHECK(cudaEventRecord(done[b], st[b]));
                } else {
                    CHECK(cudaMemcpy2D(d_in[0], row, img[src] + origin, pitch, row, T, cudaMemcpyHostToDevice));
                    smooth<<<grid, block>>>(d_in[0], T, d_out[0], T);
                    CHECK(cudaGetLastError());
                    CHECK(cudaMemcpy2D(img[dst] + origin, pitch, d_out[0], row, row, T, cudaMemcpyDeviceToHost));
                }
            }
        }
        CHECK(cudaDeviceSynchronize());  // the pass's image is whole before the next pass reads it
    }
    if (once) CHECK(cudaMemcpy(img[src], dimg[src], IMAGE, cudaMemcpyDeviceToHost));
    if (prefetch) CHECK(cudaMemPrefetchAsync(img[src], IMAGE, cpu, 0, 0));
    CHECK(cudaDeviceSynchronize());
    printf("{\"app\": \"tiles\", \"mem\": \"%s\", \"checksum\": %.9g}\n", mem.c_str(), checksum(img[src]));
    if (pipelined)
        for (int b = 0; b < 2; ++b) {
            CHECK(cudaEventDestroy(done[b]));
            CHECK(cudaStreamDestroy(st[b]));
        }
    for (int b = 0; b < 2; ++b) {
        if (d_in[b]) CHECK(cudaFree(d_in[b]));
        if (d_out[b]) CHECK(cudaFree(d_out[b]));
        if (pack[b]) CHECK(cudaFreeHost(pack[b]));
        if (once) CHECK(cudaFree(dimg[b]));
        host_free(k[b], img[b]);
    }
    return 0;
}
