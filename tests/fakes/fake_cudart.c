/* A stand-in for libcudart.so.N: cudaRuntimeGetVersion answers FAKE_RUNTIME. */
#ifndef FAKE_RUNTIME
#define FAKE_RUNTIME 12040
#endif
int cudaRuntimeGetVersion(int *version) { *version = FAKE_RUNTIME; return 0; }
int cudaGetDeviceCount(int *count) { *count = 0; return 100; /* cudaErrorNoDevice */ }
/* the real runtime exports it (the frameworks' kernels launch through it): a copy without it is another finding */
int cudaLaunchKernel(const void *func, void *grid, void *block, void **args, unsigned long shared, void *stream) {
    (void)func; (void)grid; (void)block; (void)args; (void)shared; (void)stream; return 0;
}
