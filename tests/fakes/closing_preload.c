/* A library the user's environment preloads (LD_PRELOAD) that closes stdout (CLOSE_STDOUT), stdout and stderr
   (CLOSE_BOTH) or all three standard descriptors (CLOSE_ALL) when it loads, only in the doctor's children
   (CUDNN_DOCTOR_CHILD_TOKEN marks them): as a daemonising shim or a careless profiler does. CLOSE_EVERY closes
   every descriptor it did not open, then opens /dev/null on the first numbers again, so that another file holds the
   numbers the process was given (its answer channel's among them). */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void loaded(void) {
    if (!getenv("CUDNN_DOCTOR_CHILD_TOKEN"))
        return;
#if defined(CLOSE_EVERY)
    for (int fd = 0; fd < 1024; fd++)
        close(fd);
    for (int fd = 0; fd < 12; fd++)
        open("/dev/null", O_RDWR);
#endif
#if defined(CLOSE_ALL)
    close(0);
#endif
#if defined(CLOSE_STDOUT) || defined(CLOSE_BOTH) || defined(CLOSE_ALL)
    close(1);
#endif
#if defined(CLOSE_BOTH) || defined(CLOSE_ALL)
    close(2);
#endif
}
