/* A stand-in for libnvidia-ml.so.1 that the real pynvml (nvidia-ml-py) loads: one or more
   GPUs with the name, UUID, compute capability and memory chosen at compile time.
   FAKE_NVML_INIT_ERROR makes nvmlInit fail with that NVML return code (18 = driver/library
   version mismatch, 9 = driver not loaded). FAKE_NVML_PID_FILE (a path) has nvmlInit append the
   process's pid to that file; FAKE_NVML_INIT_SLEEP_MS makes nvmlInit take that long, as a driver that
   is slow to open does. */
#include <signal.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

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

/* FAKE_NVML_STUB: the CUDA toolkit's link stub (lib64/stubs/libnvidia-ml.so), as seen on CUDA 13.0: nvmlInit
   answers 9 (Driver Not Loaded) and the library carries NVIDIA's notice that nvidia-smi prints with it. */
#ifdef FAKE_NVML_STUB
__attribute__((used)) const char fake_stub_notice[] =
    "libnvidia-ml.so in GDK package is a stub library that is attached only for build purposes";
#define FAKE_NVML_INIT_ERROR 9
#endif

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
static int handles[16];

static int init(void) {
#ifdef FAKE_NVML_PID_FILE
    FILE *pids = fopen(FAKE_NVML_PID_FILE, "a");
    if (pids) { fprintf(pids, "%d\n", (int)getpid()); fclose(pids); }
#endif
#ifdef FAKE_NVML_INIT_SLEEP_MS
    struct timespec pause = {FAKE_NVML_INIT_SLEEP_MS / 1000, (FAKE_NVML_INIT_SLEEP_MS % 1000) * 1000000L};
    nanosleep(&pause, NULL);
#endif
#ifdef FAKE_NVML_INIT_ERROR
    return FAKE_NVML_INIT_ERROR;
#else
    return 0;
#endif
}
#ifdef FAKE_NVML_V2_CRASHES_ON_LOOKUP
/* nvml.h maps nvmlInit to nvmlInit_v2 for every C program: a symbol whose lookup itself ends the program (an IFUNC
   whose resolver crashes; a symbol table that lies does the same in ld.so), while nvmlInitWithFlags, which
   pynvml calls, answers as usual */
static int init_v2(void) { return init(); }
static void *resolve_init_v2(void) { raise(SIGSEGV); return (void *)init_v2; }
int nvmlInit_v2(void) __attribute__((ifunc("resolve_init_v2")));
#else
int nvmlInit_v2(void) { return init(); }
#endif
int nvmlInit(void) { return init(); }
int nvmlInitWithFlags(unsigned int flags) { (void)flags; return init(); }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int result) {
    switch (result) {
        case 3: return "Not Supported";
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
/* FAKE_GPU1_NAME: GPU 1 is of another kind (a machine with an H100 and an L4) */
int nvmlDeviceGetName(void *device, char *name, unsigned int length) {
#ifdef FAKE_GPU1_NAME
    if (index_of(device) == 1) { snprintf(name, length, "%s", FAKE_GPU1_NAME); return 0; }
#endif
    (void)device; snprintf(name, length, "%s", FAKE_GPU_NAME); return 0;
}
int nvmlDeviceGetUUID(void *device, char *uuid, unsigned int length) {
    snprintf(uuid, length, "GPU-00000000-fa4e-0000-0000-00000000000%d", index_of(device)); return 0;
}
int nvmlDeviceGetCudaComputeCapability(void *device, int *major, int *minor) {
    (void)device; *major = FAKE_CC_MAJOR; *minor = FAKE_CC_MINOR; return 0;
}
/* FAKE_MEMORY_USED: bytes in use on GPU FAKE_SICK_GPU (other processes' memory, FAKE_PROCS of them) */
#ifndef FAKE_MEMORY_USED
#define FAKE_MEMORY_USED 0ULL
#endif
#ifndef FAKE_SICK_GPU
#define FAKE_SICK_GPU 0
#endif
int nvmlDeviceGetMemoryInfo(void *device, nvmlMemory_t *memory) {
    unsigned long long used = index_of(device) == FAKE_SICK_GPU ? FAKE_MEMORY_USED : 0;
    memory->total = FAKE_MEMORY; memory->free = FAKE_MEMORY - used; memory->used = used; return 0;
}
int nvmlDeviceGetMemoryInfo_v2(void *device, nvmlMemory_v2_t *memory) {
    (void)device; memory->total = FAKE_MEMORY; memory->free = FAKE_MEMORY; memory->used = 0; memory->reserved = 0;
    return 0;
}

/* Health readings. The values chosen at compile time apply to GPU FAKE_SICK_GPU only (default 0);
   every other GPU reads healthy. FAKE_NOT_SUPPORTED is a bitmask of readings that answer
   NVML_ERROR_NOT_SUPPORTED (3), as consumer GPUs and older drivers do:
   1 ecc, 2 retired pages, 4 remapped rows, 8 clock reasons, 16 pcie, 32 persistence, 64 mig,
   128 compute mode, 256 processes, 512 temperature. */
#ifndef FAKE_SICK_GPU
#define FAKE_SICK_GPU 0
#endif
#ifndef FAKE_NOT_SUPPORTED
#define FAKE_NOT_SUPPORTED 0
#endif
#ifndef FAKE_ECC
#define FAKE_ECC 1
#endif
#ifndef FAKE_ECC_VOLATILE
#define FAKE_ECC_VOLATILE 0
#endif
#ifndef FAKE_ECC_AGGREGATE
#define FAKE_ECC_AGGREGATE 0
#endif
#ifndef FAKE_RETIRED_PENDING
#define FAKE_RETIRED_PENDING 0
#endif
#ifndef FAKE_REMAP_PENDING
#define FAKE_REMAP_PENDING 0
#endif
#ifndef FAKE_REMAP_FAILED
#define FAKE_REMAP_FAILED 0
#endif
#ifndef FAKE_THROTTLE
#define FAKE_THROTTLE 0x1ULL /* idle */
#endif
#ifndef FAKE_PCIE_GEN
#define FAKE_PCIE_GEN 5
#endif
#ifndef FAKE_PCIE_GEN_MAX
#define FAKE_PCIE_GEN_MAX 5
#endif
#ifndef FAKE_PCIE_WIDTH
#define FAKE_PCIE_WIDTH 16
#endif
#ifndef FAKE_PCIE_WIDTH_MAX
#define FAKE_PCIE_WIDTH_MAX 16
#endif
#ifndef FAKE_PERSISTENCE
#define FAKE_PERSISTENCE 1
#endif
#ifndef FAKE_MIG
#define FAKE_MIG 0
#endif
#ifndef FAKE_MIG_PENDING
#define FAKE_MIG_PENDING 0
#endif
#ifndef FAKE_COMPUTE_MODE
#define FAKE_COMPUTE_MODE 0
#endif
#ifndef FAKE_PROCS
#define FAKE_PROCS 0
#endif
#ifndef FAKE_TEMP
#define FAKE_TEMP 35
#endif
#ifndef FAKE_TEMP_SLOWDOWN
#define FAKE_TEMP_SLOWDOWN 87
#endif
#define SICK(device) (index_of(device) == FAKE_SICK_GPU)
#define UNSUPPORTED(bit) (FAKE_NOT_SUPPORTED & (bit))
#define PICK(device, sick, healthy) (SICK(device) ? (sick) : (healthy))

int nvmlDeviceGetEccMode(void *device, int *current, int *pending) {
    if (UNSUPPORTED(1)) return 3;
    *current = *pending = PICK(device, FAKE_ECC, 1); return 0;
}
int nvmlDeviceGetTotalEccErrors(void *device, int type, int counter, unsigned long long *count) {
    if (UNSUPPORTED(1)) return 3;
    if (type != 1) { *count = 0; return 0; }
    *count = counter == 0 ? PICK(device, FAKE_ECC_VOLATILE, 0) : PICK(device, FAKE_ECC_AGGREGATE, 0); return 0;
}
int nvmlDeviceGetRetiredPagesPendingStatus(void *device, int *pending) {
    if (UNSUPPORTED(2)) return 3;
    *pending = PICK(device, FAKE_RETIRED_PENDING, 0); return 0;
}
int nvmlDeviceGetRemappedRows(void *device, unsigned *corrected, unsigned *uncorrected, unsigned *pending,
                              unsigned *failed) {
    if (UNSUPPORTED(4)) return 3;
    *corrected = 0; *uncorrected = PICK(device, FAKE_REMAP_PENDING, 0);
    *pending = PICK(device, FAKE_REMAP_PENDING, 0); *failed = PICK(device, FAKE_REMAP_FAILED, 0); return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void *device, unsigned long long *reasons) {
    if (UNSUPPORTED(8)) return 3;
    *reasons = PICK(device, FAKE_THROTTLE, 0x1ULL); return 0;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(void *device, unsigned long long *reasons) {
    return nvmlDeviceGetCurrentClocksEventReasons(device, reasons);
}
int nvmlDeviceGetCurrPcieLinkGeneration(void *device, unsigned *value) {
    if (UNSUPPORTED(16)) return 3; *value = PICK(device, FAKE_PCIE_GEN, 5); return 0;
}
int nvmlDeviceGetMaxPcieLinkGeneration(void *device, unsigned *value) {
    if (UNSUPPORTED(16)) return 3; *value = PICK(device, FAKE_PCIE_GEN_MAX, 5); return 0;
}
int nvmlDeviceGetCurrPcieLinkWidth(void *device, unsigned *value) {
    if (UNSUPPORTED(16)) return 3; *value = PICK(device, FAKE_PCIE_WIDTH, 16); return 0;
}
int nvmlDeviceGetMaxPcieLinkWidth(void *device, unsigned *value) {
    if (UNSUPPORTED(16)) return 3; *value = PICK(device, FAKE_PCIE_WIDTH_MAX, 16); return 0;
}
int nvmlDeviceGetPersistenceMode(void *device, int *mode) {
    if (UNSUPPORTED(32)) return 3; *mode = PICK(device, FAKE_PERSISTENCE, 1); return 0;
}
int nvmlDeviceGetMigMode(void *device, unsigned *current, unsigned *pending) {
    if (UNSUPPORTED(64)) return 3;
    *current = PICK(device, FAKE_MIG, 0); *pending = PICK(device, FAKE_MIG_PENDING, 0); return 0;
}
int nvmlDeviceGetComputeMode(void *device, int *mode) {
    if (UNSUPPORTED(128)) return 3; *mode = PICK(device, FAKE_COMPUTE_MODE, 0); return 0;
}
typedef struct { unsigned pid; unsigned long long used; unsigned gi, ci; } nvmlProcessInfo_t;
int nvmlDeviceGetComputeRunningProcesses_v3(void *device, unsigned *count, nvmlProcessInfo_t *infos) {
    unsigned n = PICK(device, FAKE_PROCS, 0), i;
    if (UNSUPPORTED(256)) return 3;
    if (n == 0) { *count = 0; return 0; }
    if (infos == NULL || *count < n) { *count = n; return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */ }
    for (i = 0; i < n; i++) {
        infos[i].pid = 4242 + i; infos[i].used = FAKE_MEMORY_USED ? FAKE_MEMORY_USED / n : 1024ULL * 1024 * 1024;
        infos[i].gi = infos[i].ci = 0;
    }
    *count = n; return 0;
}
/* FAKE_UTIL: the GPU's utilisation in percent (another process's work, before the bench starts its own) */
#ifndef FAKE_UTIL
#define FAKE_UTIL 0
#endif
typedef struct { unsigned gpu, memory; } nvmlUtilization_t;
int nvmlDeviceGetUtilizationRates(void *device, nvmlUtilization_t *rates) {
    if (UNSUPPORTED(1024)) return 3;
    rates->gpu = PICK(device, FAKE_UTIL, 0); rates->memory = rates->gpu / 2; return 0;
}
int nvmlDeviceGetTemperature(void *device, int sensor, unsigned *value) {
    (void)sensor; if (UNSUPPORTED(512)) return 3; *value = PICK(device, FAKE_TEMP, 35); return 0;
}
int nvmlDeviceGetTemperatureThreshold(void *device, int kind, unsigned *value) {
    (void)device; (void)kind; if (UNSUPPORTED(512)) return 3; *value = FAKE_TEMP_SLOWDOWN; return 0;
}
#ifndef FAKE_SM_MHZ
#define FAKE_SM_MHZ 1980
#endif
int nvmlDeviceGetClockInfo(void *device, int type, unsigned *mhz) {
    (void)type; *mhz = PICK(device, FAKE_SM_MHZ, 1980); return 0;
}
int nvmlDeviceGetMaxClockInfo(void *device, int type, unsigned *mhz) { (void)device; (void)type; *mhz = 1980; return 0; }
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **device) { (void)bus; *device = &handles[0]; return 0; }

/* Topology (issue 42). FAKE_NVLINKS: NVLinks per GPU (0: the GPU has none, each answers NOT_SUPPORTED);
   FAKE_NVLINKS_DOWN of them are inactive on GPU FAKE_SICK_GPU (on every GPU with FAKE_NVLINKS_DOWN_ALL); FAKE_NVLINK_VERSION: what nvmlDeviceGetNvLinkVersion
   answers. FAKE_NVSWITCH: every link ends at an NVSwitch (HGX, DGX), else GPU pairs (0-1, 2-3, ...) are linked to
   each other directly (an NVLink bridge). FAKE_ANCESTOR: nvmlDeviceGetTopologyCommonAncestor of GPUs on one NUMA
   node (those on different nodes answer SYSTEM); of more than two GPUs, 0..n/2-1 are on NUMA node 0, the rest on
   node 1.
   FAKE_P2P: nvmlDeviceGetP2PStatus for reads; FAKE_FABRIC_STATE / FAKE_FABRIC_STATUS: the GPU's fabric state (0: the
   call answers NOT_SUPPORTED, as on a GPU outside an NVSwitch system). FAKE_PCI: the GPUs answer
   nvmlDeviceGetPciInfo with bus ids 0000000N:1N:00.0. */
#ifndef FAKE_NVLINKS
#define FAKE_NVLINKS 0
#endif
#ifndef FAKE_NVLINKS_DOWN
#define FAKE_NVLINKS_DOWN 0
#endif
#ifndef FAKE_NVLINKS_DOWN_ALL
#define FAKE_NVLINKS_DOWN_ALL 0
#endif
#ifndef FAKE_NVLINK_VERSION
#define FAKE_NVLINK_VERSION 4
#endif
#ifndef FAKE_ANCESTOR
#define FAKE_ANCESTOR 20
#endif
#ifndef FAKE_P2P
#define FAKE_P2P 0
#endif
#ifndef FAKE_FABRIC_STATE
#define FAKE_FABRIC_STATE 0
#endif
#ifndef FAKE_FABRIC_STATUS
#define FAKE_FABRIC_STATUS 0
#endif
typedef struct {
    char busIdLegacy[16]; unsigned domain, bus, device, pciDeviceId, pciSubSystemId; char busId[32];
} nvmlPciInfo_t;
static void bus_id(int index, nvmlPciInfo_t *pci) {
    memset(pci, 0, sizeof *pci);
    pci->domain = 0; pci->bus = 0x10 + index; pci->device = 0;
    snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", 0x10 + index);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", 0x10 + index);
}
#ifdef FAKE_PCI
int nvmlDeviceGetPciInfo_v3(void *device, nvmlPciInfo_t *pci) { bus_id(index_of(device), pci); return 0; }
int nvmlDeviceGetPciInfo_v2(void *device, nvmlPciInfo_t *pci) { bus_id(index_of(device), pci); return 0; }
#endif
static int numa_of(int index) { return FAKE_GPUS > 2 && index >= FAKE_GPUS / 2 ? 1 : 0; }
int nvmlDeviceGetNumaNodeId(void *device, unsigned *node) { *node = numa_of(index_of(device)); return 0; }
int nvmlDeviceGetCpuAffinity(void *device, unsigned size, unsigned long *mask) {
    unsigned i;
    for (i = 0; i < size; i++) mask[i] = 0;
    mask[0] = numa_of(index_of(device)) ? 0xFFFF0000UL : 0x0000FFFFUL; /* 16 CPUs per node */
    return 0;
}
/* FAKE_FIELD_VALUES: nvmlDeviceGetFieldValues answers NVLINK_LINK_COUNT (field 91) as a driver does: FAKE_NVLINKS,
   NOT_SUPPORTED (3) for a GPU with none. With it, a GPU with none answers UNKNOWN (999) for each link: a probe that
   asks the links after the count said none is seen. Without it the symbol is absent (an older driver). */
#ifdef FAKE_FIELD_VALUES
typedef struct {
    unsigned fieldId, scopeId; long long timestamp, latencyUsec; int valueType, nvmlReturn;
    union { double d; unsigned ui; unsigned long ul; unsigned long long ull; long long sll; int si; } value;
} nvmlFieldValue_t;
int nvmlDeviceGetFieldValues(void *device, int count, nvmlFieldValue_t *values) {
    int i;
    (void)device;
    for (i = 0; i < count; i++) {
        values[i].valueType = 1; /* unsigned int */
        values[i].nvmlReturn = values[i].fieldId != 91 ? 2 : FAKE_NVLINKS == 0 ? 3 : 0;
        values[i].value.ull = 0;
        if (values[i].fieldId == 91) values[i].value.ui = FAKE_NVLINKS;
    }
    return 0;
}
#endif
int nvmlDeviceGetNvLinkState(void *device, unsigned link, unsigned *active) {
#ifdef FAKE_FIELD_VALUES
    if (FAKE_NVLINKS == 0) return 999;
#endif
    if (link >= FAKE_NVLINKS) return FAKE_NVLINKS == 0 ? 3 : 2;
    *active = (SICK(device) || FAKE_NVLINKS_DOWN_ALL) && link < FAKE_NVLINKS_DOWN ? 0 : 1; return 0;
}
int nvmlDeviceGetNvLinkVersion(void *device, unsigned link, unsigned *version) {
    (void)device; if (link >= FAKE_NVLINKS) return FAKE_NVLINKS == 0 ? 3 : 2;
    *version = FAKE_NVLINK_VERSION; return 0;
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void *device, unsigned link, nvmlPciInfo_t *pci) {
    if (link >= FAKE_NVLINKS) return FAKE_NVLINKS == 0 ? 3 : 2;
#ifdef FAKE_NVSWITCH
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", 0xA0 + (int)(link % 4)); /* 4 NVSwitches */
#else
    bus_id(index_of(device) ^ 1, pci); /* its bridge partner */
#endif
    return 0;
}
int nvmlDeviceGetTopologyCommonAncestor(void *a, void *b, int *level) {
    *level = numa_of(index_of(a)) != numa_of(index_of(b)) ? 50 : FAKE_ANCESTOR; return 0;
}
int nvmlDeviceGetP2PStatus(void *a, void *b, int index, int *status) {
    (void)a; (void)b;
#ifdef FAKE_NVSWITCH
    *status = index == 2 ? 0 : FAKE_P2P;
#else
    *status = index == 2 ? (FAKE_NVLINKS && (index_of(a) ^ 1) == index_of(b) ? 0 : 5) : FAKE_P2P;
#endif
    return 0;
}
typedef struct { unsigned char clusterUuid[16]; int status; unsigned cliqueId; unsigned state; } nvmlGpuFabricInfo_t;
int nvmlDeviceGetGpuFabricInfo(void *device, nvmlGpuFabricInfo_t *info) {
    (void)device;
    if (FAKE_FABRIC_STATE == 0) return 3;
    memset(info, 0, sizeof *info);
    info->state = FAKE_FABRIC_STATE; info->status = FAKE_FABRIC_STATUS; info->cliqueId = 1; return 0;
}
