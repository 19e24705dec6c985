/* A stand-in for JAX's CUDA plugin library (xla_cuda_plugin.so in jax_plugins/xla_cuda12 or 13): the names of the options its
   PJRT_Client_Create takes are string literals in its read-only data (openxla/xla xla/pjrt/c/
   pjrt_c_api_gpu_internal.cc kExpectedOptionNameAndTypes). OPTIONS: those names, as a C initialiser list. */
__attribute__((used)) const char *const pjrt_client_create_options[] = {OPTIONS};
