/* A stand-in for libcudart.so.N good enough for cudnn-doctor's bench: "device memory" is
   host memory, events read the host clock. FAKE_DEVICES=0 reports no GPU (cudaErrorNoDevice),
   FAKE_OLD_DRIVER reports cudaErrorInsufficientDriver, FAKE_FREE_MIB sets the free memory. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef FAKE_DEVICES
#define FAKE_DEVICES 1
#endif
#ifndef FAKE_RUNTIME
#define FAKE_RUNTIME 13000
#endif
#ifndef FAKE_FREE_MIB
#define FAKE_FREE_MIB 80000
#endif

int cudaRuntimeGetVersion(int *v) { *v = FAKE_RUNTIME; return 0; }
int cudaDriverGetVersion(int *v) { *v = 13000; return 0; }
int cudaGetDeviceCount(int *count) {
#ifdef FAKE_OLD_DRIVER
    *count = 0; return 35;
#endif
    *count = FAKE_DEVICES;
    return FAKE_DEVICES ? 0 : 100;
}
int cudaSetDevice(int d) { return d < FAKE_DEVICES ? 0 : 101; }
int cudaDeviceGetAttribute(int *value, int attr, int device) {
    (void)device;
    switch (attr) {
    case 13: *value = 1980000; return 0;
    case 16: *value = 132; return 0;
    case 75: *value = 9; return 0;
    case 76: *value = 0; return 0;
    default: *value = 0; return 1;
    }
}
int cudaGetDeviceProperties_v2(void *prop, int device) {
    (void)device;
    strcpy((char *)prop, "NVIDIA H100 80GB HBM3");
    return 0;
}
int cudaMemGetInfo(size_t *free_bytes, size_t *total) {
    *free_bytes = (size_t)FAKE_FREE_MIB << 20; *total = (size_t)81559 << 20; return 0;
}
int cudaMalloc(void **p, size_t size) {
    if (size > ((size_t)FAKE_FREE_MIB << 20)) return 2;
    *p = malloc(size); return *p ? 0 : 2;
}
int cudaFree(void *p) { free(p); return 0; }
int cudaMemcpy(void *dst, const void *src, size_t n, int kind) { (void)kind; memcpy(dst, src, n); return 0; }
int cudaMemset(void *p, int value, size_t n) { memset(p, value, n); return 0; }
int cudaDeviceSynchronize(void) { return 0; }
/* peers (bench --p2p): FAKE_NO_PEER makes cudaDeviceCanAccessPeer answer 0; copies run at once on the host */
int cudaDeviceCanAccessPeer(int *can, int device, int peer) {
    (void)device; (void)peer;
#ifdef FAKE_NO_PEER
    *can = 0;
#else
    *can = 1;
#endif
    return 0;
}
int cudaDeviceEnablePeerAccess(int peer, unsigned flags) { (void)peer; (void)flags; return 0; }
int cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device, size_t n, void *stream) {
    (void)dst_device; (void)src_device; (void)stream; memcpy(dst, src, n); return 0;
}
int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream) {
    (void)kind; (void)stream; memcpy(dst, src, n); return 0;
}
int cudaGetLastError(void) { return 0; }
/* streams and graphs: work runs at once on the host, so a "graph" replays nothing */
int cudaStreamCreate(void **s) { *s = malloc(1); return 0; }
int cudaStreamDestroy(void *s) { free(s); return 0; }
int cudaStreamSynchronize(void *s) { (void)s; return 0; }
int cudaStreamBeginCapture(void *s, int mode) { (void)s; (void)mode; return 0; }
int cudaStreamEndCapture(void *s, void **graph) { (void)s; *graph = malloc(1); return 0; }
int cudaGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
    (void)graph; (void)flags; *exec = malloc(1); return 0;
}
int cudaGraphLaunch(void *exec, void *s) { (void)exec; (void)s; return 0; }
int cudaGraphDestroy(void *g) { free(g); return 0; }
int cudaGraphExecDestroy(void *e) { free(e); return 0; }
int cudaEventCreate(void **event) { *event = calloc(1, sizeof(double)); return 0; }
int cudaEventDestroy(void *event) { free(event); return 0; }
int cudaEventRecord(void *event, void *stream) {
    struct timespec t; (void)stream;
    clock_gettime(CLOCK_MONOTONIC, &t);
    *(double *)event = t.tv_sec * 1e3 + t.tv_nsec / 1e6;
    return 0;
}
int cudaEventSynchronize(void *event) { (void)event; return 0; }
int cudaEventElapsedTime(float *ms, void *start, void *end) {
    *ms = (float)(*(double *)end - *(double *)start); return 0;
}
const char *cudaGetErrorName(int e) {
    switch (e) {
    case 0: return "cudaSuccess";
    case 2: return "cudaErrorMemoryAllocation";
    case 35: return "cudaErrorInsufficientDriver";
    case 100: return "cudaErrorNoDevice";
    default: return "cudaErrorUnknown";
    }
}
const char *cudaGetErrorString(int e) {
    switch (e) {
    case 0: return "no error";
    case 2: return "out of memory";
    case 35: return "CUDA driver version is insufficient for CUDA runtime version";
    case 100: return "no CUDA-capable device is detected";
    default: return "unknown error";
    }
}
