/* A CUDA library a framework opens by name when work first needs it (nvJitLink, cuBLASLt): its one call uses the
   C library, so the file needs libc.so.6 and a GLIBC_2.x symbol version of it, as every real one does. */
#include <stdlib.h>

int nvJitLinkVersion(unsigned int *major, unsigned int *minor) {
    const char *forced = getenv("FAKE_NVJITLINK_MAJOR");
    *major = forced ? (unsigned int)atoi(forced) : 13;
    *minor = 0;
    return 0;
}

/* and the calls every framework makes of it (compat/process_env.toml [[cuda_library]] nvJitLink's symbols), as the
   real one exports them */
int nvJitLinkCreate(void **handle, unsigned int count, const char **options) {
    (void)count;
    (void)options;
    *handle = 0;
    return 0;
}

int nvJitLinkComplete(void *handle) { return handle != 0; }
