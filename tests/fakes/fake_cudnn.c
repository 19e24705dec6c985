/* A stand-in for libcudnn.so.N: exports what cudnn-doctor's probe calls, with values
   chosen at compile time (-DFAKE_VERSION=91900 -DFAKE_CUDART=12040). FAKE_CRASH makes
   cudnnGetVersion crash, FAKE_HANG makes it hang, like a broken real library. FAKE_DAEMON makes its
   load-time code start a process that outlives the loader and keeps its stdout and stderr open:
   FAKE_DAEMON=1 detaches it (fork, setsid, fork: another session, parent gone), FAKE_DAEMON=2 leaves
   it in the loader's process group, FAKE_DAEMON=3 detaches it and clears its environment (execve of sleep with none,
   its argv[0] FAKE_DAEMON_NAME's value): no variable the loader's parent gave marks it. Where FAKE_CUDNN_LOG names a file, cudnnGetVersion appends to it
   "PID PPID OPEN_FDS": which process loaded it, its parent, and how many descriptors it held. */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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
#if FAKE_DAEMON == 1 || FAKE_DAEMON == 3
        setsid();
        if (fork() != 0) _exit(0);
#endif
#if FAKE_DAEMON == 3
        const char *name = getenv("FAKE_DAEMON_NAME");
        char *argv[] = {(char *)(name ? name : "fake-daemon"), "600", NULL};
        char *envp[] = {NULL};
        execve("/bin/sleep", argv, envp);
#endif
        for (int i = 0; i < 600; i++) sleep(1);  /* holds the inherited stdout and stderr */
        _exit(0);
    }
#if FAKE_DAEMON == 1 || FAKE_DAEMON == 3
    if (first > 0) waitpid(first, NULL, 0);
#endif
}
#endif

static void log_caller(void) {
    const char *path = getenv("FAKE_CUDNN_LOG");
    if (path == NULL) return;
    int open_fds = -1;  /* the listing's own descriptor is not counted */
    DIR *listing = opendir("/proc/self/fd");
    if (listing != NULL) {
        struct dirent *entry;
        while ((entry = readdir(listing)) != NULL) if (entry->d_name[0] != '.') open_fds++;
        closedir(listing);
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0) return;
    dprintf(fd, "%d %d %d\n", (int)getpid(), (int)getppid(), open_fds);
    close(fd);
}

size_t cudnnGetVersion(void) {
    log_caller();
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
