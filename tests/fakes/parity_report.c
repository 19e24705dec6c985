/* Preloaded (LD_PRELOAD), its constructor appends one JSON line to the file PARITY_REPORT names (an absolute path):
   what this process was started with, as the kernel and the loader gave it, before any code of its own ran: its
   command line, its working folder, the values of the variables PARITY_NAMES lists (comma-separated; "*": all of them), its limits
   (soft and hard, each resource), its umask and the signals it holds ignored and blocked (/proc/self/status). The
   same library in the doctor's every child and in a program started by the shell: tests/test_child_parity.py
   compares what each child would resolve with what the program does. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static char line[1 << 16];
static size_t used;

static void put(const char *text) {
    size_t length = strlen(text);
    if (used + length < sizeof line) {
        memcpy(line + used, text, length);
        used += length;
    }
}

static void put_string(const char *text) {
    char one[8];
    put("\"");
    for (const unsigned char *at = (const unsigned char *)text; *at; at++) {
        if (*at == '"' || *at == '\\') {
            one[0] = '\\'; one[1] = (char)*at; one[2] = 0;
        } else if (*at < 0x20 || *at >= 0x7f) {
            snprintf(one, sizeof one, "\\u%04x", *at);
        } else {
            one[0] = (char)*at; one[1] = 0;
        }
        put(one);
    }
    put("\"");
}

static void put_command_line(void) {
    char buffer[8192];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd < 0 ? -1 : read(fd, buffer, sizeof buffer - 1);
    if (fd >= 0)
        close(fd);
    put("[");
    if (got > 0) {
        buffer[got] = 0;
        for (ssize_t at = 0; at < got; at += (ssize_t)strlen(buffer + at) + 1) {
            if (at)
                put(",");
            put_string(buffer + at);
        }
    }
    put("]");
}

static void put_status(void) {
    char buffer[8192], *at, *end;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd < 0 ? -1 : read(fd, buffer, sizeof buffer - 1);
    if (fd >= 0)
        close(fd);
    if (got <= 0)
        return;
    buffer[got] = 0;
    for (at = buffer; at && *at; at = end ? end + 1 : NULL) {
        end = strchr(at, '\n');
        if (end)
            *end = 0;
        if (!strncmp(at, "Umask:", 6) || !strncmp(at, "SigIgn:", 7) || !strncmp(at, "SigBlk:", 7)) {
            char *value = strchr(at, ':') + 1;
            while (*value == ' ' || *value == '\t')
                value++;
            *strchr(at, ':') = 0;
            put(",");
            put_string(at);
            put(":");
            put_string(value);
        }
    }
}

__attribute__((constructor)) static void report(void) {
    const char *path = getenv("PARITY_REPORT"), *names = getenv("PARITY_NAMES");
    char here[4096], number[64], name[256];
    if (!path || path[0] != '/')
        return;
    put("{\"argv\":");
    put_command_line();
    put(",\"cwd\":");
    put_string(getcwd(here, sizeof here) ? here : "");
    put(",\"env\":{");
    if (names && !strcmp(names, "*")) {  /* every variable, NAME=VALUE as the process was given it */
        extern char **environ;
        for (char **entry = environ; entry && *entry; entry++) {
            const char *equals = strchr(*entry, '=');
            size_t length = equals ? (size_t)(equals - *entry) : 0;
            if (!length || length >= sizeof name)
                continue;
            memcpy(name, *entry, length);
            name[length] = 0;
            if (line[used - 1] != '{')
                put(",");
            put_string(name);
            put(":");
            put_string(equals + 1);
        }
        names = "";
    }
    for (const char *at = names ? names : ""; *at;) {
        size_t length = strcspn(at, ",");
        if (length && length < sizeof name) {
            memcpy(name, at, length);
            name[length] = 0;
            const char *value = getenv(name);
            if (value) {
                if (line[used - 1] != '{')
                    put(",");
                put_string(name);
                put(":");
                put_string(value);
            }
        }
        at += length + (at[length] == ',');
    }
    put("},\"limits\":{");
    for (int resource = 0; resource < RLIM_NLIMITS; resource++) {
        struct rlimit limit;
        if (getrlimit(resource, &limit))
            continue;
        snprintf(number, sizeof number, "%s\"%d\":[%lld,%lld]", resource ? "," : "", resource,
                 limit.rlim_cur == RLIM_INFINITY ? -1LL : (long long)limit.rlim_cur,
                 limit.rlim_max == RLIM_INFINITY ? -1LL : (long long)limit.rlim_max);
        put(number);
    }
    put("}");
    put_status();
    put("}\n");
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t written = write(fd, line, used);
        (void)written;
        close(fd);
    }
}
