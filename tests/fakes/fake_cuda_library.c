/* A CUDA library a framework opens by name when work first needs it (nvJitLink, cuBLASLt): its one call uses the
   C library, so the file needs libc.so.6 and a GLIBC_2.x symbol version of it, as every real one does. */
#include <stdlib.h>

int nvJitLinkVersion(unsigned int *major, unsigned int *minor) {
    const char *forced = getenv("FAKE_NVJITLINK_MAJOR");
    *major = forced ? (unsigned int)atoi(forced) : 13;
    *minor = 0;
    return 0;
}
