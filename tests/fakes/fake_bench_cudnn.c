/* A stand-in for libcudnn.so.9 good enough for cudnn-doctor's bench: the legacy convolution
   API computed with plain loops on "device" memory that is host memory (see
   fake_bench_cudart.c), float32 only, NCHW and NHWC; the RNN API reports NOT_SUPPORTED.
   FAKE_WRONG corrupts one output element of every convolution (a wrong answer);
   FAKE_CRASH_CONV crashes in cudnnConvolutionForward; FAKE_NO_GPU makes cudnnCreate fail
   with NOT_INITIALIZED; FAKE_V7 is a cuDNN 7.6.5 without the v8 RNN API (no cudnnRNNForward).
   Status numbers are cuDNN 9's. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int fmt, dtype, n, c, h, w; int nd, dims[8], strides[8]; } Tensor;
typedef struct { int dtype, fmt, k, c, r, s; } Filter;
typedef struct { int pad_h, pad_w, u, v, dil_h, dil_w, mode, compute, math; } Conv;
typedef struct { int algo, status; float time; size_t memory; int determinism, mathType, reserved[3]; } Perf;

#ifdef FAKE_V7
size_t cudnnGetVersion(void) { return 7605; }
#else
size_t cudnnGetVersion(void) { return 91900; }
int cudnnRNNForward(void) { return 3000; } /* never reached: cudnnSetRNNDescriptor_v8 fails first */
#endif
size_t cudnnGetCudartVersion(void) { return 13000; }
const char *cudnnGetErrorString(int s) {
    switch (s) {
    case 0: return "CUDNN_STATUS_SUCCESS";
    case 1001: return "CUDNN_STATUS_NOT_INITIALIZED";
    case 2000: return "CUDNN_STATUS_BAD_PARAM";
    case 3000: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS_INTERNAL_ERROR";
    }
}
int cudnnCreate(void **h) {
#ifdef FAKE_NO_GPU
    (void)h; return 1001;
#else
    *h = malloc(1); return 0;
#endif
}
int cudnnDestroy(void *h) { free(h); return 0; }
int cudnnSetStream(void *h, void *s) { (void)h; (void)s; return 0; }
#define CREATE(name, type) int cudnnCreate##name(void **d) { *d = calloc(1, sizeof(type)); return 0; } \
    int cudnnDestroy##name(void *d) { free(d); return 0; }
CREATE(TensorDescriptor, Tensor)
CREATE(FilterDescriptor, Filter)
CREATE(ConvolutionDescriptor, Conv)
CREATE(RNNDescriptor, int)
CREATE(DropoutDescriptor, int)
CREATE(RNNDataDescriptor, int)

int cudnnSetTensor4dDescriptor(Tensor *t, int fmt, int dtype, int n, int c, int h, int w) {
    if (n <= 0 || c <= 0 || h <= 0 || w <= 0) return 2000;
    t->fmt = fmt; t->dtype = dtype; t->n = n; t->c = c; t->h = h; t->w = w; return 0;
}
int cudnnSetTensorNdDescriptor(Tensor *t, int dtype, int nd, const int *dims, const int *strides) {
    t->dtype = dtype; t->nd = nd;
    for (int i = 0; i < nd && i < 8; i++) { t->dims[i] = dims[i]; t->strides[i] = strides[i]; }
    return 0;
}
int cudnnGetTensorNdDescriptor(Tensor *t, int req, int *dtype, int *nd, int *dims, int *strides) {
    *dtype = t->dtype; *nd = t->nd;
    for (int i = 0; i < t->nd && i < req; i++) { dims[i] = t->dims[i]; strides[i] = t->strides[i]; }
    return 0;
}
int cudnnSetFilter4dDescriptor(Filter *f, int dtype, int fmt, int k, int c, int r, int s) {
    f->dtype = dtype; f->fmt = fmt; f->k = k; f->c = c; f->r = r; f->s = s; return 0;
}
int cudnnSetConvolution2dDescriptor(Conv *c, int ph, int pw, int u, int v, int dh, int dw, int mode, int compute) {
    c->pad_h = ph; c->pad_w = pw; c->u = u; c->v = v; c->dil_h = dh; c->dil_w = dw; c->mode = mode;
    c->compute = compute; return 0;
}
int cudnnSetConvolutionMathType(Conv *c, int math) { c->math = math; return 0; }
int cudnnGetConvolution2dForwardOutputDim(Conv *c, Tensor *x, Filter *f, int *n, int *k, int *p, int *q) {
    *n = x->n; *k = f->k;
    *p = (x->h + 2 * c->pad_h - f->r) / c->u + 1;
    *q = (x->w + 2 * c->pad_w - f->s) / c->v + 1;
    return 0;
}
static int one_algo(int *count) { *count = 1; return 0; }
int cudnnGetConvolutionForwardAlgorithmMaxCount(void *h, int *count) { (void)h; return one_algo(count); }
int cudnnGetConvolutionBackwardDataAlgorithmMaxCount(void *h, int *count) { (void)h; return one_algo(count); }
int cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(void *h, int *count) { (void)h; return one_algo(count); }
static int perf(int requested, int *returned, Perf *p, int algo) {
    if (requested < 1) return 2000;
    memset(p, 0, sizeof(Perf));
    p->algo = algo; p->status = 0; p->time = 0.1f; p->memory = 0; p->mathType = 3;
    *returned = 1; return 0;
}
int cudnnGetConvolutionForwardAlgorithm_v7(void *h, void *a, void *b, void *c, void *d, int req, int *ret, Perf *p) {
    (void)h; (void)a; (void)b; (void)c; (void)d; return perf(req, ret, p, 1);
}
int cudnnGetConvolutionBackwardDataAlgorithm_v7(void *h, void *a, void *b, void *c, void *d, int req, int *ret, Perf *p) {
    (void)h; (void)a; (void)b; (void)c; (void)d; return perf(req, ret, p, 1);
}
int cudnnGetConvolutionBackwardFilterAlgorithm_v7(void *h, void *a, void *b, void *c, void *d, int req, int *ret, Perf *p) {
    (void)h; (void)a; (void)b; (void)c; (void)d; return perf(req, ret, p, 1);
}
#define FIND(name) int name(void *h, void *ad, void *a, void *bd, void *b, void *c, void *od, void *o, int req, \
    int *ret, Perf *p, void *ws, size_t wss) { (void)h; (void)ad; (void)a; (void)bd; (void)b; (void)c; (void)od; \
    (void)o; (void)ws; (void)wss; return perf(req, ret, p, 1); }
FIND(cudnnFindConvolutionForwardAlgorithmEx)
FIND(cudnnFindConvolutionBackwardDataAlgorithmEx)
FIND(cudnnFindConvolutionBackwardFilterAlgorithmEx)

/* offset of element (n, c, h, w) of an N x C x H x W tensor stored in FMT (0 NCHW, 1 NHWC) */
static size_t at(int fmt, int C, int H, int W, int n, int c, int h, int w) {
    return fmt == 0 ? (((size_t)n * C + c) * H + h) * W + w : (((size_t)n * H + h) * W + w) * C + c;
}

/* visit every (output, input, filter) triple of the cross-correlation */
#define LOOP(x, f, conv, P, Q, BODY) \
    for (int n = 0; n < x->n; n++) for (int k = 0; k < f->k; k++) for (int p = 0; p < P; p++) \
    for (int q = 0; q < Q; q++) for (int c = 0; c < f->c; c++) for (int r = 0; r < f->r; r++) \
    for (int s = 0; s < f->s; s++) { int hh = p * conv->u + r - conv->pad_h, ww = q * conv->v + s - conv->pad_w; \
        if (hh < 0 || ww < 0 || hh >= x->h || ww >= x->w) continue; \
        size_t xi = at(x->fmt, x->c, x->h, x->w, n, c, hh, ww); size_t wi = at(f->fmt, f->c, f->r, f->s, k, c, r, s); \
        size_t yi = at(x->fmt, f->k, P, Q, n, k, p, q); BODY; }

static int float_only(Tensor *x, Filter *f) { return x->dtype == 0 && f->dtype == 0 ? 0 : 3000; }

int cudnnConvolutionForward(void *h, const float *alpha, Tensor *xd, const float *x, Filter *wd, const float *w,
                            Conv *conv, int algo, void *ws, size_t wss, const float *beta, Tensor *yd, float *y) {
    (void)h; (void)alpha; (void)algo; (void)ws; (void)wss; (void)beta;
#ifdef FAKE_CRASH_CONV
    raise(SIGSEGV);
#endif
    if (float_only(xd, wd)) return 3000;
    memset(y, 0, sizeof(float) * yd->n * yd->c * yd->h * yd->w);
    LOOP(xd, wd, conv, yd->h, yd->w, y[yi] += x[xi] * w[wi])
#ifdef FAKE_WRONG
    y[0] += 1.0f;
#endif
    return 0;
}
int cudnnConvolutionBackwardData(void *h, const float *alpha, Filter *wd, const float *w, Tensor *dyd,
                                 const float *dy, Conv *conv, int algo, void *ws, size_t wss, const float *beta,
                                 Tensor *dxd, float *dx) {
    (void)h; (void)alpha; (void)algo; (void)ws; (void)wss; (void)beta;
    if (float_only(dxd, wd)) return 3000;
    memset(dx, 0, sizeof(float) * dxd->n * dxd->c * dxd->h * dxd->w);
    LOOP(dxd, wd, conv, dyd->h, dyd->w, dx[xi] += dy[yi] * w[wi])
#ifdef FAKE_WRONG
    dx[0] += 1.0f;
#endif
    return 0;
}
int cudnnConvolutionBackwardFilter(void *h, const float *alpha, Tensor *xd, const float *x, Tensor *dyd,
                                   const float *dy, Conv *conv, int algo, void *ws, size_t wss, const float *beta,
                                   Filter *dwd, float *dw) {
    (void)h; (void)alpha; (void)algo; (void)ws; (void)wss; (void)beta;
    if (float_only(xd, dwd)) return 3000;
    memset(dw, 0, sizeof(float) * dwd->k * dwd->c * dwd->r * dwd->s);
    LOOP(xd, dwd, conv, dyd->h, dyd->w, dw[wi] += dy[yi] * x[xi])
#ifdef FAKE_WRONG
    dw[0] += 1.0f;
#endif
    return 0;
}

int cudnnDropoutGetStatesSize(void *h, size_t *size) { (void)h; *size = 16; return 0; }
int cudnnSetDropoutDescriptor(void *d, void *h, float p, void *states, size_t size, unsigned long long seed) {
    (void)d; (void)h; (void)p; (void)states; (void)size; (void)seed; return 0;
}
int cudnnSetRNNDataDescriptor(void *d, int dtype, int layout, int seq, int batch, int vec, const int *lens, void *pad) {
    (void)d; (void)dtype; (void)layout; (void)seq; (void)batch; (void)vec; (void)lens; (void)pad; return 0;
}
int cudnnSetRNNDescriptor_v8(void *d, int algo, int cell, int bias, int dir, int input, int dtype, int prec, int math,
                             int in, int hidden, int proj, int layers, void *dropout, unsigned flags) {
    (void)d; (void)algo; (void)cell; (void)bias; (void)dir; (void)input; (void)dtype; (void)prec; (void)math;
    (void)in; (void)hidden; (void)proj; (void)layers; (void)dropout; (void)flags;
    return 3000; /* CUDNN_STATUS_NOT_SUPPORTED */
}
