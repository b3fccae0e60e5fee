// A library's upload and download helpers that stage through a pinned bounce buffer they allocate on each call, as
// helpers written to "copy at the link's rate whatever memory the caller passes" often do: cudaMallocHost an 8 MiB
// bounce buffer, then for each 8 MiB chunk a host memcpy between the caller's buffer and the bounce buffer and a
// cudaMemcpyAsync between the bounce buffer and the device, synchronized, then cudaFreeHost. The caller computes a
// 48 MiB frame on the host, uploads it, runs a kernel that maps each sample to an output sample, downloads the 48 MiB
// of output and reads all of it (a checksum); 30 frames, the same two malloc'd buffers every frame. Fixed before its
// first measurement, to check the advice on a program whose copies come from pinned memory the trace sees, out of
// pageable memory it does not (the host memcpy is no CUDA call).
//
//   bounce_per_call [--mem MODE] [--frames 30]
//
// Modes: bounce-each (as written), pinned (the helpers' bounce buffer allocated once, before the frames, and freed
// after them; the chunks and memcpys kept: what "page-lock once, keep the copies" makes of this program),
// pinned-direct (the frames computed in cudaMallocHost memory and copied whole, no bounce), pageable (the helpers
// copy the caller's buffer whole, no bounce), registered (the caller's buffers cudaHostRegister'ed once; the
// helpers copy them whole), write-combined (the input from cudaHostAlloc write-combined, the output pinned, copied
// whole), mapped (the caller's buffers registered mapped once: the kernel reads and writes host memory, no copies),
// zero-copy (cudaHostAlloc mapped, the same), managed (cudaMallocManaged, no copies).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

static const size_t SAMPLES = (48u << 20) / sizeof(float);  // 48 MiB a frame each way
static const size_t BOUNCE = 8u << 20;                       // the helpers' bounce buffer
static std::string mem = "bounce-each";
static cudaStream_t stream;
static char *kept = nullptr;  // the bounce buffer, in mode pinned

__global__ void respond(const float *in, float *out, size_t n, float gain) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i];
    out[i] = x * gain + x * x * (1.f - gain);
}

static char *bounce_buffer() {
    if (kept) return kept;
    char *b = nullptr;
    CHECK(cudaMallocHost((void **)&b, BOUNCE));
    return b;
}

static void release(char *b) {
    if (b != kept) CHECK(cudaFreeHost(b));
}

static bool bounced() { return mem == "bounce-each" || mem == "pinned"; }

// the library's helpers: copy a caller's host buffer to or from the device
static void upload(float *device, const float *host, size_t bytes) {
    if (!bounced()) {
        CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
        CHECK(cudaStreamSynchronize(stream));
        return;
    }
    char *b = bounce_buffer();
    for (size_t at = 0; at < bytes; at += BOUNCE) {
        size_t n = bytes - at < BOUNCE ? bytes - at : BOUNCE;
        memcpy(b, (const char *)host + at, n);
        CHECK(cudaMemcpyAsync((char *)device + at, b, n, cudaMemcpyHostToDevice, stream));
        CHECK(cudaStreamSynchronize(stream));
    }
    release(b);
}

static void download(float *host, const float *device, size_t bytes) {
    if (!bounced()) {
        CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
        CHECK(cudaStreamSynchronize(stream));
        return;
    }
    char *b = bounce_buffer();
    for (size_t at = 0; at < bytes; at += BOUNCE) {
        size_t n = bytes - at < BOUNCE ? bytes - at : BOUNCE;
        CHECK(cudaMemcpyAsync(b, (const char *)device + at, n, cudaMemcpyDeviceToHost, stream));
        CHECK(cudaStreamSynchronize(stream));
        memcpy((char *)host + at, b, n);
    }
    release(b);
}

int main(int argc, char **argv) {
    int frames = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--frames")) frames = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t bytes = SAMPLES * sizeof(float);
    const bool copies = bounced() || mem == "pinned-direct" || mem == "pageable" || mem == "registered" ||
                        mem == "write-combined";
    const bool mallocd = bounced() || mem == "pageable" || mem == "registered" || mem == "mapped";
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float *in = nullptr, *out = nullptr, *d_in = nullptr, *d_out = nullptr;
    if (mallocd) {
        in = (float *)malloc(bytes);
        out = (float *)malloc(bytes);
        if (!in || !out) { fprintf(stderr, "out of host memory\n"); return 1; }
        if (mem == "registered" || mem == "mapped") {
            unsigned f = mem == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(in, bytes, f));
            CHECK(cudaHostRegister(out, bytes, f));
        }
        if (mem == "pinned") CHECK(cudaMallocHost((void **)&kept, BOUNCE));
    } else if (mem == "pinned-direct" || mem == "write-combined" || mem == "zero-copy") {
        CHECK(cudaHostAlloc((void **)&in, bytes, mem == "write-combined" ? cudaHostAllocWriteCombined
                                                 : mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault));
        CHECK(cudaHostAlloc((void **)&out, bytes, mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault));
    } else if (mem == "managed") {
        CHECK(cudaMallocManaged((void **)&in, bytes));
        CHECK(cudaMallocManaged((void **)&out, bytes));
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    if (copies) {
        CHECK(cudaMalloc((void **)&d_in, bytes));
        CHECK(cudaMalloc((void **)&d_out, bytes));
    } else if (mem == "mapped" || mem == "zero-copy") {
        CHECK(cudaHostGetDevicePointer((void **)&d_in, in, 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_out, out, 0));
    } else {
        d_in = in; d_out = out;
    }

    double checksum = 0;
    for (int f = 0; f < frames; ++f) {
        unsigned seed = 2654435761u * (unsigned)(f + 1);
        for (size_t i = 0; i < SAMPLES; ++i) {  // the frame, computed
            seed = seed * 1664525u + 1013904223u;
            in[i] = (float)(seed >> 8) * (1.0f / 16777216.0f);
        }
        if (copies) upload(d_in, in, bytes);
        respond<<<(unsigned)((SAMPLES + 255) / 256), 256, 0, stream>>>(d_in, d_out, SAMPLES, 0.5f + 0.01f * f);
        CHECK(cudaGetLastError());
        if (copies) download(out, d_out, bytes);
        else CHECK(cudaStreamSynchronize(stream));
        double s = 0;
        for (size_t i = 0; i < SAMPLES; ++i) s += out[i];  // the output, used
        checksum += s;
    }

    if (copies) { CHECK(cudaFree(d_in)); CHECK(cudaFree(d_out)); }
    if (kept) CHECK(cudaFreeHost(kept));
    if (mem == "managed") {
        CHECK(cudaFree(in)); CHECK(cudaFree(out));
    } else if (!mallocd) {
        CHECK(cudaFreeHost(in)); CHECK(cudaFreeHost(out));
    } else {
        if (mem == "registered" || mem == "mapped") { CHECK(cudaHostUnregister(in)); CHECK(cudaHostUnregister(out)); }
        free(in); free(out);
    }
    CHECK(cudaStreamDestroy(stream));
    printf("{\"app\": \"bounce_per_call\", \"mem\": \"%s\", \"checksum\": %.9e}\n", mem.c_str(), checksum);
    return 0;
}
