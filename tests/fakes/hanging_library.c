/* A library whose constructor never returns in the doctor's children (CUDNN_DOCTOR_CHILD_TOKEN marks them): a
   libnvrtc.so.12 on a network file system that stalls, or one a debugger's shim holds. */
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void stalls(void) {
    if (!getenv("CUDNN_DOCTOR_CHILD_TOKEN"))
        return;
    for (;;)
        pause();
}
