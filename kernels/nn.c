/* nn.c: the heavy neural-network kernels: softmax / log_softmax (and their backward),
 * 2-D convolution (forward, backward for input and weight; transposed convolution is the
 * same three routines with the roles swapped), max / average / adaptive average pooling.
 *
 * Every routine takes float32 or float64 data that the caller (pytorchlite/_kernels/nn.py)
 * has made contiguous, as integer addresses plus a small geometry array, so a call costs
 * no descriptor filling. The Python side validates shapes and arguments; here the checks
 * only guard memory safety (dtype code, positive sizes).
 *
 * Convolution is im2col + GEMM (OpenBLAS, the scipy-openblas32 build, see matmul.c). For a
 * chunk of nb samples the columns are one (C*KH*KW) x (nb*L) matrix (L = OH*OW), so each
 * group is a single large GEMM even when one sample's L is tiny (an 8x8 image); the GEMM
 * result (O x nb*L) is then reordered into (nb, O, L). With nb == 1 the GEMM writes the
 * output in place. The chunk is bounded so the columns stay below COLS_BUDGET elements.
 * Backward for the input is GEMM with W^T then col2im (scatter-add, parallel over (n, c)
 * planes, which never collide); backward for the weight is gy @ cols^T accumulated over
 * chunks. OpenBLAS threads its GEMMs itself; the loops around them use OpenMP.
 */
#include "ptl.h"

#include <limits.h>
#include <stdlib.h>

#include "ptl_blas.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define COLS_BUDGET (8 << 20) /* elements of the im2col buffer per chunk */
#define GRAIN 131072          /* elements of work below which a loop stays on one thread */

#define NN_CLONES PTL_HOT      /* the clones of ptl.h */

/* expf that the compiler can vectorise (Cephes: x = n*ln2 + r, a degree-6 polynomial for
 * e^r, 2^n from the exponent bits; about 1 ulp). Below -87.34 the result flushes to 0, so
 * masked (-inf) entries of a softmax are exactly zero; nan stays nan. */
static inline float vexpf(float x) {
    /* (nan clamps too, so that fx stays finite: converting nan to int is undefined) */
    float xc = x < 88.37626f ? (x > -87.33654f ? x : -87.33654f) : 88.37626f;
    float fx = __builtin_floorf(xc * 1.44269504088896341f + 0.5f);
    float r = xc - fx * 0.693359375f + fx * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)fx + 127) << 23;
    float scale;
    memcpy(&scale, &bits, 4);
    float y = p * scale;
    return x < -87.33654f ? 0.0f : (x != x ? x : y);
}

/* one contiguous float32 row: the max, exp and sum in 16 independent lanes (so each loop
 * vectorises). A nan anywhere in the row reaches the sum through its exp, so the whole
 * row comes out nan, as in PyTorch; an all -inf row gives 0 / 0 = nan likewise. */
/* The row's max, in 16 lanes. GCC vectorises a float max only when it may ignore nan and
 * the sign of zero: both are harmless here (a nan reaches the result through the sum,
 * and -0 vs 0 as the shift changes nothing), and 6x faster than the scalar loop. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-signed-zeros", "finite-math-only")))
#endif
static NN_CLONES float row_max_f32(const float *x, int64_t n) {
    float mx[16];
    for (int j = 0; j < 16; j++) mx[j] = -INFINITY;
    int64_t k = 0;
    for (; k + 16 <= n; k += 16)
        for (int j = 0; j < 16; j++) {
            float v = x[k + j];
            mx[j] = v > mx[j] ? v : mx[j];
        }
    float m = -INFINITY;
    for (; k < n; k++) m = x[k] > m ? x[k] : m;
    for (int j = 0; j < 16; j++) m = mx[j] > m ? mx[j] : m;
    return m;
}

static NN_CLONES void softmax_row_f32(const float *x, float *y, int64_t n, int is_log) {
    float m = row_max_f32(x, n);
    if (m == -INFINITY) m = 0;
    int64_t k;
    float acc[16] = {0};
    k = 0;
    for (; k + 16 <= n; k += 16)
        for (int j = 0; j < 16; j++) {
            float e = vexpf(x[k + j] - m);
            y[k + j] = e;
            acc[j] += e;
        }
    double s = 0;
    for (; k < n; k++) {
        y[k] = vexpf(x[k] - m);
        s += y[k];
    }
    for (int j = 0; j < 16; j++) s += acc[j];
    if (is_log) {
        float ls = (float)log(s) + m;
        for (int64_t k2 = 0; k2 < n; k2++) y[k2] = x[k2] - ls;
    } else {
        float inv = (float)(1.0 / s);
        for (int64_t k2 = 0; k2 < n; k2++) y[k2] *= inv;
    }
}

/* ---- softmax ------------------------------------------------------------------------
 * The input is viewed as (outer, n, inner); softmax runs along n. inner == 1 (the last
 * dim) reads rows; otherwise each (outer, inner) column is strided by inner. */

#define DEFINE_SOFTMAX(T, sfx, EXP, LOG)                                                         \
    static void softmax_fwd_##sfx(const T *x, T *y, int64_t outer, int64_t n, int64_t inner,     \
                                  int is_log) {                                                     \
        int64_t work = outer * n * inner;                                                        \
        _Pragma("omp parallel for schedule(static) if (work > GRAIN)")                         \
        for (int64_t r = 0; r < outer * inner; r++) {                                            \
            int64_t o = r / inner, i = r % inner;                                                \
            const T *xp = x + o * n * inner + i;                                                 \
            T *yp = y + o * n * inner + i;                                                       \
            T m = -INFINITY;                                                                     \
            for (int64_t k = 0; k < n; k++) {                                                    \
                T v = xp[k * inner];                                                             \
                if (v > m || v != v) m = v;                                                      \
            }                                                                                    \
            /* all -inf: PyTorch gives nan (softmax) / nan (log_softmax): x - m is nan */      \
            if (m == -INFINITY) m = 0;                                                           \
            double s = 0;                                                                        \
            if (is_log) {                                                                           \
                for (int64_t k = 0; k < n; k++) s += EXP(xp[k * inner] - m);                     \
                T ls = (T)LOG(s) + m;                                                            \
                for (int64_t k = 0; k < n; k++) yp[k * inner] = xp[k * inner] - ls;             \
            } else {                                                                             \
                for (int64_t k = 0; k < n; k++) {                                                \
                    T e = EXP(xp[k * inner] - m);                                                \
                    yp[k * inner] = e;                                                           \
                    s += e;                                                                      \
                }                                                                                \
                T inv = (T)(1.0 / s);                                                            \
                for (int64_t k = 0; k < n; k++) yp[k * inner] *= inv;                            \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    /* softmax: gx = y * (g - sum(g * y)); log_softmax: gx = g - exp(y) * sum(g) */            \
    static void softmax_bwd_##sfx(const T *g, const T *y, T *gx, int64_t outer, int64_t n,       \
                                  int64_t inner, int is_log) {                                      \
        int64_t work = outer * n * inner;                                                        \
        _Pragma("omp parallel for schedule(static) if (work > GRAIN)")                         \
        for (int64_t r = 0; r < outer * inner; r++) {                                            \
            int64_t o = r / inner, i = r % inner;                                                \
            int64_t base = o * n * inner + i;                                                    \
            double s = 0;                                                                        \
            if (is_log) {                                                                           \
                for (int64_t k = 0; k < n; k++) s += g[base + k * inner];                        \
                for (int64_t k = 0; k < n; k++) {                                                \
                    int64_t j = base + k * inner;                                                \
                    gx[j] = g[j] - EXP(y[j]) * (T)s;                                             \
                }                                                                                \
            } else {                                                                             \
                for (int64_t k = 0; k < n; k++) s += (double)g[base + k * inner] * y[base + k * inner]; \
                for (int64_t k = 0; k < n; k++) {                                                \
                    int64_t j = base + k * inner;                                                \
                    gx[j] = y[j] * (g[j] - (T)s);                                                \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }

DEFINE_SOFTMAX(float, f32, expf, log)
DEFINE_SOFTMAX(double, f64, exp, log)

int ptl_softmax_forward(int dtype, intptr_t x, intptr_t y, int64_t outer, int64_t n, int64_t inner, int is_log) {
    if (outer < 0 || n < 0 || inner < 0) return PTL_ERR_ARG;
    if (dtype == PTL_F32 && inner == 1) {
        const float *xp = (const float *)x;
        float *yp = (float *)y;
        int64_t work = outer * n;
        #pragma omp parallel for schedule(static) if (work > GRAIN)
        for (int64_t o = 0; o < outer; o++) softmax_row_f32(xp + o * n, yp + o * n, n, is_log);
    } else if (dtype == PTL_F32) softmax_fwd_f32((const float *)x, (float *)y, outer, n, inner, is_log);
    else if (dtype == PTL_F64) softmax_fwd_f64((const double *)x, (double *)y, outer, n, inner, is_log);
    else return PTL_ERR_DTYPE;
    return PTL_OK;
}

int ptl_softmax_backward(int dtype, intptr_t g, intptr_t y, intptr_t gx, int64_t outer, int64_t n, int64_t inner,
                         int is_log) {
    if (outer < 0 || n < 0 || inner < 0) return PTL_ERR_ARG;
    if (dtype == PTL_F32) softmax_bwd_f32((const float *)g, (const float *)y, (float *)gx, outer, n, inner, is_log);
    else if (dtype == PTL_F64)
        softmax_bwd_f64((const double *)g, (const double *)y, (double *)gx, outer, n, inner, is_log);
    else return PTL_ERR_DTYPE;
    return PTL_OK;
}

/* ---- convolution ----------------------------------------------------------------------
 * Geometry g[]: N, C, H, W, O, KH, KW, SH, SW, PH, PW, DH, DW, G, OH, OW.
 * x is (N, C, H, W), y is (N, O, OH, OW), the weight (O, C/G, KH, KW). */

enum { GN, GC, GH, GW, GO, GKH, GKW, GSH, GSW, GPH, GPW, GDH, GDW, GG, GOH, GOW, G_LEN };

static int conv_geometry_ok(const int64_t *g) {
    for (int k = 0; k < G_LEN; k++)
        if (g[k] < 0) return 0;
    if (g[GG] < 1 || g[GC] % g[GG] || g[GO] % g[GG] || g[GSH] < 1 || g[GSW] < 1 || g[GDH] < 1 || g[GDW] < 1)
        return 0;
    /* BLAS takes 32-bit sizes */
    if (g[GC] * g[GKH] * g[GKW] > INT_MAX || g[GO] > INT_MAX || g[GOH] * g[GOW] > INT_MAX) return 0;
    return 1;
}

/* samples per chunk so that the columns stay within the budget */
static int64_t conv_chunk(const int64_t *g) {
    int64_t per = g[GC] * g[GKH] * g[GKW] * g[GOH] * g[GOW];
    if (per <= 0) return g[GN] > 0 ? g[GN] : 1;
    int64_t nb = COLS_BUDGET / per;
    if (nb < 1) nb = 1;
    if (nb > g[GN]) nb = g[GN];
    /* each BLAS call takes 32-bit sizes */
    while (nb > 1 && nb * g[GOH] * g[GOW] > INT_MAX) nb /= 2;
    return nb;
}

/* The per-sample scheme pays when every thread gets samples and one sample's columns fit
 * in a core's L2 cache; otherwise (one large image, a huge unfold) the batch is unfolded
 * in chunks and the BLAS threads each product. */
#define PER_SAMPLE_COLS_BYTES (1 << 20)

static int conv_threads(const int64_t *g) {
    int nt = omp_get_max_threads();
    return nt > g[GN] ? (int)g[GN] : nt;
}

static int conv_per_sample(const int64_t *g, size_t item) {
    int64_t N = g[GN], L = g[GOH] * g[GOW], CK = g[GC] * g[GKH] * g[GKW];
    if (N < 1 || L == 0 || CK == 0 || g[GO] == 0) return 0;
    int nt = omp_get_max_threads();
    return N >= nt && (double)CK * (double)L * (double)item <= PER_SAMPLE_COLS_BYTES;
}

/* The output columns [lo, hi) whose input column ow * sw + w0 lies inside [0, W): the
 * rest read the zero padding. */
static void ow_range(int64_t w0, int64_t sw, int64_t W, int64_t OW, int64_t *lo, int64_t *hi) {
    int64_t a = w0 >= 0 ? 0 : (-w0 + sw - 1) / sw;
    int64_t b = W - w0 <= 0 ? 0 : (W - w0 + sw - 1) / sw;
    if (a > OW) a = OW;
    if (b > OW) b = OW;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

#define DEFINE_CONV(T, sfx, GEMM)                                                                 \
    /* cols[(c*KH + i)*KW + j][s*L + oh*OW + ow] = x[n0+s][c][oh*SH - PH + i*DH][...] */          \
    static void im2col_##sfx(const int64_t *g, const T *x, int64_t n0, int64_t nb, T *cols) {      \
        int64_t C = g[GC], H = g[GH], W = g[GW], KH = g[GKH], KW = g[GKW], OH = g[GOH], OW = g[GOW]; \
        int64_t L = OH * OW, rows = C * KH * KW;                                                  \
        int64_t work = rows * nb * L;                                                             \
        _Pragma("omp parallel for schedule(static) if (work > GRAIN)")                          \
        for (int64_t rs = 0; rs < rows * nb; rs++) {                                              \
            int64_t r = rs / nb, s = rs % nb;                                                     \
            int64_t c = r / (KH * KW), i = (r / KW) % KH, j = r % KW;                             \
            const T *xp = x + ((n0 + s) * C + c) * H * W;                                         \
            T *cp = cols + r * nb * L + s * L;                                                    \
            int64_t SW = g[GSW], w0 = -g[GPW] + j * g[GDW], lo, hi;                               \
            ow_range(w0, SW, W, OW, &lo, &hi);                                                    \
            for (int64_t oh = 0; oh < OH; oh++) {                                                 \
                int64_t h = oh * g[GSH] - g[GPH] + i * g[GDH];                                    \
                T *dst = cp + oh * OW;                                                            \
                if (h < 0 || h >= H) {                                                            \
                    for (int64_t ow = 0; ow < OW; ow++) dst[ow] = 0;                              \
                    continue;                                                                     \
                }                                                                                 \
                const T *src = xp + h * W;   /* input column ow * SW + w0, >= 0 on [lo, hi) */    \
                for (int64_t ow = 0; ow < lo; ow++) dst[ow] = 0;                                  \
                if (SW == 1)                                                                      \
                    memcpy(dst + lo, src + lo + w0, (size_t)(hi - lo) * sizeof(T));               \
                else                                                                              \
                    for (int64_t ow = lo; ow < hi; ow++) dst[ow] = src[ow * SW + w0];             \
                for (int64_t ow = hi; ow < OW; ow++) dst[ow] = 0;                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    /* x[n0+s] += scatter of cols (the adjoint of im2col); planes (s, c) are independent */     \
    static void col2im_##sfx(const int64_t *g, const T *cols, int64_t n0, int64_t nb, T *x) {      \
        int64_t C = g[GC], H = g[GH], W = g[GW], KH = g[GKH], KW = g[GKW], OH = g[GOH], OW = g[GOW]; \
        int64_t L = OH * OW;                                                                      \
        int64_t work = C * KH * KW * nb * L;                                                      \
        _Pragma("omp parallel for schedule(static) if (work > GRAIN)")                          \
        for (int64_t sc = 0; sc < nb * C; sc++) {                                                 \
            int64_t s = sc / C, c = sc % C;                                                       \
            T *xp = x + ((n0 + s) * C + c) * H * W;                                               \
            for (int64_t i = 0; i < KH; i++)                                                      \
                for (int64_t j = 0; j < KW; j++) {                                                \
                    const T *cp = cols + ((c * KH + i) * KW + j) * nb * L + s * L;                \
                    int64_t SW = g[GSW], w0 = -g[GPW] + j * g[GDW], lo, hi;                       \
                    ow_range(w0, SW, W, OW, &lo, &hi);                                            \
                    for (int64_t oh = 0; oh < OH; oh++) {                                         \
                        int64_t h = oh * g[GSH] - g[GPH] + i * g[GDH];                            \
                        if (h < 0 || h >= H) continue;                                            \
                        T *dst = xp + h * W;                                                      \
                        const T *src = cp + oh * OW;                                              \
                        if (SW == 1) {                                                            \
                            T *d = dst + lo + w0;                                                 \
                            const T *q = src + lo;                                                \
                            for (int64_t k = 0; k < hi - lo; k++) d[k] += q[k];                   \
                        } else {                                                                  \
                            for (int64_t ow = lo; ow < hi; ow++) dst[ow * SW + w0] += src[ow];    \
                        }                                                                         \
                    }                                                                             \
                }                                                                                 \
        }                                                                                         \
    }                                                                                             \
    /* (nb, O, L) <-> (O, nb*L) */                                                               \
    static void to_rows_##sfx(const T *y, T *t, int64_t nb, int64_t O, int64_t L) {              \
        _Pragma("omp parallel for schedule(static) if (nb * O * L > GRAIN)")                    \
        for (int64_t so = 0; so < nb * O; so++) {                                                 \
            int64_t s = so / O, o = so % O;                                                       \
            memcpy(t + o * nb * L + s * L, y + so * L, (size_t)L * sizeof(T));                    \
        }                                                                                         \
    }                                                                                             \
    /* The per-sample scheme (conv_per_sample): each thread unfolds one sample at a time into \
     * its own columns, small enough to stay in its L2 cache, and multiplies them with a     \
     * single-threaded GEMM straight into the sample's part of the result: no columns buffer \
     * the size of the batch, no reordering of the output. which: 0 forward (a = x, b = w,   \
     * y = out), 1 backward input (a = gy, b = w, gx = out), 2 backward weight (a = x,       \
     * b = gy, gw = out: each thread sums into its own block, added up at the end). */       \
    static int conv_ps_##sfx(int which, const int64_t *g, const T *a, const T *b, const T *bias, T *out) { \
        int64_t N = g[GN], O = g[GO], G = g[GG], L = g[GOH] * g[GOW];                             \
        int64_t CK = g[GC] / G * g[GKH] * g[GKW], Og = O / G, X = g[GC] * g[GH] * g[GW];          \
        int nt = conv_threads(g);                                                                 \
        T *cols = malloc((size_t)nt * (size_t)(CK * G * L) * sizeof(T));                          \
        T *acc = which == 2 ? calloc((size_t)nt * (size_t)(O * CK), sizeof(T)) : NULL;            \
        if (!cols || (which == 2 && !acc)) {                                                      \
            free(cols);                                                                           \
            free(acc);                                                                            \
            return PTL_ERR_ALLOC;                                                                 \
        }                                                                                         \
        int prev = ptl_blas_serial_begin();                                                       \
        _Pragma("omp parallel num_threads(nt)")                                                   \
        {                                                                                         \
            int t = omp_get_thread_num();                                                         \
            T *c = cols + (int64_t)t * CK * G * L;                                                \
            _Pragma("omp for schedule(static)")                                                   \
            for (int64_t n = 0; n < N; n++) {                                                     \
                if (which == 0) {                                                                 \
                    im2col_##sfx(g, a, n, 1, c);                                                  \
                    T *yn = out + n * O * L;                                                      \
                    for (int64_t gi = 0; gi < G; gi++)                                            \
                        GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)Og, (blasint)L,  \
                             (blasint)CK, 1, b + gi * Og * CK, (blasint)CK, c + gi * CK * L,      \
                             (blasint)L, 0, yn + gi * Og * L, (blasint)L);                        \
                    if (bias)                                                                     \
                        for (int64_t o = 0; o < O; o++) {                                         \
                            T bv = bias[o], *yp = yn + o * L;                                     \
                            for (int64_t l = 0; l < L; l++) yp[l] += bv;                          \
                        }                                                                         \
                } else if (which == 1) {                                                          \
                    for (int64_t gi = 0; gi < G; gi++)                                            \
                        GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)CK, (blasint)L,    \
                             (blasint)Og, 1, b + gi * Og * CK, (blasint)CK, a + n * O * L + gi * Og * L, \
                             (blasint)L, 0, c + gi * CK * L, (blasint)L);                         \
                    memset(out + n * X, 0, (size_t)X * sizeof(T));                                \
                    col2im_##sfx(g, c, n, 1, out);                                                \
                } else {                                                                          \
                    T *gwt = acc + (int64_t)t * O * CK;                                           \
                    im2col_##sfx(g, a, n, 1, c);                                                  \
                    for (int64_t gi = 0; gi < G; gi++)                                            \
                        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)Og, (blasint)CK,   \
                             (blasint)L, 1, b + n * O * L + gi * Og * L, (blasint)L, c + gi * CK * L, \
                             (blasint)L, 1, gwt + gi * Og * CK, (blasint)CK);                     \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        ptl_blas_serial_end(prev);                                                                \
        if (which == 2)                                                                           \
            for (int64_t k = 0; k < O * CK; k++) {                                                \
                T s = 0;                                                                          \
                for (int t = 0; t < nt; t++) s += acc[(int64_t)t * O * CK + k];                   \
                out[k] = s;                                                                       \
            }                                                                                     \
        free(cols);                                                                               \
        free(acc);                                                                                \
        return PTL_OK;                                                                            \
    }                                                                                             \
    static int conv_fwd_##sfx(const int64_t *g, const T *x, const T *w, const T *b, T *y) {       \
        if (conv_per_sample(g, sizeof(T))) return conv_ps_##sfx(0, g, x, w, b, y);                    \
        int64_t N = g[GN], O = g[GO], G = g[GG], L = g[GOH] * g[GOW];                             \
        int64_t CK = g[GC] / G * g[GKH] * g[GKW], Og = O / G;                                     \
        int64_t nb = conv_chunk(g);                                                               \
        if (N == 0 || O == 0 || L == 0) return PTL_OK;                                            \
        if (CK == 0) {                                                                            \
            for (int64_t k = 0; k < N * O * L; k++) y[k] = b ? b[(k / L) % O] : (T)0;             \
            return PTL_OK;                                                                        \
        }                                                                                         \
        T *cols = malloc((size_t)(CK * G) * nb * L * sizeof(T));                                  \
        T *tmp = nb > 1 ? malloc((size_t)O * nb * L * sizeof(T)) : NULL;                          \
        if (!cols || (nb > 1 && !tmp)) {                                                          \
            free(cols);                                                                           \
            free(tmp);                                                                            \
            return PTL_ERR_ALLOC;                                                                 \
        }                                                                                         \
        for (int64_t n0 = 0; n0 < N; n0 += nb) {                                                  \
            int64_t m = N - n0 < nb ? N - n0 : nb;                                                \
            im2col_##sfx(g, x, n0, m, cols);                                                      \
            T *dst = m > 1 ? tmp : y + n0 * O * L;                                                \
            for (int64_t gi = 0; gi < G; gi++)                                                    \
                GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)Og, (blasint)(m * L),    \
                     (blasint)CK, 1, w + gi * Og * CK, (blasint)CK, cols + gi * CK * m * L,       \
                     (blasint)(m * L), 0, dst + gi * Og * m * L, (blasint)(m * L));               \
            T *yc = y + n0 * O * L;                                                               \
            _Pragma("omp parallel for schedule(static) if (m * O * L > GRAIN)")                 \
            for (int64_t so = 0; so < m * O; so++) {                                              \
                int64_t s = so / O, o = so % O;                                                   \
                T *yp = yc + so * L;                                                              \
                if (m > 1) memcpy(yp, tmp + o * m * L + s * L, (size_t)L * sizeof(T));            \
                if (b) {                                                                          \
                    T bv = b[o];                                                                  \
                    for (int64_t l = 0; l < L; l++) yp[l] += bv;                                  \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        free(cols);                                                                               \
        free(tmp);                                                                                \
        return PTL_OK;                                                                            \
    }                                                                                             \
    static int conv_bwd_input_##sfx(const int64_t *g, const T *gy, const T *w, T *gx) {           \
        if (conv_per_sample(g, sizeof(T))) return conv_ps_##sfx(1, g, gy, w, NULL, gx);           \
        int64_t N = g[GN], O = g[GO], G = g[GG], L = g[GOH] * g[GOW];                             \
        int64_t CK = g[GC] / G * g[GKH] * g[GKW], Og = O / G;                                     \
        int64_t nb = conv_chunk(g);                                                               \
        memset(gx, 0, (size_t)(N * g[GC] * g[GH] * g[GW]) * sizeof(T));                           \
        if (N == 0 || CK == 0 || L == 0) return PTL_OK;                                           \
        T *cols = malloc((size_t)(CK * G) * nb * L * sizeof(T));                                  \
        T *tmp = nb > 1 ? malloc((size_t)(O > 0 ? O : 1) * nb * L * sizeof(T)) : NULL;            \
        if (!cols || (nb > 1 && !tmp)) {                                                          \
            free(cols);                                                                           \
            free(tmp);                                                                            \
            return PTL_ERR_ALLOC;                                                                 \
        }                                                                                         \
        for (int64_t n0 = 0; n0 < N; n0 += nb) {                                                  \
            int64_t m = N - n0 < nb ? N - n0 : nb;                                                \
            const T *src = gy + n0 * O * L;                                                       \
            if (m > 1) {                                                                          \
                to_rows_##sfx(src, tmp, m, O, L);                                                 \
                src = tmp;                                                                        \
            }                                                                                     \
            for (int64_t gi = 0; gi < G; gi++)                                                    \
                GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)CK, (blasint)(m * L),      \
                     (blasint)Og, 1, w + gi * Og * CK, (blasint)CK, src + gi * Og * m * L,        \
                     (blasint)(m * L), 0, cols + gi * CK * m * L, (blasint)(m * L));              \
            col2im_##sfx(g, cols, n0, m, gx);                                                     \
        }                                                                                         \
        free(cols);                                                                               \
        free(tmp);                                                                                \
        return PTL_OK;                                                                            \
    }                                                                                             \
    static int conv_bwd_weight_##sfx(const int64_t *g, const T *x, const T *gy, T *gw) {          \
        if (conv_per_sample(g, sizeof(T))) return conv_ps_##sfx(2, g, x, gy, NULL, gw);           \
        int64_t N = g[GN], O = g[GO], G = g[GG], L = g[GOH] * g[GOW];                             \
        int64_t CK = g[GC] / G * g[GKH] * g[GKW], Og = O / G;                                     \
        int64_t nb = conv_chunk(g);                                                               \
        memset(gw, 0, (size_t)(O * CK) * sizeof(T));                                              \
        if (N == 0 || CK == 0 || L == 0 || O == 0) return PTL_OK;                                 \
        T *cols = malloc((size_t)(CK * G) * nb * L * sizeof(T));                                  \
        T *tmp = nb > 1 ? malloc((size_t)O * nb * L * sizeof(T)) : NULL;                          \
        if (!cols || (nb > 1 && !tmp)) {                                                          \
            free(cols);                                                                           \
            free(tmp);                                                                            \
            return PTL_ERR_ALLOC;                                                                 \
        }                                                                                         \
        for (int64_t n0 = 0; n0 < N; n0 += nb) {                                                  \
            int64_t m = N - n0 < nb ? N - n0 : nb;                                                \
            const T *src = gy + n0 * O * L;                                                       \
            if (m > 1) {                                                                          \
                to_rows_##sfx(src, tmp, m, O, L);                                                 \
                src = tmp;                                                                        \
            }                                                                                     \
            im2col_##sfx(g, x, n0, m, cols);                                                      \
            for (int64_t gi = 0; gi < G; gi++)                                                    \
                GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)Og, (blasint)CK,           \
                     (blasint)(m * L), 1, src + gi * Og * m * L, (blasint)(m * L),                \
                     cols + gi * CK * m * L, (blasint)(m * L), 1, gw + gi * Og * CK, (blasint)CK); \
        }                                                                                         \
        free(cols);                                                                               \
        free(tmp);                                                                                \
        return PTL_OK;                                                                            \
    }

/* The transposed convolution: the core convolution's input gradient (y is the core's
 * input), plus the bias per channel of y. */
#define DEFINE_CONV_TRANSPOSED(T, sfx)                                                            \
    static int conv_transposed_##sfx(const int64_t *g, const T *x, const T *w, const T *b, T *y) { \
        int st = conv_bwd_input_##sfx(g, x, w, y);                                                \
        if (st != PTL_OK || !b) return st;                                                        \
        int64_t C = g[GC], HW = g[GH] * g[GW];                                                    \
        _Pragma("omp parallel for schedule(static) if (g[GN] * C * HW > GRAIN)")                 \
        for (int64_t nc = 0; nc < g[GN] * C; nc++) {                                              \
            T bv = b[nc % C], *yp = y + nc * HW;                                                  \
            for (int64_t l = 0; l < HW; l++) yp[l] += bv;                                         \
        }                                                                                         \
        return PTL_OK;                                                                            \
    }

DEFINE_CONV(float, f32, ptl_sgemm)
DEFINE_CONV(double, f64, ptl_dgemm)
DEFINE_CONV_TRANSPOSED(float, f32)
DEFINE_CONV_TRANSPOSED(double, f64)

/* which: 0 forward (a = x, b = w, c = bias or 0, d = y = conv(x, w) + bias), 1 backward
 * input (a = gy, b = w, c = gx), 2 backward weight (a = x, b = gy, c = gw), 3 transposed
 * forward (a = x, b = w, c = bias or 0, d = y), the geometry being the core convolution's
 * whose input y is. */
int ptl_conv2d(int which, int dtype, const int64_t *g, intptr_t a, intptr_t b, intptr_t c, intptr_t d) {
    if (!conv_geometry_ok(g)) return PTL_ERR_ARG;
    if (dtype == PTL_F32) {
        switch (which) {
        case 0: return conv_fwd_f32(g, (const float *)a, (const float *)b, (const float *)c, (float *)d);
        case 1: return conv_bwd_input_f32(g, (const float *)a, (const float *)b, (float *)c);
        case 2: return conv_bwd_weight_f32(g, (const float *)a, (const float *)b, (float *)c);
        case 3: return conv_transposed_f32(g, (const float *)a, (const float *)b, (const float *)c, (float *)d);
        }
    } else if (dtype == PTL_F64) {
        switch (which) {
        case 0: return conv_fwd_f64(g, (const double *)a, (const double *)b, (const double *)c, (double *)d);
        case 1: return conv_bwd_input_f64(g, (const double *)a, (const double *)b, (double *)c);
        case 2: return conv_bwd_weight_f64(g, (const double *)a, (const double *)b, (double *)c);
        case 3: return conv_transposed_f64(g, (const double *)a, (const double *)b, (const double *)c,
                                           (double *)d);
        }
    } else {
        return PTL_ERR_DTYPE;
    }
    return PTL_ERR_ARG;
}

/* ---- nll_loss ---------------------------------------------------------------------------
 * x is (N, C, D) contiguous: D = 1 for (N, C) input, H * W for nll_loss2d. The target is
 * (N, D), int64 or uint8 (t_u8); the weight (C) or 0. reduction: 0 none (out is (N, D)),
 * 1 mean, 2 sum (out is one value). total_weight gets the summed weight of the targets that
 * count (0 for reduction none, as PyTorch). Targets are checked before anything is
 * written: one outside [0, C) that is not ignore_index comes back in *bad (PTL_ERR_INDEX). */

static inline int64_t nll_target(const void *t, int t_u8, int64_t i) {
    return t_u8 ? (int64_t)((const uint8_t *)t)[i] : ((const int64_t *)t)[i];
}

static int nll_check_targets(const void *t, int t_u8, int64_t n, int64_t C, int64_t ignore, int64_t *bad) {
    for (int64_t i = 0; i < n; i++) {
        int64_t c = nll_target(t, t_u8, i);
        if (c != ignore && (c < 0 || c >= C)) {
            *bad = c;
            return PTL_ERR_INDEX;
        }
    }
    return PTL_OK;
}

#define DEFINE_NLL(T, sfx)                                                                        \
    static void nll_fwd_##sfx(const T *x, const void *t, int t_u8, const T *w, int64_t N, int64_t C, \
                              int64_t D, int reduction, int64_t ignore, T *out, T *total) {        \
        int64_t n = N * D;                                                                        \
        if (reduction == 0) {                                                                     \
            _Pragma("omp parallel for schedule(static) if (n > GRAIN)")                          \
            for (int64_t i = 0; i < n; i++) {                                                     \
                int64_t c = nll_target(t, t_u8, i), b = i / D, d = i % D;                         \
                out[i] = c == ignore ? (T)0 : -(w ? w[c] : (T)1) * x[(b * C + c) * D + d];        \
            }                                                                                     \
            *total = 0;                                                                           \
            return;                                                                               \
        }                                                                                         \
        double s = 0, tw = 0;                                                                     \
        _Pragma("omp parallel for schedule(static) reduction(+ : s, tw) if (n > GRAIN)")         \
        for (int64_t i = 0; i < n; i++) {                                                         \
            int64_t c = nll_target(t, t_u8, i), b = i / D, d = i % D;                             \
            if (c == ignore) continue;                                                            \
            double wc = w ? (double)w[c] : 1.0;                                                   \
            s -= wc * (double)x[(b * C + c) * D + d];                                             \
            tw += wc;                                                                             \
        }                                                                                         \
        *out = (T)(reduction == 1 ? s / tw : s);                                                  \
        *total = (T)tw;                                                                           \
    }                                                                                             \
    /* gx = 0 but at each counted target: -w[c] * g (g[i] for none, g / total for mean) */     \
    static void nll_bwd_##sfx(const T *g, const void *t, int t_u8, const T *w, int64_t N, int64_t C, \
                              int64_t D, int reduction, int64_t ignore, const T *total, T *gx) {    \
        int64_t n = N * D;                                                                        \
        memset(gx, 0, (size_t)(n * C) * sizeof(T));                                              \
        T scale = reduction == 1 ? g[0] / total[0] : g[0];                                        \
        _Pragma("omp parallel for schedule(static) if (n > GRAIN)")                              \
        for (int64_t i = 0; i < n; i++) {                                                         \
            int64_t c = nll_target(t, t_u8, i), b = i / D, d = i % D;                             \
            if (c == ignore) continue;                                                            \
            gx[(b * C + c) * D + d] = -(w ? w[c] : (T)1) * (reduction == 0 ? g[i] : scale);       \
        }                                                                                         \
    }

DEFINE_NLL(float, f32)
DEFINE_NLL(double, f64)

int ptl_nll_loss(int backward, int dtype, intptr_t x_or_g, intptr_t target, int t_u8, intptr_t weight, int64_t N,
                 int64_t C, int64_t D, int reduction, int64_t ignore, intptr_t out, intptr_t total, int64_t *bad) {
    if (N < 0 || C < 0 || D < 0 || reduction < 0 || reduction > 2) return PTL_ERR_ARG;
    int st = nll_check_targets((const void *)target, t_u8, N * D, C, ignore, bad);
    if (st != PTL_OK) return st;
    const void *t = (const void *)target;
    if (dtype == PTL_F32) {
        if (backward)
            nll_bwd_f32((const float *)x_or_g, t, t_u8, (const float *)weight, N, C, D, reduction, ignore,
                        (const float *)total, (float *)out);
        else
            nll_fwd_f32((const float *)x_or_g, t, t_u8, (const float *)weight, N, C, D, reduction, ignore,
                        (float *)out, (float *)total);
    } else if (dtype == PTL_F64) {
        if (backward)
            nll_bwd_f64((const double *)x_or_g, t, t_u8, (const double *)weight, N, C, D, reduction, ignore,
                        (const double *)total, (double *)out);
        else
            nll_fwd_f64((const double *)x_or_g, t, t_u8, (const double *)weight, N, C, D, reduction, ignore,
                        (double *)out, (double *)total);
    } else {
        return PTL_ERR_DTYPE;
    }
    return PTL_OK;
}

/* ---- pooling ---------------------------------------------------------------------------
 * Geometry p[]: NC, H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW. Planes (one per batch
 * item and channel) are independent and run in parallel. */

enum { PNC, PH_, PW_, POH, POW, PKH, PKW, PSH, PSW, PPH, PPW, PDH, PDW, P_LEN };

static int pool_geometry_ok(const int64_t *p) {
    for (int k = 0; k < P_LEN; k++)
        if (p[k] < 0) return 0;
    return p[PSH] >= 1 && p[PSW] >= 1 && p[PDH] >= 1 && p[PDW] >= 1;
}

#define DEFINE_POOL(T, sfx)                                                                       \
    static void maxpool_fwd_##sfx(const int64_t *p, const T *x, T *y, int64_t *idx) {              \
        int64_t H = p[PH_], W = p[PW_], OH = p[POH], OW = p[POW];                                 \
        _Pragma("omp parallel for schedule(static) if (p[PNC] * OH * OW * p[PKH] * p[PKW] > GRAIN)") \
        for (int64_t pl = 0; pl < p[PNC]; pl++) {                                                 \
            const T *xp = x + pl * H * W;                                                         \
            for (int64_t oh = 0; oh < OH; oh++)                                                   \
                for (int64_t ow = 0; ow < OW; ow++) {                                             \
                    int64_t h0 = oh * p[PSH] - p[PPH], w0 = ow * p[PSW] - p[PPW];                 \
                    T m = -INFINITY;                                                              \
                    int64_t mi = -1;                                                              \
                    for (int64_t i = 0; i < p[PKH]; i++) {                                        \
                        int64_t h = h0 + i * p[PDH];                                              \
                        if (h < 0 || h >= H) continue;                                            \
                        for (int64_t j = 0; j < p[PKW]; j++) {                                    \
                            int64_t w = w0 + j * p[PDW];                                          \
                            if (w < 0 || w >= W) continue;                                        \
                            T v = xp[h * W + w];                                                  \
                            if (mi < 0 || v > m || (v != v && m == m)) {                          \
                                m = v;                                                            \
                                mi = h * W + w;                                                   \
                            }                                                                     \
                        }                                                                         \
                    }                                                                             \
                    y[(pl * OH + oh) * OW + ow] = m;                                              \
                    idx[(pl * OH + oh) * OW + ow] = mi;                                           \
                }                                                                                 \
        }                                                                                         \
    }                                                                                             \
    static void maxpool_bwd_##sfx(const int64_t *p, const T *gy, const int64_t *idx, T *gx) {      \
        int64_t HW = p[PH_] * p[PW_], L = p[POH] * p[POW];                                        \
        memset(gx, 0, (size_t)(p[PNC] * HW) * sizeof(T));                                         \
        _Pragma("omp parallel for schedule(static) if (p[PNC] * L > GRAIN)")                    \
        for (int64_t pl = 0; pl < p[PNC]; pl++)                                                   \
            for (int64_t l = 0; l < L; l++) {                                                     \
                int64_t k = idx[pl * L + l];                                                      \
                if (k >= 0 && k < HW) gx[pl * HW + k] += gy[pl * L + l];                          \
            }                                                                                     \
    }                                                                                             \
    /* the divisor of one window: divisor_override, or the window size clipped to the      \
     * padded input (count_include_pad) or to the input itself */                             \
    static void avgpool_##sfx(const int64_t *p, const T *src, T *dst, int backward, int incl,     \
                              int64_t dov) {                                                      \
        int64_t H = p[PH_], W = p[PW_], OH = p[POH], OW = p[POW];                                 \
        if (backward) memset(dst, 0, (size_t)(p[PNC] * H * W) * sizeof(T));                       \
        _Pragma("omp parallel for schedule(static) if (p[PNC] * OH * OW * p[PKH] * p[PKW] > GRAIN)") \
        for (int64_t pl = 0; pl < p[PNC]; pl++)                                                   \
            for (int64_t oh = 0; oh < OH; oh++)                                                   \
                for (int64_t ow = 0; ow < OW; ow++) {                                             \
                    int64_t hs = oh * p[PSH] - p[PPH], ws = ow * p[PSW] - p[PPW];                 \
                    int64_t he = hs + p[PKH], we = ws + p[PKW];                                   \
                    if (he > H + p[PPH]) he = H + p[PPH];                                         \
                    if (we > W + p[PPW]) we = W + p[PPW];                                         \
                    int64_t pool = (he - hs) * (we - ws);                                         \
                    if (hs < 0) hs = 0;                                                           \
                    if (ws < 0) ws = 0;                                                           \
                    if (he > H) he = H;                                                           \
                    if (we > W) we = W;                                                           \
                    int64_t div = dov ? dov : (incl ? pool : (he - hs) * (we - ws));              \
                    int64_t o = (pl * OH + oh) * OW + ow;                                         \
                    if (!backward) {                                                              \
                        double s = 0;                                                             \
                        for (int64_t h = hs; h < he; h++)                                         \
                            for (int64_t w = ws; w < we; w++) s += src[(pl * H + h) * W + w];     \
                        dst[o] = div ? (T)(s / div) : (T)NAN;                                     \
                    } else {                                                                      \
                        T v = div ? src[o] / (T)div : (T)NAN;                                     \
                        for (int64_t h = hs; h < he; h++)                                         \
                            for (int64_t w = ws; w < we; w++) dst[(pl * H + h) * W + w] += v;     \
                    }                                                                             \
                }                                                                                 \
    }                                                                                             \
    /* adaptive: window [floor(o*I/O), ceil((o+1)*I/O)) */                                       \
    static void adaptive_avg_##sfx(const int64_t *p, const T *src, T *dst, int backward) {        \
        int64_t H = p[PH_], W = p[PW_], OH = p[POH], OW = p[POW];                                 \
        if (backward) memset(dst, 0, (size_t)(p[PNC] * H * W) * sizeof(T));                       \
        _Pragma("omp parallel for schedule(static) if (p[PNC] * H * W > GRAIN)")                \
        for (int64_t pl = 0; pl < p[PNC]; pl++)                                                   \
            for (int64_t oh = 0; oh < OH; oh++) {                                                 \
                int64_t hs = oh * H / OH, he = ((oh + 1) * H + OH - 1) / OH;                      \
                for (int64_t ow = 0; ow < OW; ow++) {                                             \
                    int64_t ws = ow * W / OW, we = ((ow + 1) * W + OW - 1) / OW;                  \
                    int64_t div = (he - hs) * (we - ws), o = (pl * OH + oh) * OW + ow;            \
                    if (!backward) {                                                              \
                        double s = 0;                                                             \
                        for (int64_t h = hs; h < he; h++)                                         \
                            for (int64_t w = ws; w < we; w++) s += src[(pl * H + h) * W + w];     \
                        dst[o] = (T)(s / div);                                                    \
                    } else {                                                                      \
                        T v = src[o] / (T)div;                                                    \
                        for (int64_t h = hs; h < he; h++)                                         \
                            for (int64_t w = ws; w < we; w++) dst[(pl * H + h) * W + w] += v;     \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
    }

DEFINE_POOL(float, f32)
DEFINE_POOL(double, f64)

/* which: 0 max forward (a = x, b = y, c = indices), 1 max backward (a = gy, c = indices,
 * b = gx), 2 avg forward (a = x, b = y), 3 avg backward (a = gy, b = gx), 4 adaptive avg
 * forward, 5 adaptive avg backward. flags: count_include_pad; dov: divisor_override (0 none). */
int ptl_pool2d(int which, int dtype, const int64_t *p, intptr_t a, intptr_t b, intptr_t c, int flags, int64_t dov) {
    if (!pool_geometry_ok(p) || which < 0 || which > 5) return PTL_ERR_ARG;
    if ((which == 4 || which == 5) && ((p[POH] == 0 && p[PH_] > 0) || (p[POW] == 0 && p[PW_] > 0)))
        return PTL_ERR_ARG;
    if (dtype == PTL_F32) {
        switch (which) {
        case 0: maxpool_fwd_f32(p, (const float *)a, (float *)b, (int64_t *)c); break;
        case 1: maxpool_bwd_f32(p, (const float *)a, (const int64_t *)c, (float *)b); break;
        case 2: avgpool_f32(p, (const float *)a, (float *)b, 0, flags, dov); break;
        case 3: avgpool_f32(p, (const float *)a, (float *)b, 1, flags, dov); break;
        case 4: adaptive_avg_f32(p, (const float *)a, (float *)b, 0); break;
        case 5: adaptive_avg_f32(p, (const float *)a, (float *)b, 1); break;
        }
    } else if (dtype == PTL_F64) {
        switch (which) {
        case 0: maxpool_fwd_f64(p, (const double *)a, (double *)b, (int64_t *)c); break;
        case 1: maxpool_bwd_f64(p, (const double *)a, (const int64_t *)c, (double *)b); break;
        case 2: avgpool_f64(p, (const double *)a, (double *)b, 0, flags, dov); break;
        case 3: avgpool_f64(p, (const double *)a, (double *)b, 1, flags, dov); break;
        case 4: adaptive_avg_f64(p, (const double *)a, (double *)b, 0); break;
        case 5: adaptive_avg_f64(p, (const double *)a, (double *)b, 1); break;
        }
    } else {
        return PTL_ERR_DTYPE;
    }
    return PTL_OK;
}

/* ---- layer normalisation ----------------------------------------------------------------
 * x is (R, M) contiguous; each row is normalised with its own mean and biased variance
 * (two passes in double), then scaled by w and shifted by b (length M; either may be 0).
 * mean and rstd (length R) are written too. */

#define DEFINE_LAYER_NORM(T, sfx)                                                                 \
    static void layer_norm_##sfx(const T *x, const T *w, const T *b, T *y, T *mean, T *rstd,      \
                                 int64_t R, int64_t M, double eps) {                              \
        _Pragma("omp parallel for schedule(static) if (R * M > GRAIN)")                         \
        for (int64_t r = 0; r < R; r++) {                                                         \
            const T *xp = x + r * M;                                                              \
            T *yp = y + r * M;                                                                    \
            double s = 0, q = 0;                                                                  \
            for (int64_t k = 0; k < M; k++) s += xp[k];                                           \
            double mu = M ? s / M : NAN;                                                          \
            for (int64_t k = 0; k < M; k++) {                                                     \
                double d = xp[k] - mu;                                                            \
                q += d * d;                                                                       \
            }                                                                                     \
            double rs = 1.0 / sqrt((M ? q / M : NAN) + eps);                                      \
            mean[r] = (T)mu;                                                                      \
            rstd[r] = (T)rs;                                                                      \
            T m = (T)mu, sc = (T)rs;                                                              \
            for (int64_t k = 0; k < M; k++) {                                                     \
                T v = (xp[k] - m) * sc;                                                           \
                if (w) v *= w[k];                                                                 \
                if (b) v += b[k];                                                                 \
                yp[k] = v;                                                                        \
            }                                                                                     \
        }                                                                                         \
    }

DEFINE_LAYER_NORM(float, f32)
DEFINE_LAYER_NORM(double, f64)

int ptl_layer_norm(int dtype, intptr_t x, intptr_t w, intptr_t b, intptr_t y, intptr_t mean, intptr_t rstd,
                   int64_t R, int64_t M, double eps) {
    if (R < 0 || M < 0) return PTL_ERR_ARG;
    if (dtype == PTL_F32)
        layer_norm_f32((const float *)x, (const float *)w, (const float *)b, (float *)y, (float *)mean,
                       (float *)rstd, R, M, eps);
    else if (dtype == PTL_F64)
        layer_norm_f64((const double *)x, (const double *)w, (const double *)b, (double *)y, (double *)mean,
                       (double *)rstd, R, M, eps);
    else
        return PTL_ERR_DTYPE;
    return PTL_OK;
}
