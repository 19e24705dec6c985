/* Preloaded (LD_PRELOAD), it writes the name of every variable the process's C code asks getenv or secure_getenv
   for on standard error, "getenv NAME" a line, then asks the real one: what a library reads from the environment
   as it loads (tests/test_suite_infrastructure.py: the imports of tests/jax_programs.py's forking Python). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

static void said(const char *name) {
    char line[512];
    int length = snprintf(line, sizeof line, "getenv %s\n", name ? name : "(null)");
    if (length > 0)
        write(2, line, length < (int)sizeof line ? (size_t)length : sizeof line - 1);
}

char *getenv(const char *name) {
    static char *(*real)(const char *);
    if (!real)
        real = (char *(*)(const char *))dlsym(RTLD_NEXT, "getenv");
    said(name);
    return real(name);
}

char *secure_getenv(const char *name) {
    static char *(*real)(const char *);
    if (!real)
        real = (char *(*)(const char *))dlsym(RTLD_NEXT, "secure_getenv");
    said(name);
    return real(name);
}
