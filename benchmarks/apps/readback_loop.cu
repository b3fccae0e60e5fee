// An output loop (a renderer, a simulation writing its state out): each step the host writes 2 MiB of
// parameters in malloc'd memory, a kernel writes a 64 MiB frame from them, which is copied back and read in full.
// Built and timed by run_apps.py: `readback_loop --mem MODE` (frame_loop.h lists the modes); prints one JSON line.
#include "frame_loop.h"

int main(int argc, char **argv) {
    Args a;
    a.mem = "pageable";
    a.mib_in = 2;
    a.mib_out = 64;
    a.fresh = 1.0;
    a.iters = 40;
    a.work = 2;
    return run_app("readback_loop", argc, argv, a);
}
