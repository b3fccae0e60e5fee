// A one-shot job: the host produces 1 GiB of input once in malloc'd memory, a kernel reads all of it
// and folds it into 64 MiB of results, which the host reads back; no loop.
// Built and timed by run_apps.py: `upload_once --mem MODE` (frame_loop.h lists the modes); prints one JSON line.
#include "frame_loop.h"

int main(int argc, char **argv) {
    Args a;
    a.mem = "pageable";
    a.mib_in = 1024;
    a.mib_out = 64;
    a.fresh = 1.0;
    a.iters = 1;
    a.work = 4;
    return run_app("upload_once", argc, argv, a);
}
