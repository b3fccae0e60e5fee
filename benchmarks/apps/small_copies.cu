// A record loop: 512 records of 16 KiB go to the GPU one cudaMemcpy each from malloc'd memory, and
// their results come back one by one.
// Built and timed by run_apps.py: `small_copies --mem MODE` (frame_loop.h lists the modes); prints one JSON line.
#include "frame_loop.h"

int main(int argc, char **argv) {
    Args a;
    a.mem = "pageable";
    a.mib_in = 8;
    a.mib_out = 8;
    a.fresh = 1.0;
    a.iters = 60;
    a.work = 1;
    a.copies = 512;
    return run_app("small_copies", argc, argv, a);
}
