/* A stand-in for libcudart.so.N: cudaRuntimeGetVersion answers FAKE_RUNTIME. */
#ifndef FAKE_RUNTIME
#define FAKE_RUNTIME 12040
#endif
int cudaRuntimeGetVersion(int *version) { *version = FAKE_RUNTIME; return 0; }
int cudaGetDeviceCount(int *count) { *count = 0; return 100; /* cudaErrorNoDevice */ }
