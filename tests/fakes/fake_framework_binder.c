/* A framework's own library (libtorch_cuda.so, JAX's xla_cuda_plugin.so) that takes functions from the CUDA
   libraries it is linked against: CALL1..CALL4, each an undefined symbol the loader binds as it loads (with its
   version node, where the library it was linked against defines one). */
#ifdef CALL1
extern int CALL1(void);
#endif
#ifdef CALL2
extern int CALL2(void);
#endif
#ifdef CALL3
extern int CALL3(void);
#endif
#ifdef CALL4
extern int CALL4(void);
#endif

int fake_framework_binder_calls(void) {
    int sum = 0;
#ifdef CALL1
    sum += CALL1();
#endif
#ifdef CALL2
    sum += CALL2();
#endif
#ifdef CALL3
    sum += CALL3();
#endif
#ifdef CALL4
    sum += CALL4();
#endif
    return sum;
}
