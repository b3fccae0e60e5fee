// A one-shot job whose host computes its input (a simulation step, a decoder): 512 MiB produced once in
// malloc'd memory, each value two dependent multiply-adds of the host's, several times slower than a memset; a
// kernel folds it into 32 MiB of results, which the host reads back; no loop.
// Built and timed by run_apps.py: `slow_producer --mem MODE` (frame_loop.h lists the modes); prints one JSON line.
#include "frame_loop.h"

int main(int argc, char **argv) {
    Args a;
    a.mem = "pageable";
    a.mib_in = 512;
    a.mib_out = 32;
    a.fresh = 1.0;
    a.iters = 1;
    a.work = 4;
    a.host_work = 2;
    return run_app("slow_producer", argc, argv, a);
}
