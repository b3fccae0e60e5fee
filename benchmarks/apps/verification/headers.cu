// Packet headers inspected on the GPU, written as a capture filter usually is: each batch of 65536 packets of
// 4 KiB (256 MiB) is received into a malloc'd buffer (the host writes every packet: a 64-byte header, then its
// payload), copied in whole, and a kernel reads each packet's header alone (64 of its 4096 bytes: 4 MiB of the
// batch) and writes one verdict a packet; the 256 KiB of verdicts are copied back and counted by the host. 40
// batches. Fixed before its first measurement, to check advice on a program that copies far more than its kernels
// read.
//
//   headers [--mem MODE] [--batches 40]
//
// Modes: pageable (as written), pinned (cudaMallocHost for the batch and the verdicts), registered (the malloc'd
// buffers cudaHostRegister'ed), write-combined (the batch from cudaHostAlloc write-combined, the verdicts pinned),
// mapped (the malloc'd buffers registered mapped: the kernel reads the headers in host memory), zero-copy
// (cudaHostAlloc mapped, the same), managed, managed-prefetch (the batch prefetched to the GPU before the kernel,
// the verdicts back after it), managed-advise-accessed-by-gpu (the batch advised accessed by the GPU: mapped where it lies, on the host
// where the host wrote it).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

static const size_t PACKET = 4096, HEADER = 64, PACKETS = 65536;

// one thread a packet: its header's 16 words, a verdict from its addresses, ports and length
__global__ void inspect(const unsigned *batch, unsigned *verdict) {
    size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (p >= PACKETS) return;
    const uint4 *h = (const uint4 *)(batch + p * (PACKET / 4));
    uint4 a = h[0], b = h[1], c = h[2], d = h[3];
    unsigned hash = a.x * 2654435761u ^ a.y * 40503u ^ b.x ^ (b.y << 7) ^ c.z ^ d.w;
    bool drop = (b.x & 0xffffu) == 23u || a.w > 3000u;  // telnet, or too long
    verdict[p] = drop ? 0u : (hash | 1u);
}

static void receive(unsigned *batch, int b) {
    for (size_t p = 0; p < PACKETS; ++p) {
        unsigned *pk = batch + p * (PACKET / 4);
        unsigned seed = (unsigned)(p * 2246822519u) ^ (unsigned)b * 3266489917u;
        for (int w = 0; w < (int)(HEADER / 4); ++w) { seed = seed * 1664525u + 1013904223u; pk[w] = seed; }
        pk[3] = seed % 4096u;  // the length
        memset(pk + HEADER / 4, (int)(seed & 0xff), PACKET - HEADER);  // the payload
    }
}

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int batches = 40;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--batches")) batches = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t b_bytes = PACKETS * PACKET, v_bytes = PACKETS * 4;
    bool managed = mem.rfind("managed", 0) == 0;
    bool copies = mem == "pageable" || mem == "pinned" || mem == "registered" || mem == "write-combined";
    unsigned *batch = nullptr, *verdict = nullptr, *d_batch = nullptr, *d_verdict = nullptr;
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, host{cudaMemLocationTypeHost, 0};
    if (mem == "pageable" || mem == "registered" || mem == "mapped") {
        batch = (unsigned *)malloc(b_bytes);
        verdict = (unsigned *)malloc(v_bytes);
        if (mem != "pageable") {
            unsigned f = mem == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(batch, b_bytes, f));
            CHECK(cudaHostRegister(verdict, v_bytes, f));
        }
    } else if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") {
        unsigned f = mem == "write-combined" ? cudaHostAllocWriteCombined
                   : mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault;
        CHECK(cudaHostAlloc((void **)&batch, b_bytes, f));
        CHECK(cudaHostAlloc((void **)&verdict, v_bytes, mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault));
    } else if (mem == "managed" || mem == "managed-prefetch" || mem == "managed-advise-accessed-by-gpu") {
        CHECK(cudaMallocManaged((void **)&batch, b_bytes));
        CHECK(cudaMallocManaged((void **)&verdict, v_bytes));
        if (mem == "managed-advise-accessed-by-gpu") {
            CHECK(cudaMemAdvise(batch, b_bytes, cudaMemAdviseSetAccessedBy, gpu));
        }
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }
    if (copies) {
        CHECK(cudaMalloc((void **)&d_batch, b_bytes));
        CHECK(cudaMalloc((void **)&d_verdict, v_bytes));
    } else if (mem == "mapped" || mem == "zero-copy") {
        CHECK(cudaHostGetDevicePointer((void **)&d_batch, batch, 0));
        CHECK(cudaHostGetDevicePointer((void **)&d_verdict, verdict, 0));
    } else {
        d_batch = batch; d_verdict = verdict;
    }
    unsigned long long kept = 0, sum = 0;
    for (int b = 0; b < batches; ++b) {
        receive(batch, b);
        if (copies) CHECK(cudaMemcpy(d_batch, batch, b_bytes, cudaMemcpyHostToDevice));
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(batch, b_bytes, gpu, 0, 0));
            CHECK(cudaMemPrefetchAsync(verdict, v_bytes, gpu, 0, 0));
        }
        inspect<<<PACKETS / 256, 256>>>(d_batch, d_verdict);
        CHECK(cudaGetLastError());
        if (copies) CHECK(cudaMemcpy(verdict, d_verdict, v_bytes, cudaMemcpyDeviceToHost));
        else {
            if (mem == "managed-prefetch") {
                CHECK(cudaMemPrefetchAsync(verdict, v_bytes, host, 0, 0));
                CHECK(cudaMemPrefetchAsync(batch, b_bytes, host, 0, 0));  // back before the next batch is received
            }
            CHECK(cudaDeviceSynchronize());
        }
        for (size_t p = 0; p < PACKETS; ++p) {  // the verdicts, used
            kept += verdict[p] != 0;
            sum += verdict[p];
        }
    }
    printf("{\"app\": \"headers\", \"mem\": \"%s\", \"checksum\": %llu}\n", mem.c_str(), (kept << 32) ^ sum);
    if (copies) {
        CHECK(cudaFree(d_batch)); CHECK(cudaFree(d_verdict));
    }
    if (managed) {
        CHECK(cudaFree(batch)); CHECK(cudaFree(verdict));
    } else if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") {
        CHECK(cudaFreeHost(batch)); CHECK(cudaFreeHost(verdict));
    } else {
        if (mem != "pageable") {
            CHECK(cudaHostUnregister(batch)); CHECK(cudaHostUnregister(verdict));
        }
        free(batch); free(verdict);
    }
    return 0;
}
