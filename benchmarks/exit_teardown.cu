// What a process pays at exit for the host memory it leaves behind: 1 GiB malloc'd (4 KiB pages where the
// host gives huge pages only where advised), written, and then, by mode:
//   pageable    nothing more
//   registered  cudaHostRegister'd before the write and never unregistered (the exit unpins it)
//   unregister  cudaHostRegister'd before the write, cudaHostUnregister'd and freed before exit
//   pinned      cudaMallocHost'd instead of malloc'd, never freed
//   freehost    cudaMallocHost'd, cudaFreeHost'd before exit
// Prints one JSON line: the mode and the seconds of each step the program timed itself. The process's
// whole time (its exit included) is timed from outside by benchmarks/exit_teardown.py.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s\n", cudaGetErrorString(e)); return 1; } } while (0)

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "pageable";
    size_t mib = argc > 2 ? strtoull(argv[2], nullptr, 10) : 1024, bytes = mib << 20;
    double t0 = now();
    CHECK(cudaFree(0));  // the context, outside the steps
    double t_ctx = now();
    bool pinned = !strcmp(mode, "pinned") || !strcmp(mode, "freehost");
    bool reg = !strcmp(mode, "registered") || !strcmp(mode, "unregister");
    char *h = nullptr;
    if (pinned) CHECK(cudaMallocHost((void **)&h, bytes));
    else h = (char *)aligned_alloc(4096, bytes);
    if (reg) CHECK(cudaHostRegister(h, bytes, cudaHostRegisterDefault));
    double t_alloc = now();
    memset(h, 1, bytes);
    double t_write = now();
    if (!strcmp(mode, "unregister")) { CHECK(cudaHostUnregister(h)); free(h); }
    if (!strcmp(mode, "freehost")) CHECK(cudaFreeHost(h));
    double t_free = now();
    printf("{\"mode\": \"%s\", \"mib\": %zu, \"context_s\": %.6f, \"alloc_s\": %.6f, \"write_s\": %.6f, \"free_s\": %.6f, "
           "\"main_s\": %.6f}\n", mode, mib, t_ctx - t0, t_alloc - t_ctx, t_write - t_alloc, t_free - t_write, t_free - t0);
    return 0;
}
