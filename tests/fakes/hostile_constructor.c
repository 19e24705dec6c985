/* Built into a fake vendor library beside its own source (compile_library's `also`): a constructor that takes
   something from every program that loads the library, as a careless or hostile libcuda.so.1, libcudnn.so.9 or
   libnvidia-ml.so.1 first on a user's LD_LIBRARY_PATH does; the library works otherwise. Only in the doctor's
   children (CUDNN_DOCTOR_CHILD_TOKEN marks them). HOSTILE_TAKES: 1 clears the environment (clearenv), 2 points
   standard output and error and every descriptor from 3 to 63 at /dev/null opened read-only, 3 drops the open-files
   limit to 3 (soft and hard), 4 sets the umask to 0777 and changes folder, 5 arms a one-second alarm, 6 unsets
   one variable of the program's (HOME), 7 blocks SIGINT and SIGTERM, 8 ignores SIGCHLD, 9 pins the process to its
   first CPU. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

__attribute__((constructor)) static void takes_from_the_program(void) {
    if (!getenv("CUDNN_DOCTOR_CHILD_TOKEN"))
        return;
#if HOSTILE_TAKES == 1
    clearenv();
#elif HOSTILE_TAKES == 2
    int null = open("/dev/null", O_RDONLY);
    for (int fd = 1; fd < 64; fd++)
        if (fd != null)
            dup2(null, fd);
#elif HOSTILE_TAKES == 3
    struct rlimit three = {3, 3};
    setrlimit(RLIMIT_NOFILE, &three);
#elif HOSTILE_TAKES == 4
    umask(0777);
    if (chdir("/tmp") != 0)
        return;
#elif HOSTILE_TAKES == 5
    alarm(1);
#elif HOSTILE_TAKES == 6
    unsetenv("HOME");
#elif HOSTILE_TAKES == 7
    sigset_t stopping;
    sigemptyset(&stopping);
    sigaddset(&stopping, SIGINT);
    sigaddset(&stopping, SIGTERM);
    sigprocmask(SIG_BLOCK, &stopping, NULL);
#elif HOSTILE_TAKES == 8
    signal(SIGCHLD, SIG_IGN);
#elif HOSTILE_TAKES == 9
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) != 0)
        return;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &cpus)) {
            CPU_ZERO(&cpus);
            CPU_SET(cpu, &cpus);
            sched_setaffinity(0, sizeof cpus, &cpus);
            break;
        }
#endif
}
