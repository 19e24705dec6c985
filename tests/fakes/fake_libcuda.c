/* A stand-in for libcuda.so.1 that answers as the real driver was seen to answer (benchmarks/gpu_scenarios.py on
   an H100 with driver 580): cuDriverGetVersion answers FAKE_DRIVER_CUDA; cuInit reads CUDA_VISIBLE_DEVICES as the
   driver does (unset: every GPU; empty, a negative or unknown index, a GPU- UUID prefix of no GPU or of several,
   a MIG- UUID, an entry of the other kind than the first (a UUID after indices, an index after UUIDs: seen on 2 x
   H100, `1,GPU-<GPU 0>` leaves GPU 1 alone): it stops there; what it kept first is visible; none kept:
   CUDA_ERROR_NO_DEVICE; the same GPU twice: CUDA_ERROR_INVALID_DEVICE). FAKE_CUDA_DEVICES GPUs (0: CUDA_ERROR_NO_DEVICE) with the UUIDs the fake NVML gives
   (GPU-00000000-fa4e-0000-0000-00000000000N). FAKE_CUDA_STATUS makes cuInit fail with that status (34: the toolkit's
   link stub, whose cuDriverGetVersion fails too; 803: a user-space driver of another release than the kernel
   module). FAKE_CUDA_MISBEHAVE makes cuInit crash (1: SIGSEGV), end the process (2: exit(0)) or never return (3), as
   a driver whose GPU fell off the bus, or a broken user-space driver in a container, does; or close every descriptor
   from 3 up and then work (4): the program's own files, pipes and sockets are gone. A primary context is made
   (cuDevicePrimaryCtxRetain) as the real one makes it, unless CUDA_FAKE_CONTEXT_LIMIT (a variable of this driver's
   own that no data row knows, as the real driver reads variables nobody wrote down) is above 100: then
   CUDA_ERROR_INVALID_VALUE, as the real driver 580 was seen to refuse every context with
   CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=250 (benchmarks/held_out/round17, s17-cuda-l2-*); and
   CUDA_ERROR_OPERATING_SYSTEM where CUDA_COREDUMP_PIPE names a file in a folder that does not exist, whether or not
   CUDA_ENABLE_USER_TRIGGERED_COREDUMP is on (as driver 580 on an H100 refused the context with both set and, the
   round after, went on refusing it with the switch alone left out: benchmarks/held_out/round18,
   s18-user-coredump-pipe-missing). */
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#ifndef FAKE_DRIVER_CUDA
#define FAKE_DRIVER_CUDA 12040
#endif
#ifndef FAKE_CUDA_DEVICES
#define FAKE_CUDA_DEVICES 0
#endif
#ifndef FAKE_CUDA_NAME
#define FAKE_CUDA_NAME "NVIDIA GPU"
#endif
#ifndef FAKE_CC_MAJOR
#define FAKE_CC_MAJOR 8
#endif
#ifndef FAKE_CC_MINOR
#define FAKE_CC_MINOR 9
#endif
#ifndef FAKE_CUDA_STATUS
#define FAKE_CUDA_STATUS 0
#endif
#ifndef FAKE_CUDA_REVERSED
#define FAKE_CUDA_REVERSED 0
#endif

static int visible[64];
static int visible_count = -1;
/* FAKE_CUDA_UUID_EXACT: a GPU- entry is compared with the UUID in its letter case, as written (the real driver's
   behaviour is asked on the GPU by benchmarks/uuid_case_probe.py); without it, in any case */
#ifdef FAKE_CUDA_UUID_EXACT
#define UUID_COMPARE strncmp
#else
#define UUID_COMPARE strncasecmp
#endif

static void uuid_text(int device, char *out, size_t length) {
    snprintf(out, length, "GPU-00000000-fa4e-0000-0000-%012x", device);
}

static int parse_visible(void) {
    const char *value = getenv("CUDA_VISIBLE_DEVICES");
    int i;
    visible_count = 0;
    if (value == NULL) {  /* FAKE_CUDA_REVERSED: the fastest GPU has the highest bus id (FASTEST_FIRST's order) */
        const char *order = getenv("CUDA_DEVICE_ORDER");
        int reversed = FAKE_CUDA_REVERSED && !(order && strcmp(order, "PCI_BUS_ID") == 0);
        for (i = 0; i < FAKE_CUDA_DEVICES && i < 64; i++)
            visible[visible_count++] = reversed ? FAKE_CUDA_DEVICES - 1 - i : i;
        return 0;
    }
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", value);
    char *entry = strtok(copy, ",");
    int kind = 0; /* 1: indices, 2: UUIDs; the first entry decides, another kind stops the list */
    while (entry != NULL && visible_count < 64) {
        while (isspace((unsigned char)*entry)) entry++;
        int device = -1;
        int this_kind = isdigit((unsigned char)entry[0]) ? 1 : 2;
        if (kind != 0 && this_kind != kind) break;
        kind = this_kind;
        if (isdigit((unsigned char)entry[0])) {
            char *end;
            long index = strtol(entry, &end, 10);
            if (*end == '\0' && index < FAKE_CUDA_DEVICES) device = (int)index;
        } else if (UUID_COMPARE(entry, "GPU-", 4) == 0 && strlen(entry) > 4) {
            int matches = 0;
            for (i = 0; i < FAKE_CUDA_DEVICES; i++) {
                char uuid[64];
                uuid_text(i, uuid, sizeof uuid);
                if (UUID_COMPARE(uuid, entry, strlen(entry)) == 0) { matches++; device = i; }
            }
            if (matches != 1) device = -1;
        }
        if (device < 0) break; /* CUDA stops at the first entry it cannot use */
        for (i = 0; i < visible_count; i++)
            if (visible[i] == device) return 101; /* CUDA_ERROR_INVALID_DEVICE */
        visible[visible_count++] = device;
        entry = strtok(NULL, ",");
    }
    return 0;
}

int cuDriverGetVersion(int *version) {
    if (FAKE_CUDA_STATUS == 34) return 34;
    *version = FAKE_DRIVER_CUDA; return 0;
}
#ifndef FAKE_CUDA_MISBEHAVE
#define FAKE_CUDA_MISBEHAVE 0
#endif
#include <signal.h>
#include <unistd.h>
/* FAKE_CUDA_FIXED_RESERVE: cuInit needs the virtual address range the real driver keeps at a fixed place for its
   unified address space, 0x200000000-0xd00000000 (google/sanitizers#629: 'the CUDA allocations are very much fixed:
   always 0x200000000-0xd00000000'), and answers CUDA_ERROR_OUT_OF_MEMORY (2) where a mapping nobody may touch
   (PROT_NONE) already holds part of it: AddressSanitizer's protected shadow gap [0x8fff7000, 0x2008fff6fff] does
   (the real driver was reported to answer 2 there: nvptx-tools' README-development, facebook/openzl#903). With
   ASAN_OPTIONS=protect_shadow_gap=0, ASan leaves the gap unprotected (it maps the gap's own shadow there, read-write)
   and cuInit was reported to work. What holds the range is read from this process's own /proc/self/maps. */
static int fixed_range_taken(void) {
#ifdef FAKE_CUDA_FIXED_RESERVE
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) return 0;
    char line[512];
    int taken = 0;
    while (!taken && fgets(line, sizeof line, maps)) {
        unsigned long begin, end;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &begin, &end, perms) != 3) continue;
        taken = begin < 0xd00000000UL && end > 0x200000000UL && strncmp(perms, "---", 3) == 0;
    }
    fclose(maps);
    return taken;
#else
    return 0;
#endif
}
/* FAKE_CUDA_OPENS: cuInit opens that many descriptors and keeps them (the real driver opens /dev/nvidiactl,
   /dev/nvidia-uvm and each GPU's /dev/nvidiaN, and more), answering CUDA_ERROR_UNKNOWN (999) where one cannot be
   opened: the real one did with 8 descriptors free under its open-files limit (an H100, driver 580). */
#ifndef FAKE_CUDA_OPENS
#define FAKE_CUDA_OPENS 0
#endif
#include <fcntl.h>
static int open_device_files(void) {
    for (int i = 0; i < FAKE_CUDA_OPENS; i++)
        if (open("/dev/null", O_RDONLY | O_CLOEXEC) < 0) return 999;
    return 0;
}
int cuInit(unsigned int flags) {
    (void)flags;
    if (open_device_files()) return 999;
    if (FAKE_CUDA_MISBEHAVE == 1) raise(SIGSEGV);
    if (FAKE_CUDA_MISBEHAVE == 2) exit(0);
    if (FAKE_CUDA_MISBEHAVE == 3) for (;;) pause();
    if (FAKE_CUDA_MISBEHAVE == 4) for (int fd = 3; fd < 1024; fd++) close(fd);
    if (FAKE_CUDA_STATUS) return FAKE_CUDA_STATUS;
    if (fixed_range_taken()) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    int status = parse_visible();
    if (status) return status;
    return visible_count > 0 ? 0 : 100; /* CUDA_ERROR_NO_DEVICE */
}
int cuGetErrorName(int status, const char **name) {
    switch (status) {
    case 0: *name = "CUDA_SUCCESS"; return 0;
    case 1: *name = "CUDA_ERROR_INVALID_VALUE"; return 0;
    case 2: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 101: *name = "CUDA_ERROR_INVALID_DEVICE"; return 0;
    case 802: *name = "CUDA_ERROR_SYSTEM_NOT_READY"; return 0;
    case 304: *name = "CUDA_ERROR_OPERATING_SYSTEM"; return 0;
    case 803: *name = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"; return 0;
    default: return 1; /* the stub names nothing: the real one answers 34 here too */
    }
}
int cuGetErrorString(int status, const char **text) { return cuGetErrorName(status, text); }
int cuDeviceGetCount(int *count) { *count = visible_count < 0 ? 0 : visible_count; return 0; }
int cuDeviceGet(int *device, int ordinal) {
    if (ordinal < 0 || ordinal >= visible_count) return 101;
    *device = visible[ordinal]; return 0;
}
int cuDeviceGetName(char *name, int length, int device) { (void)device; snprintf(name, length, "%s", FAKE_CUDA_NAME); return 0; }
int cuDeviceGetUuid_v2(unsigned char *uuid, int device) {
    memset(uuid, 0, 16); uuid[4] = 0xfa; uuid[5] = 0x4e; uuid[15] = (unsigned char)device; return 0;
}
/* FAKE_CUDA_NO_PEER: no GPU may access another's memory (an IOMMU or a chipset in the way) */
int cuDeviceCanAccessPeer(int *can, int device, int peer) {
    if (device < 0 || peer < 0 || device >= visible_count || peer >= visible_count) return 101;
#ifdef FAKE_CUDA_NO_PEER
    *can = 0;
#else
    *can = device != peer;
#endif
    return 0;
}
int cuDeviceGetPCIBusId(char *bus, int length, int device) { snprintf(bus, length, "0000:%02X:00.0", device + 1); return 0; }
int cuDeviceGetAttribute(int *value, int attribute, int device) {
    (void)device;
    if (attribute == 75) { *value = FAKE_CC_MAJOR; return 0; }
    if (attribute == 76) { *value = FAKE_CC_MINOR; return 0; }
    return 1;
}
static int contexts;
int cuDevicePrimaryCtxRetain(void **context, int device) {
    const char *limit = getenv("CUDA_FAKE_CONTEXT_LIMIT");
    if (device < 0 || device >= FAKE_CUDA_DEVICES) return 101;
    if (limit && atoi(limit) > 100) return 1; /* CUDA_ERROR_INVALID_VALUE */
    const char *pipe = getenv("CUDA_COREDUMP_PIPE");
    if (pipe && strchr(pipe, '/')) {
        char folder[4096];
        struct stat seen;
        snprintf(folder, sizeof folder, "%s", pipe);
        *strrchr(folder, '/') = 0;
        if (folder[0] && stat(folder, &seen) != 0) return 304; /* CUDA_ERROR_OPERATING_SYSTEM */
    }
#ifdef FAKE_CONTEXT_STATUS
    return FAKE_CONTEXT_STATUS; /* a context refused whatever the environment (2: a GPU whose memory is full) */
#endif
    contexts++; *context = (void *)&contexts; return 0;
}
int cuCtxSetCurrent(void *context) { return context == (void *)&contexts || !context ? 0 : 201; }
int cuMemAlloc_v2(unsigned long long *pointer, size_t size) { *pointer = 0x10000; return size ? 0 : 1; }
int cuMemFree_v2(unsigned long long pointer) { return pointer ? 0 : 1; }
int cuCtxSynchronize(void) { return contexts ? 0 : 201; /* CUDA_ERROR_INVALID_CONTEXT */ }
int cuDevicePrimaryCtxRelease_v2(int device) { (void)device; if (contexts) contexts--; return 0; }
