/* A stand-in for libcudnn.so.N: exports what cudnn-doctor's probe calls, with values
   chosen at compile time (-DFAKE_VERSION=91900 -DFAKE_CUDART=12040). FAKE_CRASH makes
   cudnnGetVersion crash, FAKE_HANG makes it hang, like a broken real library. */
#include <stddef.h>
#include <signal.h>
#include <unistd.h>

#ifndef FAKE_VERSION
#define FAKE_VERSION 91900
#endif
#ifndef FAKE_CUDART
#define FAKE_CUDART 12040
#endif

size_t cudnnGetVersion(void) {
#ifdef FAKE_CRASH
    raise(SIGSEGV);
#endif
#ifdef FAKE_HANG
    for (;;) pause();
#endif
    return FAKE_VERSION;
}

size_t cudnnGetCudartVersion(void) { return FAKE_CUDART; }

const char *cudnnGetErrorString(int status) {
    return status == 0 ? "CUDNN_STATUS_SUCCESS" : "CUDNN_STATUS_NOT_INITIALIZED";
}

int cudnnCreate(void **handle) { (void)handle; return 1001; /* no GPU: NOT_INITIALIZED */ }
