// A simulation's step loop: the host produces a 64 MiB frame each step in malloc'd memory, copies it
// in, a light kernel maps it to a 64 MiB result, which is copied back and read.
// Built and timed by run_apps.py: `stream_loop --mem MODE` (frame_loop.h lists the modes); prints one JSON line.
#include "frame_loop.h"

int main(int argc, char **argv) {
    Args a;
    a.mem = "pageable";
    a.mib_in = 64;
    a.mib_out = 64;
    a.fresh = 1.0;
    a.iters = 40;
    a.work = 1;
    return run_app("stream_loop", argc, argv, a);
}
