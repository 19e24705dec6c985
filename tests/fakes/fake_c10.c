/* A stand-in for torch/lib/libc10_cuda.so, where PyTorch's CUDA allocator configuration parser lives: the keys it
   accepts are string literals in the library's read-only data (pytorch/pytorch c10/cuda/CUDAAllocatorConfig.cpp and
   c10/core/AllocatorConfig.cpp compare each key of PYTORCH_CUDA_ALLOC_CONF with them). KEYS: those keys, as a C
   initialiser list ("backend", "expandable_segments", ...). */
__attribute__((used)) const char *const allocator_config_keys[] = {KEYS};
