/* A cuDNN 8.3-8.9 DLL for Windows as NVIDIA ships it in one respect: its sub-libraries (cudnn_ops_infer64_8.dll,
   cudnn_cnn_infer64_8.dll, ...) import zlibwapi.dll, which the cuDNN archive does not hold (NVIDIA's 8.x install
   guide, "Installing Zlib"; pytorch's 'Could not locate zlibwapi.dll. Please make sure it is in your library
   path!'). Built with MinGW. FAKE_VERSION: what cudnnGetVersion answers; FAKE_NEEDS_ZLIB: import zlibVersion
   from zlibwapi.dll (link against fake_zlibwapi.c's DLL); FAKE_HANG: cudnnGetVersion never returns, like a
   library stuck in its first call (the probe's deadline must end it, and what it started). */
#include <stddef.h>
#include <windows.h>

#ifndef FAKE_VERSION
#define FAKE_VERSION 8907
#endif
#ifndef FAKE_CUDART
#define FAKE_CUDART 11080
#endif

__declspec(dllexport) size_t cudnnGetVersion(void) {
#ifdef FAKE_HANG
    Sleep(INFINITE);
#endif
    return FAKE_VERSION;
}
__declspec(dllexport) size_t cudnnGetCudartVersion(void) { return FAKE_CUDART; }

#ifdef FAKE_NEEDS_ZLIB
__declspec(dllimport) const char *zlibVersion(void);
__declspec(dllexport) const char *fake_zlib_version(void) { return zlibVersion(); }
#endif
