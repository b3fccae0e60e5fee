// A lookup loop over a read-only table: the host fills 512 MiB of malloc'd memory once, copies it in,
// and each of 30 steps a kernel reads all of it into a 4 MiB result that is copied back and read.
// Built and timed by run_apps.py: `table_loop --mem MODE` (frame_loop.h lists the modes); prints one JSON line.
#include "frame_loop.h"

int main(int argc, char **argv) {
    Args a;
    a.mem = "pageable";
    a.mib_in = 512;
    a.mib_out = 4;
    a.fresh = 0.0;
    a.iters = 30;
    a.work = 2;
    return run_app("table_loop", argc, argv, a);
}
