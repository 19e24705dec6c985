/* A stand-in for libcuda.so.1: cuDriverGetVersion answers FAKE_DRIVER_CUDA. */
#ifndef FAKE_DRIVER_CUDA
#define FAKE_DRIVER_CUDA 12040
#endif
int cuDriverGetVersion(int *version) { *version = FAKE_DRIVER_CUDA; return 0; }
int cuInit(unsigned int flags) { (void)flags; return 100; /* CUDA_ERROR_NO_DEVICE */ }
