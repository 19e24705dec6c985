/* A stand-in for JAX's CUDA plugin library (xla_cuda_plugin.so) as XLA's CUDA stubs build it: the names of a CUDA
   library's functions as C strings in its read-only data, each looked up with dlsym on the library's handle when first
   called (openxla/xla xla/tsl/cuda/cublasLt_stub.cc: kSymbols, from cublasLt.inc). NAMES: a C initialiser list. */
__attribute__((used)) const char *const kSymbols[] = {NAMES};
