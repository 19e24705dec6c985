/* A stand-in for a framework's CUDA library (libtorch_cuda.so): linked against libcudnn.so.N
   with a DT_RUNPATH, so cudnn-doctor resolves its cuDNN the way ld.so would. */
#include <stddef.h>
size_t cudnnGetVersion(void);
size_t framework_cudnn_version(void) { return cudnnGetVersion(); }
