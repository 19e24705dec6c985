/* A stand-in for libcudnn.so.N: exports what cudnn-doctor's probe calls, with values
   chosen at compile time (-DFAKE_VERSION=91900 -DFAKE_CUDART=12040). FAKE_CRASH makes
   cudnnGetVersion crash, FAKE_HANG makes it hang, like a broken real library. FAKE_DAEMON makes its
   load-time code start a process that outlives the loader and keeps its stdout and stderr open:
   FAKE_DAEMON=1 detaches it (fork, setsid, fork: another session, parent gone), FAKE_DAEMON=2 leaves
   it in the loader's process group. */
#include <stddef.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>

#ifndef FAKE_VERSION
#define FAKE_VERSION 91900
#endif
#ifndef FAKE_CUDART
#define FAKE_CUDART 12040
#endif

#ifdef FAKE_DAEMON
__attribute__((constructor)) static void start_daemon(void) {
    pid_t first = fork();
    if (first == 0) {
#if FAKE_DAEMON == 1
        setsid();
        if (fork() != 0) _exit(0);
#endif
        for (int i = 0; i < 600; i++) sleep(1);  /* holds the inherited stdout and stderr */
        _exit(0);
    }
#if FAKE_DAEMON == 1
    if (first > 0) waitpid(first, NULL, 0);
#endif
}
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
