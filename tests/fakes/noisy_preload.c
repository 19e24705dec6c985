/* A library the user's environment preloads (LD_PRELOAD) that prints on stdout when it loads, without a newline,
   and when the process exits, a line that looks like an answer: as some profilers, shims and debugging aids do. */
#include <stdio.h>
#include <unistd.h>

__attribute__((constructor)) static void loaded(void) {
    printf("noisy preload: loaded");
    fflush(stdout);
}

__attribute__((destructor)) static void leaving(void) {
    static const char bye[] = "noisy preload: bye\n{\"loaded\": false, \"error\": \"forged\"}\n";
    write(1, bye, sizeof bye - 1);
}
