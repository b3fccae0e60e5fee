// A loop over an image kept in CUDA arrays, as a texture-sampling program keeps it: each step the host writes a
// 16 MiB frame of malloc'd (pageable) memory, copies it into a cudaArray (cudaMemcpy2DToArray: Host-to-Array in
// the trace), a kernel samples it through a texture object, its result goes into a second array, and the host
// copies that back (cudaMemcpy2DFromArray: Array-to-Host) and reads it. Traced to check that `umprof advise`
// reads copies to and from arrays as copies between host and GPU (tests/fixtures/traces/*-texture_loop.sqlite.xz).
//
//     nvcc -O2 -arch=sm_90 -o texture_loop benchmarks/apps/texture_loop.cu && ./texture_loop [STEPS]
#include <cstdio>
#include <cstdlib>

#include "cuda_check.h"

__global__ void sample(cudaTextureObject_t tex, float *out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[(size_t)y * w + x] = 2.0f * tex2D<float>(tex, x + 0.5f, y + 0.5f);
}

int main(int argc, char **argv) {
    const int w = 2048, h = 2048, steps = argc > 1 ? atoi(argv[1]) : 20;
    const size_t pitch = w * sizeof(float), n = (size_t)w * h, bytes = n * sizeof(float);
    float *frame = (float *)malloc(bytes), *result = (float *)malloc(bytes), *out;
    cudaChannelFormatDesc fmt = cudaCreateChannelDesc<float>();
    cudaArray_t in_array, out_array;
    CHECK(cudaMallocArray(&in_array, &fmt, w, h));
    CHECK(cudaMallocArray(&out_array, &fmt, w, h));
    CHECK(cudaMalloc(&out, bytes));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = in_array;
    cudaTextureDesc desc = {};
    desc.addressMode[0] = desc.addressMode[1] = cudaAddressModeClamp;
    desc.filterMode = cudaFilterModePoint;
    desc.readMode = cudaReadModeElementType;
    cudaTextureObject_t tex;
    CHECK(cudaCreateTextureObject(&tex, &res, &desc, nullptr));
    double sum = 0;
    long bad = 0;
    for (int it = 0; it < steps; ++it) {
        for (size_t i = 0; i < n; ++i) frame[i] = (float)((i * 7 + it) & 1023);
        CHECK(cudaMemcpy2DToArray(in_array, 0, 0, frame, pitch, pitch, h, cudaMemcpyHostToDevice));
        sample<<<dim3((w + 15) / 16, (h + 15) / 16), dim3(16, 16)>>>(tex, out, w, h);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy2DToArray(out_array, 0, 0, out, pitch, pitch, h, cudaMemcpyDeviceToDevice));
        CHECK(cudaMemcpy2DFromArray(result, pitch, out_array, 0, 0, pitch, h, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; ++i) {
            sum += result[i];
            bad += result[i] != 2.0f * frame[i];
        }
    }
    CHECK(cudaDestroyTextureObject(tex));
    CHECK(cudaFreeArray(in_array));
    CHECK(cudaFreeArray(out_array));
    CHECK(cudaFree(out));
    free(frame);
    free(result);
    printf("texture_loop: %d steps of %zu MiB, checksum %.6e, %s\n", steps, bytes >> 20, sum,
           bad ? "WRONG" : "every value as computed");
    return bad ? 1 : 0;
}
