// A compute-bound step loop: the host produces a 16 MiB frame each step in malloc'd memory, copies it in,
// a heavy kernel (tens of thousands of dependent multiply-adds a value, several milliseconds) maps it to a
// 16 MiB result, which is copied back and read: the copies are a small share of each step.
// Built and timed by run_apps.py: `compute_loop --mem MODE` (frame_loop.h lists the modes); prints one JSON line.
#include "frame_loop.h"

int main(int argc, char **argv) {
    Args a;
    a.mem = "pageable";
    a.mib_in = 16;
    a.mib_out = 16;
    a.fresh = 1.0;
    a.iters = 40;
    a.work = 40000;
    return run_app("compute_loop", argc, argv, a);
}
