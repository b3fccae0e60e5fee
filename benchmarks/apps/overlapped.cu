// Already tuned: pinned frames in 8 chunks over 4 streams, each chunk's copy in, kernel and copy out
// queued at once, the host writing the next chunk meanwhile.
// Built and timed by run_apps.py: `overlapped --mem MODE` (frame_loop.h lists the modes); prints one JSON line.
#include "frame_loop.h"

int main(int argc, char **argv) {
    Args a;
    a.mem = "pinned-pipelined";
    a.mib_in = 32;
    a.mib_out = 32;
    a.fresh = 1.0;
    a.iters = 60;
    a.work = 48;
    return run_app("overlapped", argc, argv, a);
}
