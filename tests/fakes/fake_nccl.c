/* A stand-in for libnccl.so.2: ncclGetVersion answers FAKE_NCCL_VERSION (NCCL's own encoding: major*10000 +
   minor*100 + patch from 2.9, major*1000 + minor*100 + patch before) and nothing else is exported, as an old or
   partial library gives a program that needs newer symbols. FAKE_NCCL_FAIL makes ncclGetVersion return that
   ncclResult_t instead. */
#ifndef FAKE_NCCL_VERSION
#define FAKE_NCCL_VERSION 22705
#endif
int ncclGetVersion(int *version) {
#ifdef FAKE_NCCL_FAIL
    return FAKE_NCCL_FAIL;
#else
    *version = FAKE_NCCL_VERSION;
    return 0;
#endif
}
