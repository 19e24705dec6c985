/* A stand-in for libnvidia-ml.so.1 that the real pynvml (nvidia-ml-py) loads: one or more
   GPUs with the name, UUID, compute capability and memory chosen at compile time.
   FAKE_NVML_INIT_ERROR makes nvmlInit fail with that NVML return code (18 = driver/library
   version mismatch, 9 = driver not loaded). */
#include <string.h>
#include <stdio.h>

#ifndef FAKE_DRIVER
#define FAKE_DRIVER "580.159.04"
#endif
#ifndef FAKE_CUDA
#define FAKE_CUDA 13000
#endif
#ifndef FAKE_GPUS
#define FAKE_GPUS 1
#endif
#ifndef FAKE_GPU_NAME
#define FAKE_GPU_NAME "NVIDIA H100 80GB HBM3"
#endif
#ifndef FAKE_CC_MAJOR
#define FAKE_CC_MAJOR 9
#endif
#ifndef FAKE_CC_MINOR
#define FAKE_CC_MINOR 0
#endif
#ifndef FAKE_MEMORY
#define FAKE_MEMORY 85520809984ULL
#endif

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
static int handles[16];

static int init(void) {
#ifdef FAKE_NVML_INIT_ERROR
    return FAKE_NVML_INIT_ERROR;
#else
    return 0;
#endif
}
int nvmlInit_v2(void) { return init(); }
int nvmlInit(void) { return init(); }
int nvmlInitWithFlags(unsigned int flags) { (void)flags; return init(); }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int result) {
    switch (result) {
        case 9: return "Driver Not Loaded";
        case 18: return "Driver/library version mismatch";
        default: return "Unknown Error";
    }
}
int nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    snprintf(version, length, "%s", FAKE_DRIVER); return 0;
}
int nvmlSystemGetCudaDriverVersion(int *version) { *version = FAKE_CUDA; return 0; }
int nvmlSystemGetCudaDriverVersion_v2(int *version) { *version = FAKE_CUDA; return 0; }
int nvmlDeviceGetCount_v2(unsigned int *count) { *count = FAKE_GPUS; return 0; }
int nvmlDeviceGetCount(unsigned int *count) { *count = FAKE_GPUS; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device) {
    if (index >= FAKE_GPUS) return 2;
    *device = &handles[index]; return 0;
}
int nvmlDeviceGetHandleByIndex(unsigned int index, void **device) { return nvmlDeviceGetHandleByIndex_v2(index, device); }
static int index_of(void *device) { return (int)((int *)device - handles); }
int nvmlDeviceGetName(void *device, char *name, unsigned int length) {
    (void)device; snprintf(name, length, "%s", FAKE_GPU_NAME); return 0;
}
int nvmlDeviceGetUUID(void *device, char *uuid, unsigned int length) {
    snprintf(uuid, length, "GPU-00000000-fake-0000-0000-00000000000%d", index_of(device)); return 0;
}
int nvmlDeviceGetCudaComputeCapability(void *device, int *major, int *minor) {
    (void)device; *major = FAKE_CC_MAJOR; *minor = FAKE_CC_MINOR; return 0;
}
int nvmlDeviceGetMemoryInfo(void *device, nvmlMemory_t *memory) {
    (void)device; memory->total = FAKE_MEMORY; memory->free = FAKE_MEMORY; memory->used = 0; return 0;
}
int nvmlDeviceGetMemoryInfo_v2(void *device, nvmlMemory_v2_t *memory) {
    (void)device; memory->total = FAKE_MEMORY; memory->free = FAKE_MEMORY; memory->used = 0; memory->reserved = 0;
    return 0;
}
