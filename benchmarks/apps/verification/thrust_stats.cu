// A statistics pass over batches, written with Thrust as a data-analysis pipeline often is: the host computes a
// batch of 8 Mi samples (32 MiB) into its buffer, thrust::copy moves it into a device_vector, thrust::transform
// scales and clips each sample into a second one, two thrust::reduce calls take the batch's sum and sum of
// squares (each returns its scalar to the host), thrust::copy brings the 32 MiB of results back, and the host
// counts the results above the batch's mean. 40 batches. Thrust makes its own calls: each copy is a
// cudaMemcpyAsync and a synchronize, each reduce allocates its temporary storage and copies its result back.
// Fixed before its first measurement, to check the advice on a program whose CUDA calls a library makes.
//
//   thrust_stats [--mem MODE] [--batches 40]
//
// Modes: pageable (as written: malloc'd host buffers), pinned (cudaMallocHost), registered (the malloc'd buffers
// cudaHostRegister'ed), write-combined (the input from cudaHostAlloc write-combined, the results pinned), mapped (the
// malloc'd buffers registered mapped: the algorithms run on their device pointers, no copies), zero-copy
// (cudaHostAlloc mapped, the same), managed (cudaMallocManaged, the algorithms on it, no copies), managed-prefetch
// (the same, the input and results prefetched to the GPU before the algorithms and the results back after them).
#include <cuda_runtime.h>
#include <thrust/copy.h>
#include <thrust/device_ptr.h>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/reduce.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include "../cuda_check.h"

static const size_t SAMPLES = (32u << 20) / sizeof(float);  // 32 MiB a batch each way

struct scale_clip {
    float gain, offset;
    __host__ __device__ float operator()(float x) const {
        float y = x * gain + offset;
        return y < 0.f ? 0.f : (y > 1.f ? 1.f : y);
    }
};

struct square {
    __host__ __device__ double operator()(float x) const { return (double)x * x; }
};

int main(int argc, char **argv) {
    std::string mem = "pageable";
    int batches = 40;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mem")) mem = argv[i + 1];
        else if (!strcmp(argv[i], "--batches")) batches = atoi(argv[i + 1]);
        else { fprintf(stderr, "unknown option %s\n", argv[i]); return 2; }
    }
    const size_t bytes = SAMPLES * sizeof(float);
    const bool copies = mem == "pageable" || mem == "pinned" || mem == "registered" || mem == "write-combined";
    const bool managed = mem == "managed" || mem == "managed-prefetch";
    float *in = nullptr, *out = nullptr;
    if (mem == "pageable" || mem == "registered" || mem == "mapped") {
        in = (float *)malloc(bytes);
        out = (float *)malloc(bytes);
        if (!in || !out) { fprintf(stderr, "out of host memory\n"); return 1; }
        if (mem != "pageable") {
            unsigned f = mem == "mapped" ? cudaHostRegisterMapped : cudaHostRegisterDefault;
            CHECK(cudaHostRegister(in, bytes, f));
            CHECK(cudaHostRegister(out, bytes, f));
        }
    } else if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") {
        CHECK(cudaHostAlloc((void **)&in, bytes, mem == "write-combined" ? cudaHostAllocWriteCombined
                                                 : mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault));
        CHECK(cudaHostAlloc((void **)&out, bytes, mem == "zero-copy" ? cudaHostAllocMapped : cudaHostAllocDefault));
    } else if (managed) {
        CHECK(cudaMallocManaged((void **)&in, bytes));
        CHECK(cudaMallocManaged((void **)&out, bytes));
    } else { fprintf(stderr, "unknown --mem %s\n", mem.c_str()); return 2; }

    // where the algorithms read and write: device_vectors with copies, else the host buffers' device pointers
    thrust::device_vector<float> d_in_vec(copies ? SAMPLES : 0), d_out_vec(copies ? SAMPLES : 0);
    thrust::device_ptr<float> d_in, d_out;
    if (copies) {
        d_in = d_in_vec.data();
        d_out = d_out_vec.data();
    } else if (managed) {
        d_in = thrust::device_pointer_cast(in);
        d_out = thrust::device_pointer_cast(out);
    } else {
        float *p_in = nullptr, *p_out = nullptr;
        CHECK(cudaHostGetDevicePointer((void **)&p_in, in, 0));
        CHECK(cudaHostGetDevicePointer((void **)&p_out, out, 0));
        d_in = thrust::device_pointer_cast(p_in);
        d_out = thrust::device_pointer_cast(p_out);
    }
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaMemLocation gpu{cudaMemLocationTypeDevice, dev}, host{cudaMemLocationTypeHost, 0};

    double checksum = 0;
    for (int b = 0; b < batches; ++b) {
        unsigned seed = 2654435761u * (unsigned)(b + 1);
        for (size_t i = 0; i < SAMPLES; ++i) {  // the batch's samples, computed
            seed = seed * 1664525u + 1013904223u;
            in[i] = (float)(seed >> 8) * (1.0f / 16777216.0f);
        }
        if (copies) thrust::copy(in, in + SAMPLES, d_in);
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(in, bytes, gpu, 0, 0));
            CHECK(cudaMemPrefetchAsync(out, bytes, gpu, 0, 0));
        }
        thrust::transform(d_in, d_in + SAMPLES, d_out, scale_clip{1.25f, -0.1f + 0.001f * b});
        double sum = thrust::reduce(d_out, d_out + SAMPLES, 0.0, thrust::plus<double>());
        double sq = thrust::transform_reduce(d_out, d_out + SAMPLES, square(), 0.0, thrust::plus<double>());
        if (copies) thrust::copy(d_out, d_out + SAMPLES, out);
        if (mem == "managed-prefetch") {
            CHECK(cudaMemPrefetchAsync(out, bytes, host, 0, 0));
            CHECK(cudaMemPrefetchAsync(in, bytes, host, 0, 0));  // back before the next batch is computed
        }
        CHECK(cudaDeviceSynchronize());
        const float mean = (float)(sum / SAMPLES);
        size_t above = 0;
        for (size_t i = 0; i < SAMPLES; ++i) above += out[i] > mean;  // the results, used
        checksum += sum + sq / SAMPLES + (double)above / SAMPLES;
    }

    d_in_vec.clear(); d_in_vec.shrink_to_fit();
    d_out_vec.clear(); d_out_vec.shrink_to_fit();
    if (managed) {
        CHECK(cudaFree(in)); CHECK(cudaFree(out));
    } else if (mem == "pinned" || mem == "write-combined" || mem == "zero-copy") {
        CHECK(cudaFreeHost(in)); CHECK(cudaFreeHost(out));
    } else {
        if (mem != "pageable") { CHECK(cudaHostUnregister(in)); CHECK(cudaHostUnregister(out)); }
        free(in); free(out);
    }
    printf("{\"app\": \"thrust_stats\", \"mem\": \"%s\", \"checksum\": %.9e}\n", mem.c_str(), checksum);
    return 0;
}
