/* The CPU baseline's compiled half: the loops around BLAS that NumPy cannot run without the GIL.
 *
 * cudnn-doctor compiles this file once per machine (cudnn_doctor/bench/compiled.py) and calls it
 * through ctypes. The arithmetic that matters is the BLAS sgemm of the NumPy in the same process
 * (its address is passed in); this file only lays out the operands in cache-sized blocks, runs the
 * threads, and does the LSTM's gate arithmetic, as oneDNN does for PyTorch's CPU path.
 *
 * Tensors are float32, NHWC, C-contiguous. The caller passes all memory, scratch included (kept
 * between calls: a fresh buffer costs a page fault per 4 KiB). Every entry point returns 0, or -1
 * when the system would not start all its threads; then nothing has run and the caller falls back
 * to NumPy.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                           const float *, int64_t, float, float *, int64_t);
typedef void (*sgemm32_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int,
                           float, float *, int);

typedef struct {
    void *function; /* cblas_sgemm of the BLAS NumPy uses */
    int ilp64;      /* 64-bit integer interface (OpenBLAS's ...64_ symbols) */
} blas_t;

/* C (m x n, row-major) = op(A) · op(B) + beta · C, on the calling thread (the caller has set the
 * BLAS to one thread). */
static void gemm(const blas_t *blas, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                 int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    int ta = trans_a ? TRANS : NO_TRANS, tb = trans_b ? TRANS : NO_TRANS;
    if (blas->ilp64)
        ((sgemm64_fn)blas->function)(ROW_MAJOR, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
    else
        ((sgemm32_fn)blas->function)(ROW_MAJOR, ta, tb, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, beta,
                                     c, (int)ldc);
}

/* ---- a team: the calling thread and COUNT-1 threads of a pool kept between calls ----
 *
 * Starting 15 threads costs about 0.35 ms on the 16-core machine of benchmarks/README.md, a
 * quarter of the small convolution; the pool's threads spin for a moment after each call (the
 * bench times calls back to back), then sleep on a condition variable. */

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

typedef struct team team_t;
typedef void (*task_fn)(team_t *team, int index);

struct team {
    task_fn task;
    void *context;
    int count;      /* members: the caller (index 0) and COUNT-1 pool threads */
    int arrived;    /* barrier */
    int generation; /* barrier */
};

static void barrier(team_t *team) {
    int generation = __atomic_load_n(&team->generation, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&team->arrived, 1, __ATOMIC_ACQ_REL) == team->count) {
        __atomic_store_n(&team->arrived, 0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&team->generation, 1, __ATOMIC_RELEASE);
    } else {
        while (__atomic_load_n(&team->generation, __ATOMIC_ACQUIRE) == generation) relax();
    }
}

enum { POOL_MOST = 1024, SPINS = 1 << 14 }; /* spin about 0.5 ms before sleeping */

static struct {
    pthread_mutex_t busy;  /* one caller at a time */
    pthread_mutex_t lock;  /* with WAKE: sleeping workers */
    pthread_cond_t wake;
    int size;              /* pool threads started (indices 1..size) */
    int job;               /* bumped for each call */
    int pending;           /* pool threads yet to finish the current job */
    team_t *team;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL};

static void *pool_main(void *argument) {
    /* the job counter when the thread was made (the job it was made for is the next one) */
    int index = (int)((intptr_t)argument % POOL_MOST), seen = (int)((intptr_t)argument / POOL_MOST);
    for (;;) {
        int job = seen;
        for (int spin = 0; spin < SPINS && (job = __atomic_load_n(&pool.job, __ATOMIC_ACQUIRE)) == seen; spin++)
            relax();
        if (job == seen) {
            pthread_mutex_lock(&pool.lock);
            while ((job = __atomic_load_n(&pool.job, __ATOMIC_ACQUIRE)) == seen) pthread_cond_wait(&pool.wake, &pool.lock);
            pthread_mutex_unlock(&pool.lock);
        }
        seen = job;
        team_t *team = pool.team;
        if (index < team->count) team->task(team, index);
        __atomic_sub_fetch(&pool.pending, 1, __ATOMIC_ACQ_REL);
    }
    return NULL;
}

/* Run TASK(team, index) for index 0..COUNT-1 at once, index 0 on the calling thread; all or
 * nothing (-1, having run nothing, when the pool cannot grow to COUNT-1 threads). */
static int team_run(int count, task_fn task, void *context) {
    team_t team = {task, context, count < 1 ? 1 : (count > POOL_MOST ? POOL_MOST : count), 0, 0};
    pthread_mutex_lock(&pool.busy);
    while (pool.size < team.count - 1) {
        pthread_t thread;
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        int error = pthread_create(&thread, &attributes, pool_main,
                                   (void *)((intptr_t)pool.job * POOL_MOST + pool.size + 1));
        pthread_attr_destroy(&attributes);
        if (error != 0) {
            pthread_mutex_unlock(&pool.busy);
            return -1;
        }
        pool.size++;
    }
    if (team.count > 1) {
        pool.team = &team;
        __atomic_store_n(&pool.pending, pool.size, __ATOMIC_RELAXED);
        pthread_mutex_lock(&pool.lock);
        __atomic_add_fetch(&pool.job, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }
    task(&team, 0);
    if (team.count > 1)
        while (__atomic_load_n(&pool.pending, __ATOMIC_ACQUIRE) > 0) relax();
    pthread_mutex_unlock(&pool.busy);
    return 0;
}

static void share(int64_t total, int index, int count, int64_t *first, int64_t *end) {
    *first = total * index / count;
    *end = total * (index + 1) / count;
}

/* ---- convolution: im2col of a block of output pixels, then one GEMM with the filters ---- */

typedef struct {
    blas_t blas;
    const float *source; /* (n, h, w, c) */
    int64_t n, h, w, c;
    int64_t r, s;        /* filter size */
    int64_t p, q;        /* output size */
    int64_t offset;      /* the source sits at (OFFSET, OFFSET) of the virtual padded input */
    int64_t stride;      /* of the convolution */
    int64_t dilation;    /* of the source in the virtual input (backward-data: the forward stride) */
    const float *filters; /* forward: (R*S*C, K); backward-filter: unused */
    float *out;           /* forward: (n, p, q, K); backward-filter: (K, R*S*C) */
    int64_t k;
    int64_t block;        /* output pixels per GEMM */
    const float *gradient; /* backward-filter: dy (n, p, q, K) */
    float *partials;       /* backward-filter: (threads, K, R*S*C) */
    float *scratch;        /* (threads, block, R*S*C): each thread's im2col block */
} conv_t;

/* Row ROW of the im2col matrix (output pixel PIXEL): R runs of S*C values, zeros outside. */
static void im2col_row(const conv_t *x, int64_t pixel, float *row) {
    int64_t image = pixel / (x->p * x->q), rest = pixel % (x->p * x->q);
    int64_t y = rest / x->q, xo = rest % x->q;
    const float *base = x->source + image * x->h * x->w * x->c;
    int64_t c = x->c, width = x->s * c;
    for (int64_t i = 0; i < x->r; i++, row += width) {
        int64_t vy = y * x->stride + i - x->offset;
        if (vy < 0 || vy % x->dilation || vy / x->dilation >= x->h) {
            memset(row, 0, (size_t)width * sizeof(float));
            continue;
        }
        const float *line = base + (vy / x->dilation) * x->w * c;
        int64_t vx0 = xo * x->stride - x->offset;
        if (x->dilation == 1 && vx0 >= 0 && vx0 + x->s <= x->w) {
            memcpy(row, line + vx0 * c, (size_t)width * sizeof(float));
            continue;
        }
        for (int64_t j = 0; j < x->s; j++) {
            int64_t vx = vx0 + j;
            if (vx < 0 || vx % x->dilation || vx / x->dilation >= x->w)
                memset(row + j * c, 0, (size_t)c * sizeof(float));
            else
                memcpy(row + j * c, line + (vx / x->dilation) * c, (size_t)c * sizeof(float));
        }
    }
}

static void conv_forward_task(team_t *team, int index) {
    const conv_t *x = team->context;
    int64_t first, end, depth = x->r * x->s * x->c;
    share(x->n * x->p * x->q, index, team->count, &first, &end);
    float *cols = x->scratch + index * x->block * depth;
    for (int64_t pixel = first; pixel < end; pixel += x->block) {
        int64_t rows = end - pixel < x->block ? end - pixel : x->block;
        for (int64_t row = 0; row < rows; row++) im2col_row(x, pixel + row, cols + row * depth);
        gemm(&x->blas, 0, 0, rows, x->k, depth, cols, depth, x->filters, x->k, 0.0f, x->out + pixel * x->k, x->k);
    }
}

static void conv_filter_task(team_t *team, int index) {
    const conv_t *x = team->context;
    int64_t first, end, depth = x->r * x->s * x->c, size = x->k * depth;
    share(x->n * x->p * x->q, index, team->count, &first, &end);
    float *partial = x->partials + index * size;
    float *cols = x->scratch + index * x->block * depth;
    memset(partial, 0, (size_t)size * sizeof(float));
    for (int64_t pixel = first; pixel < end; pixel += x->block) {
        int64_t rows = end - pixel < x->block ? end - pixel : x->block;
        for (int64_t row = 0; row < rows; row++) im2col_row(x, pixel + row, cols + row * depth);
        /* partial (K x depth) += dyᵀ (K x rows) · cols (rows x depth) */
        gemm(&x->blas, 1, 0, x->k, depth, rows, x->gradient + pixel * x->k, x->k, cols, depth, 1.0f, partial,
             depth);
    }
    barrier(team);
    int64_t a, b;
    share(size, index, team->count, &a, &b);
    for (int64_t e = a; e < b; e++) {
        float sum = 0.0f;
        for (int t = 0; t < team->count; t++) sum += x->partials[t * size + e];
        x->out[e] = sum;
    }
}

/* y (n,p,q,K) = the correlation of the (virtually dilated and padded) source with FILTERS
 * (R*S*C, K). Forward: offset = pad, dilation = 1; backward-data: the output gradient as source,
 * offset = R-1-pad, dilation = stride, stride 1, filters flipped and transposed. */
int cd_conv_forward(void *sgemm, int ilp64, const float *source, int64_t n, int64_t h, int64_t w, int64_t c,
                    const float *filters, int64_t k, int64_t r, int64_t s, int64_t p, int64_t q, int64_t offset,
                    int64_t stride, int64_t dilation, float *out, float *scratch, int64_t block, int threads) {
    conv_t x = {{sgemm, ilp64}, source, n, h, w, c, r, s, p, q, offset, stride, dilation, filters, out, k, block,
                NULL, NULL, scratch};
    return team_run(threads, conv_forward_task, &x);
}

/* dw (K, R*S*C) = dyᵀ · im2col(x), each thread over its share of the output pixels, then summed. */
int cd_conv_backward_filter(void *sgemm, int ilp64, const float *source, int64_t n, int64_t h, int64_t w,
                            int64_t c, const float *gradient, int64_t k, int64_t r, int64_t s, int64_t p, int64_t q,
                            int64_t pad, int64_t stride, float *out, float *partials, float *scratch, int64_t block,
                            int threads) {
    conv_t x = {{sgemm, ilp64}, source, n, h, w, c, r, s, p, q, pad, stride, 1, NULL, out, k, block, gradient,
                partials, scratch};
    return team_run(threads, conv_filter_task, &x);
}

/* ---- LSTM: each thread owns a share of the hidden units and their rows of the four gates ---- */

typedef struct {
    blas_t blas;
    const float *inputs;    /* (T*B, I) */
    const float *input;     /* (4H, I): gates i, f, o, g; the rows of i, f, o halved */
    const float *recurrent; /* (4H, H), same order and halving */
    const float *bias;      /* (4H) */
    float *states;          /* (T, H, B) */
    float *scratch;         /* per thread: packed weights, projection, gates, cell (lstm_scratch) */
    int64_t steps, batch, features, hidden, stride; /* stride: floats of scratch per thread */
} lstm_t;

/* tanh through an exp that vectorises (Cody-Waite reduction, degree-7 Taylor): within 2 ulp of
 * expf, so the result is within a few 1e-7 of tanhf. */
static inline float exp_poly(float x) {
    x = x < -87.0f ? -87.0f : x; /* not fminf/fmaxf: their NaN rules stop vectorisation */
    x = x > 88.0f ? 88.0f : x;
    float n = floorf(x * 1.44269504088896341f + 0.5f);
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.6666667e-1f + r * (4.1666668e-2f +
              r * (8.3333338e-3f + r * (1.3888889e-3f + r * 1.9841270e-4f))))));
    int32_t bits = ((int32_t)n + 127) << 23; /* 2^n */
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

static inline float tanh_poly(float x) {
    float a = fabsf(x);
    float e = exp_poly(2.0f * (a > 9.0f ? 9.0f : a));
    return copysignf((e - 1.0f) / (e + 1.0f), x);
}

/* One step's gate arithmetic over SIZE elements; GATES holds the i, f, o, g blocks (i, f, o halved:
 * σ(z) = tanh(z/2)/2 + 1/2). */
static void lstm_cell(int64_t size, const float *restrict gates, float *restrict cell, float *restrict h) {
    const float *gi = gates, *gf = gates + size, *go = gates + 2 * size, *gg = gates + 3 * size;
    for (int64_t e = 0; e < size; e++) {
        float i = 0.5f * tanh_poly(gi[e]) + 0.5f, f = 0.5f * tanh_poly(gf[e]) + 0.5f;
        float o = 0.5f * tanh_poly(go[e]) + 0.5f, g = tanh_poly(gg[e]);
        float c = f * cell[e] + i * g;
        cell[e] = c;
        h[e] = o * tanh_poly(c);
    }
}

/* This thread's rows of each gate of MATRIX (4H, COLUMNS), packed into (4·units, COLUMNS). */
static void pack_rows(float *to, const float *matrix, int64_t hidden, int64_t first, int64_t units,
                      int64_t columns) {
    for (int g = 0; g < 4; g++)
        memcpy(to + g * units * columns, matrix + (g * hidden + first) * columns,
               (size_t)(units * columns) * sizeof(float));
}

static void lstm_task(team_t *team, int index) {
    const lstm_t *x = team->context;
    int64_t first, end, hidden = x->hidden, batch = x->batch, features = x->features;
    int64_t columns = x->steps * batch;
    share(hidden, index, team->count, &first, &end);
    int64_t units = end - first, rows = 4 * units;
    float *input = x->scratch + index * x->stride;
    float *recurrent = input + rows * features, *projected = recurrent + rows * hidden;
    float *gates = projected + rows * columns, *cell = gates + rows * batch;
    pack_rows(input, x->input, hidden, first, units, features);
    pack_rows(recurrent, x->recurrent, hidden, first, units, hidden);
    for (int64_t row = 0; row < rows; row++) {
        float bias = x->bias[(row / units) * hidden + first + row % units];
        for (int64_t column = 0; column < columns; column++) projected[row * columns + column] = bias;
    }
    memset(cell, 0, (size_t)(units * batch) * sizeof(float));
    /* the input projection of every step: (4·units, T·B) += W (4·units, I) · Xᵀ */
    if (units > 0)
        gemm(&x->blas, 0, 1, rows, columns, features, input, features, x->inputs, features, 1.0f, projected,
             columns);
    for (int64_t step = 0; step < x->steps; step++) {
        for (int64_t row = 0; row < rows; row++)
            memcpy(gates + row * batch, projected + row * columns + step * batch, (size_t)batch * sizeof(float));
        if (step > 0 && units > 0)
            gemm(&x->blas, 0, 0, rows, batch, hidden, recurrent, hidden, x->states + (step - 1) * hidden * batch,
                 batch, 1.0f, gates, batch);
        lstm_cell(units * batch, gates, cell, x->states + step * hidden * batch + first * batch);
        barrier(team);
    }
}

/* Floats of scratch each of THREADS threads needs (the caller allocates THREADS times this). */
int64_t cd_lstm_scratch(int64_t steps, int64_t batch, int64_t features, int64_t hidden, int threads) {
    int64_t units = (hidden + threads - 1) / threads;
    return 4 * units * (features + hidden + steps * batch + batch) + units * batch + 16;
}

/* states (T, H, B) of a one-layer LSTM from inputs (T·B, I), h0 = c0 = 0; THREADS <= HIDDEN. */
int cd_lstm_forward(void *sgemm, int ilp64, const float *inputs, const float *input, const float *recurrent,
                    const float *bias, float *states, float *scratch, int64_t steps, int64_t batch,
                    int64_t features, int64_t hidden, int threads) {
    lstm_t x = {{sgemm, ilp64}, inputs, input, recurrent, bias, states, scratch, steps, batch, features, hidden,
                cd_lstm_scratch(steps, batch, features, hidden, threads)};
    return team_run(threads, lstm_task, &x);
}
