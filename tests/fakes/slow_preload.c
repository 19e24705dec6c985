/* A library preloaded into every program (LD_PRELOAD) whose constructor makes each process start slowly, as glibc's
   memory profiler (libmemusage.so with MEMUSAGE_TRACE_MMAP=1) or a tracer made every process crawl on an H100 in
   round eighteen's published set: SLOW_MS milliseconds of sleep before the program's first line. Only in the
   doctor's children (CUDNN_DOCTOR_CHILD_TOKEN marks them), so the test's own processes keep their speed. */
#include <stdlib.h>
#include <time.h>

__attribute__((constructor)) static void start_slowly(void) {
    if (!getenv("CUDNN_DOCTOR_CHILD_TOKEN"))
        return;
    struct timespec pause = {SLOW_MS / 1000, (SLOW_MS % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}
