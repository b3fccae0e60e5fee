// A solver over 256 MiB of managed memory: each step the host rewrites a tenth of it, the GPU folds
// all of it into a 1 MiB result the host reads; no prefetch, no advice.
// Built and timed by run_apps.py: `managed_loop --mem MODE` (frame_loop.h lists the modes); prints one JSON line.
#include "frame_loop.h"

int main(int argc, char **argv) {
    Args a;
    a.mem = "managed";
    a.mib_in = 256;
    a.mib_out = 1;
    a.fresh = 0.1;
    a.iters = 30;
    a.work = 8;
    return run_app("managed_loop", argc, argv, a);
}
