/* A CUDA library other than cuDNN, as the loading child asks it (issue 45): the functions compat/process_env.toml's
   [[cuda_library]] row says the frameworks call, and the one that answers its release without a GPU, chosen by
   LIB_<NAME>; FAKE_MAJOR/FAKE_MINOR/FAKE_PATCH the release it answers; FAKE_WITHOUT_SECOND leaves the row's second
   function out (a copy that lacks what a framework calls). Its one call into the C library makes it need libc.so.6,
   as every real one does. */
#include <stddef.h>
#include <stdlib.h>

#ifndef FAKE_MAJOR
#define FAKE_MAJOR 13
#endif
#ifndef FAKE_MINOR
#define FAKE_MINOR 0
#endif
#ifndef FAKE_PATCH
#define FAKE_PATCH 0
#endif

static int property(int type, int *value) {
    *value = type == 0 ? FAKE_MAJOR : type == 1 ? FAKE_MINOR : FAKE_PATCH;
    return getenv("FAKE_CUDA_MATH_FAILS") ? 1 : 0;
}

#if defined(LIB_CUBLASLT)
size_t cublasLtGetVersion(void) { return FAKE_MAJOR * 10000 + FAKE_MINOR * 100 + FAKE_PATCH; }
int cublasLtCreate(void **handle) { *handle = 0; return 0; }
#ifndef FAKE_WITHOUT_SECOND
int cublasLtMatmul(void) { return 0; }
#endif
#elif defined(LIB_CUBLAS)
int cublasGetProperty(int type, int *value) { return property(type, value); }
int cublasCreate_v2(void **handle) { *handle = 0; return 0; }
#ifndef FAKE_WITHOUT_SECOND
int cublasGemmEx(void) { return 0; }
#endif
#elif defined(LIB_CUDART)
int cudaRuntimeGetVersion(int *version) { *version = FAKE_MAJOR * 1000 + FAKE_MINOR * 10; return 0; }
int cudaGetDeviceCount(int *count) { *count = 0; return 0; }
#ifndef FAKE_WITHOUT_SECOND
int cudaLaunchKernel(void) { return 0; }
#endif
#elif defined(LIB_NVJITLINK)
int nvJitLinkVersion(unsigned int *major, unsigned int *minor) { *major = FAKE_MAJOR; *minor = FAKE_MINOR; return 0; }
int nvJitLinkCreate(void **handle) { *handle = 0; return 0; }
#ifndef FAKE_WITHOUT_SECOND
int nvJitLinkComplete(void *handle) { return handle != 0; }
#endif
#elif defined(LIB_CUSPARSE)
extern int nvJitLinkCreate(void **handle);  /* cuSPARSE needs nvJitLink by soname */
int cusparseGetProperty(int type, int *value) { return property(type, value); }
int cusparseCreate(void **handle) { return nvJitLinkCreate(handle); }
int cusparseSpMM(void) { return 0; }
#elif defined(LIB_NCCL)
int ncclGetVersion(int *version) { *version = FAKE_MAJOR * 10000 + FAKE_MINOR * 100 + FAKE_PATCH; return 0; }
int ncclCommInitRank(void) { return 0; }
int ncclAllReduce(void) { return 0; }
#elif defined(LIB_NVRTC)
int nvrtcVersion(int *major, int *minor) { *major = FAKE_MAJOR; *minor = FAKE_MINOR; return 0; }
int nvrtcCreateProgram(void) { return 0; }
int nvrtcCompileProgram(void) { return 0; }
#elif defined(LIB_CUFFT)
int cufftGetProperty(int type, int *value) { return property(type, value); }
int cufftPlanMany(void) { return 0; }
int cufftExecC2C(void) { return 0; }
#else
int fake_cuda_library_present(void) { return getenv("FAKE_CUDA_MATH_FAILS") != 0; }
#endif

#ifdef FAKE_NEWER
/* a function a later release added (what a framework built against that release takes from it) */
int FAKE_NEWER(void) { return 0; }
#endif
