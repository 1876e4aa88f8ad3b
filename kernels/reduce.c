/* reduce.c: reductions over a set of dimensions.
 *
 * One entry point, ptl_reduce(op, in, out, aux, arg). The caller (pytorchlite/_kernels/
 * reduce.py) describes the output in its keepdim shape: same ndim as the input, size 1
 * on every reduced dimension. From the two descriptors this file
 *
 *   1. splits the dimensions into kept (output) and reduced ones, drops size-1 dims,
 *      sorts each group by input stride and merges neighbours that are contiguous;
 *   2. picks a path:
 *        row    - the reduced dims are innermost: each output element is one (strided)
 *                 run of input, reduced by a vectorised "row" function with several
 *                 accumulators (sum over dim=1 of a row-major matrix);
 *        column - a kept dim is innermost: whole rows of that dim are accumulated into a
 *                 tile of per-column accumulators, so memory is read front to back
 *                 (sum over dim=0);
 *   3. splits the flattened (outputs x reduced elements) space evenly across OpenMP
 *      threads. A thread's first and last output may be shared with its neighbours:
 *      those partial states are merged in thread order afterwards, which keeps the
 *      "first occurrence" rule of max/argmax and makes a full reduction of one huge
 *      tensor use every core.
 *
 * Accumulation: floating sums in double, except contiguous float32 rows, which add
 * 512-element blocks in float32 lanes (16 values per lane) and the block totals in double
 * (the streaming speed of a float32 loop, the accuracy of a cascade); float64 rows use
 * blocked lanes so the error grows with the block count, not with n. Integer and bool
 * sums in int64 (wrapping). Variance: per-block two-pass (row path) or shifted sums
 * (column path), merged with Chan's formula.
 */
#include "ptl.h"

#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Operation codes; pytorchlite/_kernels/reduce.py holds the same table. */
enum {
    R_SUM = 0, R_PROD, R_MEAN, R_NANSUM, R_NANMEAN, R_COUNT_NZ, R_ALL, R_ANY, R_NORM, R_LOGSUMEXP,
    R_AMAX, R_AMIN, R_MAX, R_MIN, R_ARGMAX, R_ARGMIN, R_VAR, R_STD, R_NUM_OPS
};

/* What is accumulated (several ops share one: mean is a sum, all/any count nonzeros). */
enum {
    K_SUM = 0, K_PROD, K_NZ, K_NANSUM, K_ABS, K_SQ, K_POW, K_EXP, K_NANMEAN,
    K_MAX, K_MIN, K_MAXABS, K_MINABS, K_ARGMAX, K_ARGMIN, K_VAR, K_NUM
};

#define PTL_CLONES PTL_HOT     /* the clones of ptl.h */

/* ---- the state of one output element -------------------------------------------------
 * Fields by kind: sums use d (floating) or i (integer); var uses n (count), d (mean) and
 * m2 (sum of squared deviations); max/min use d or i and n as "has a value"; arg kinds
 * use d or i for the value and n for its index (-1: none yet); nanmean uses d and i (the
 * count); logsumexp's shift rides along in `shift`. */
typedef struct {
    double d;
    int64_t i;
    double m2;
    int64_t n;
    double shift;
} rstate;

typedef void (*row_fn)(const char *p, int64_t n, int64_t st, int64_t idx0, rstate *s, double parg);
typedef void (*rinit_fn)(rstate *s);
typedef void (*rcomb_fn)(rstate *a, const rstate *b);
/* Column accumulators are structure-of-arrays over a tile of L columns. `first` means
 * the tile is uninitialised: the first row initialises it. */
typedef void (*col_fn)(void *acc, int64_t L, const char *p, int64_t cst, int64_t rst, int64_t nrows,
                       int64_t r0, int first, const char *aux, int64_t ast, int adt, double parg);
typedef void (*ccomb_fn)(void *a, const void *b, int64_t L, int64_t na, int64_t nb);
typedef void (*cstate_fn)(const void *acc, int64_t L, int64_t j, int64_t nrows, rstate *s);

typedef struct {
    rinit_fn rinit;
    row_fn row;
    rcomb_fn rcomb;
    col_fn col;
    ccomb_fn ccomb;
    cstate_fn cstate;
    int acc_bytes; /* per column */
} kind_fns;

/* ---- loads: storage value -> the value type (int64 for integers, float or double) ---- */

#define CV_b8(v) ((int64_t)((v) != 0))
#define CV_u8(v) ((int64_t)(v))
#define CV_i8(v) ((int64_t)(v))
#define CV_i16(v) ((int64_t)(v))
#define CV_i32(v) ((int64_t)(v))
#define CV_i64(v) ((int64_t)(v))
#define CV_f16(v) ptl_h2f(v)
#define CV_bf16(v) ptl_bf2f(v)
#define CV_f32(v) (v)
#define CV_f64(v) (v)

/* X(suffix, storage type, value type, is floating) */
#define ALL_DTYPES(X)                                                                      \
    X(b8, uint8_t, int64_t, 0) X(u8, uint8_t, int64_t, 0) X(i8, int8_t, int64_t, 0)       \
    X(i16, int16_t, int64_t, 0) X(i32, int32_t, int64_t, 0) X(i64, int64_t, int64_t, 0)   \
    FLOAT_DTYPES(X)
#define FLOAT_DTYPES(X)                                                                    \
    X(f16, uint16_t, float, 1) X(bf16, uint16_t, float, 1) X(f32, float, float, 1)        \
    X(f64, double, double, 1)

static double load_as_double(const char *p, int dt) {
    switch (dt) {
        case PTL_BOOL: return *(const uint8_t *)p != 0;
        case PTL_U8: return *(const uint8_t *)p;
        case PTL_I8: return *(const int8_t *)p;
        case PTL_I16: return *(const int16_t *)p;
        case PTL_I32: return *(const int32_t *)p;
        case PTL_I64: return (double)*(const int64_t *)p;
        case PTL_F16: return ptl_h2f(*(const uint16_t *)p);
        case PTL_BF16: return ptl_bf2f(*(const uint16_t *)p);
        case PTL_F32: return *(const float *)p;
        default: return *(const double *)p;
    }
}

static void store_d(char *p, int dt, double v) {
    switch (dt) {
        case PTL_BOOL: *(uint8_t *)p = v != 0; break;
        case PTL_U8: *(uint8_t *)p = (uint8_t)(int64_t)v; break;
        case PTL_I8: *(int8_t *)p = (int8_t)(int64_t)v; break;
        case PTL_I16: *(int16_t *)p = (int16_t)(int64_t)v; break;
        case PTL_I32: *(int32_t *)p = (int32_t)(int64_t)v; break;
        case PTL_I64: *(int64_t *)p = (int64_t)v; break;
        case PTL_F16: *(uint16_t *)p = ptl_f2h((float)v); break;
        case PTL_BF16: *(uint16_t *)p = ptl_f2bf((float)v); break;
        case PTL_F32: *(float *)p = (float)v; break;
        default: *(double *)p = v; break;
    }
}

static void store_i(char *p, int dt, int64_t v) {
    switch (dt) {
        case PTL_BOOL: *(uint8_t *)p = v != 0; break;
        case PTL_U8: *(uint8_t *)p = (uint8_t)v; break;
        case PTL_I8: *(int8_t *)p = (int8_t)v; break;
        case PTL_I16: *(int16_t *)p = (int16_t)v; break;
        case PTL_I32: *(int32_t *)p = (int32_t)v; break;
        case PTL_I64: *(int64_t *)p = v; break;
        default: store_d(p, dt, (double)v); break;
    }
}

/* ---- hand-vectorised float32/float64 loops -----------------------------------------------
 * Written with explicit lanes because the compiler may not reorder floating additions
 * (no -ffast-math) and so would otherwise run one dependent add per element. Portable
 * versions use GCC vector extensions; on x86-64 an AVX2 version (intrinsics, compiled
 * with a target attribute) is picked at run time, since the build has no -march. */

typedef float v4f __attribute__((vector_size(16)));
typedef float v8f __attribute__((vector_size(32)));
typedef double v4d __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef int64_t v4l __attribute__((vector_size(32)));

/* a macro, not a function: passing 32-byte vectors by value draws an ABI note from GCC */
#define hsum4d(v) ({ v4d v_ = (v); (v_[0] + v_[2]) + (v_[1] + v_[3]); }) /* the order of hsum256d */

/* the last few elements (and short rows): four chains, so a 20-element row is not one
 * long dependent chain of additions */
#define DEF_SUM_TAIL(T)                                                                        \
    static inline double sum_tail_##T(const T *p, int64_t n) {                                 \
        double t0 = 0, t1 = 0, t2 = 0, t3 = 0;                                                 \
        int64_t i = 0;                                                                         \
        for (; i + 4 <= n; i += 4) {                                                           \
            t0 += p[i];                                                                        \
            t1 += p[i + 1];                                                                    \
            t2 += p[i + 2];                                                                    \
            t3 += p[i + 3];                                                                    \
        }                                                                                      \
        for (; i < n; i++) t0 += p[i];                                                         \
        return (t0 + t1) + (t2 + t3);                                                          \
    }
DEF_SUM_TAIL(float)
DEF_SUM_TAIL(double)
#define sum_tail(p, n) _Generic((p), const float *: sum_tail_float, float *: sum_tail_float, \
                                const double *: sum_tail_double, double *: sum_tail_double)(p, n)

/* float32: 32 float lanes within blocks of 512, each block total added in double. A lane
 * adds 16 values before it is flushed, so the error stays near 16 ulps of the block's
 * magnitude, and the loop runs at float32 width (converting every element to double
 * costs about 15% of the streaming bandwidth). The AVX2 version does the same
 * operations in the same order, so both give identical results. */
#define F32_BLOCK 512
static double sum_f32_generic(const float *p, int64_t n) {
    double total = 0;
    int64_t i = 0;
    while (i + 32 <= n) {
        int64_t end = i + F32_BLOCK <= n ? i + F32_BLOCK : n;
        v8f a0 = {0}, a1 = a0, a2 = a0, a3 = a0;
        for (; i + 32 <= end; i += 32) {
            v8f x0, x1, x2, x3;
            memcpy(&x0, p + i, 32);
            memcpy(&x1, p + i + 8, 32);
            memcpy(&x2, p + i + 16, 32);
            memcpy(&x3, p + i + 24, 32);
            a0 += x0;
            a1 += x1;
            a2 += x2;
            a3 += x3;
        }
        v8f t = (a0 + a1) + (a2 + a3);
        v4f lo = {t[0], t[1], t[2], t[3]}, hi = {t[4], t[5], t[6], t[7]};
        total += hsum4d(__builtin_convertvector(lo, v4d) + __builtin_convertvector(hi, v4d));
    }
    return total + sum_tail(p + i, n - i);
}

/* float64: 16 lanes per block of 1024, blocks added to the total, so rounding error
 * grows like (64 + n / 1024) ulps rather than like n. */
static double sum_f64_generic(const double *p, int64_t n) {
    double total = 0;
    int64_t i = 0;
    while (i + 16 <= n) {
        int64_t end = i + 1024 <= n ? i + 1024 : n;
        v4d a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
        for (; i + 16 <= end; i += 16) {
            v4d x0, x1, x2, x3;
            memcpy(&x0, p + i, 32);
            memcpy(&x1, p + i + 4, 32);
            memcpy(&x2, p + i + 8, 32);
            memcpy(&x3, p + i + 12, 32);
            a0 += x0;
            a1 += x1;
            a2 += x2;
            a3 += x3;
        }
        total += hsum4d((a0 + a1) + (a2 + a3));
    }
    return total + sum_tail(p + i, n - i);
}

/* sum of (x - mean)^2 over a block that is in cache (second pass of the two-pass var) */
static double sqdev_f32_generic(const float *p, int64_t n, double mean) {
    v4d a0 = {0, 0, 0, 0}, a1 = a0, m = {mean, mean, mean, mean};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v4f x0, x1;
        memcpy(&x0, p + i, 16);
        memcpy(&x1, p + i + 4, 16);
        v4d d0 = __builtin_convertvector(x0, v4d) - m, d1 = __builtin_convertvector(x1, v4d) - m;
        a0 += d0 * d0;
        a1 += d1 * d1;
    }
    double s = hsum4d(a0 + a1);
    for (; i < n; i++) {
        double d = p[i] - mean;
        s += d * d;
    }
    return s;
}

static double sqdev_f64_generic(const double *p, int64_t n, double mean) {
    v4d a0 = {0, 0, 0, 0}, a1 = a0, m = {mean, mean, mean, mean};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v4d x0, x1;
        memcpy(&x0, p + i, 32);
        memcpy(&x1, p + i + 4, 32);
        v4d d0 = x0 - m, d1 = x1 - m;
        a0 += d0 * d0;
        a1 += d1 * d1;
    }
    double s = hsum4d(a0 + a1);
    for (; i < n; i++) {
        double d = p[i] - mean;
        s += d * d;
    }
    return s;
}

/* Extremes of a contiguous float block; *nan is set when the block holds a NaN (the
 * caller then propagates it). `m = cmp ? x : m` lane-wise is a maxps/minps. */
#define DEF_EXTREME(NAME, T, VT, IVT, W, OP)                                                  \
    static T NAME(const T *p, int64_t n, int *nan) {                               \
        VT m0, m1;                                                                            \
        IVT bad = {0};                                                                        \
        int64_t i = 0;                                                                        \
        T m = p[0];                                                                           \
        if (n >= 2 * W) {                                                                     \
            memcpy(&m0, p, sizeof(VT));                                                       \
            memcpy(&m1, p + W, sizeof(VT));                                                   \
            bad |= (IVT)(m0 != m0) | (IVT)(m1 != m1);                                         \
            for (i = 2 * W; i + 2 * W <= n; i += 2 * W) {                                     \
                VT x0, x1;                                                                    \
                memcpy(&x0, p + i, sizeof(VT));                                               \
                memcpy(&x1, p + i + W, sizeof(VT));                                           \
                IVT c0 = (IVT)(x0 OP m0), c1 = (IVT)(x1 OP m1);                               \
                bad |= (IVT)(x0 != x0) | (IVT)(x1 != x1);                                     \
                m0 = (VT)(((IVT)x0 & c0) | ((IVT)m0 & ~c0));                                  \
                m1 = (VT)(((IVT)x1 & c1) | ((IVT)m1 & ~c1));                                  \
            }                                                                                 \
            m = m0[0];                                                                        \
            for (int k = 0; k < W; k++) {                                                     \
                if (m0[k] OP m) m = m0[k];                                                    \
                if (m1[k] OP m) m = m1[k];                                                    \
                if (bad[k]) *nan = 1;                                                         \
            }                                                                                 \
        }                                                                                     \
        for (; i < n; i++) {                                                                  \
            T x = p[i];                                                                       \
            if (x != x) *nan = 1;                                                             \
            if (x OP m) m = x;                                                                \
        }                                                                                     \
        return m;                                                                             \
    }
DEF_EXTREME(max_f32_generic, float, v8f, v8i, 8, >)
DEF_EXTREME(min_f32_generic, float, v8f, v8i, 8, <)
DEF_EXTREME(max_f64_generic, double, v4d, v4l, 4, >)
DEF_EXTREME(min_f64_generic, double, v4d, v4l, 4, <)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* no "fma": contracting a*b+c would round differently from the portable loops */
#define AVX2_FN __attribute__((target("avx2")))

/* PTL_DISABLE_AVX2=1 in the environment forces the portable loops (to test them on x86) */
static int cpu_has_avx2 = -1;
static inline int use_avx2(void) {
    if (cpu_has_avx2 < 0) {
        const char *off = getenv("PTL_DISABLE_AVX2");
        cpu_has_avx2 = !(off && *off && *off != '0') && __builtin_cpu_supports("avx2");
    }
    return cpu_has_avx2;
}

AVX2_FN static inline double hsum256d(__m256d v) {
    __m128d lo = _mm256_castpd256_pd128(v), hi = _mm256_extractf128_pd(v, 1);
    lo = _mm_add_pd(lo, hi);
    return _mm_cvtsd_f64(_mm_add_sd(lo, _mm_unpackhi_pd(lo, lo)));
}

AVX2_FN static double sum_f32_avx2(const float *p, int64_t n) {
    double total = 0;
    int64_t i = 0;
    while (i + 32 <= n) {
        int64_t end = i + F32_BLOCK <= n ? i + F32_BLOCK : n;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (; i + 32 <= end; i += 32) {
            a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i));
            a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + 8));
            a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + i + 16));
            a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + i + 24));
        }
        __m256 t = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
        total += hsum256d(_mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(t)),
                                        _mm256_cvtps_pd(_mm256_extractf128_ps(t, 1))));
    }
    return total + sum_tail(p + i, n - i);
}

AVX2_FN static double sum_f64_avx2(const double *p, int64_t n) {
    double total = 0;
    int64_t i = 0;
    while (i + 16 <= n) {
        int64_t end = i + 1024 <= n ? i + 1024 : n;
        __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
        for (; i + 16 <= end; i += 16) {
            a0 = _mm256_add_pd(a0, _mm256_loadu_pd(p + i));
            a1 = _mm256_add_pd(a1, _mm256_loadu_pd(p + i + 4));
            a2 = _mm256_add_pd(a2, _mm256_loadu_pd(p + i + 8));
            a3 = _mm256_add_pd(a3, _mm256_loadu_pd(p + i + 12));
        }
        total += hsum256d(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
    }
    return total + sum_tail(p + i, n - i);
}

AVX2_FN static double sqdev_f32_avx2(const float *p, int64_t n, double mean) {
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, m = _mm256_set1_pd(mean);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(p + i)), m);
        __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(p + i + 4)), m);
        a0 = _mm256_add_pd(a0, _mm256_mul_pd(d0, d0));
        a1 = _mm256_add_pd(a1, _mm256_mul_pd(d1, d1));
    }
    double s = hsum256d(_mm256_add_pd(a0, a1));
    for (; i < n; i++) {
        double d = p[i] - mean;
        s += d * d;
    }
    return s;
}

AVX2_FN static double sqdev_f64_avx2(const double *p, int64_t n, double mean) {
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, m = _mm256_set1_pd(mean);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256d d0 = _mm256_sub_pd(_mm256_loadu_pd(p + i), m);
        __m256d d1 = _mm256_sub_pd(_mm256_loadu_pd(p + i + 4), m);
        a0 = _mm256_add_pd(a0, _mm256_mul_pd(d0, d0));
        a1 = _mm256_add_pd(a1, _mm256_mul_pd(d1, d1));
    }
    double s = hsum256d(_mm256_add_pd(a0, a1));
    for (; i < n; i++) {
        double d = p[i] - mean;
        s += d * d;
    }
    return s;
}

/* maxps/minps drop a NaN operand, so NaNs are tracked on the side with an unordered
 * compare and the caller propagates them */
#define DEF_EXTREME_AVX2(NAME, T, VEC, W, LOAD, OPV, CMPUNORD, OR, MOVEMASK, STORE, OP)        \
    AVX2_FN static T NAME(const T *p, int64_t n, int *nan) {                                  \
        int64_t i = 0;                                                                        \
        T m = p[0];                                                                           \
        if (n >= 4 * W) {                                                                     \
            VEC m0 = LOAD(p), m1 = LOAD(p + W), m2 = LOAD(p + 2 * W), m3 = LOAD(p + 3 * W);   \
            /* an unordered compare of two vectors flags a NaN in either: half the compares */ \
            VEC bad = OR(CMPUNORD(m0, m1), CMPUNORD(m2, m3));                                 \
            for (i = 4 * W; i + 4 * W <= n; i += 4 * W) {                                     \
                VEC x0 = LOAD(p + i), x1 = LOAD(p + i + W), x2 = LOAD(p + i + 2 * W), x3 = LOAD(p + i + 3 * W); \
                bad = OR(bad, OR(CMPUNORD(x0, x1), CMPUNORD(x2, x3)));                        \
                m0 = OPV(x0, m0);                                                             \
                m1 = OPV(x1, m1);                                                             \
                m2 = OPV(x2, m2);                                                             \
                m3 = OPV(x3, m3);                                                             \
            }                                                                                 \
            if (MOVEMASK(bad)) *nan = 1;                                                      \
            T lanes[W];                                                                       \
            STORE(lanes, OPV(OPV(m0, m1), OPV(m2, m3)));                                      \
            m = lanes[0];                                                                     \
            for (int k = 1; k < W; k++)                                                       \
                if (lanes[k] OP m) m = lanes[k];                                              \
        }                                                                                     \
        for (; i < n; i++) {                                                                  \
            T x = p[i];                                                                       \
            if (x != x) *nan = 1;                                                             \
            if (x OP m) m = x;                                                                \
        }                                                                                     \
        return m;                                                                             \
    }
#define UNORD_PS(a, b) _mm256_cmp_ps(a, b, _CMP_UNORD_Q)
#define UNORD_PD(a, b) _mm256_cmp_pd(a, b, _CMP_UNORD_Q)
DEF_EXTREME_AVX2(max_f32_avx2, float, __m256, 8, _mm256_loadu_ps, _mm256_max_ps, UNORD_PS, _mm256_or_ps,
                 _mm256_movemask_ps, _mm256_storeu_ps, >)
DEF_EXTREME_AVX2(min_f32_avx2, float, __m256, 8, _mm256_loadu_ps, _mm256_min_ps, UNORD_PS, _mm256_or_ps,
                 _mm256_movemask_ps, _mm256_storeu_ps, <)
DEF_EXTREME_AVX2(max_f64_avx2, double, __m256d, 4, _mm256_loadu_pd, _mm256_max_pd, UNORD_PD, _mm256_or_pd,
                 _mm256_movemask_pd, _mm256_storeu_pd, >)
DEF_EXTREME_AVX2(min_f64_avx2, double, __m256d, 4, _mm256_loadu_pd, _mm256_min_pd, UNORD_PD, _mm256_or_pd,
                 _mm256_movemask_pd, _mm256_storeu_pd, <)
#define PICK(avx2, generic) (use_avx2() ? (avx2) : (generic))
#else
#define PICK(avx2, generic) (generic)
#endif

static double sum_f32_contig(const float *p, int64_t n) { return PICK(sum_f32_avx2, sum_f32_generic)(p, n); }
static double sum_f64_contig(const double *p, int64_t n) { return PICK(sum_f64_avx2, sum_f64_generic)(p, n); }
static double sqdev_f32_contig(const float *p, int64_t n, double mean) {
    return PICK(sqdev_f32_avx2, sqdev_f32_generic)(p, n, mean);
}
static double sqdev_f64_contig(const double *p, int64_t n, double mean) {
    return PICK(sqdev_f64_avx2, sqdev_f64_generic)(p, n, mean);
}
static float max_f32_contig(const float *p, int64_t n, int *nan) { return PICK(max_f32_avx2, max_f32_generic)(p, n, nan); }
static float min_f32_contig(const float *p, int64_t n, int *nan) { return PICK(min_f32_avx2, min_f32_generic)(p, n, nan); }
static double max_f64_contig(const double *p, int64_t n, int *nan) { return PICK(max_f64_avx2, max_f64_generic)(p, n, nan); }
static double min_f64_contig(const double *p, int64_t n, int *nan) { return PICK(min_f64_avx2, min_f64_generic)(p, n, nan); }

/* ---- sum-like kinds: acc += MAP(x) --------------------------------------------------- */

#define MAP_ID(x) (x)
#define MAP_NZ(x) ((int64_t)((x) != 0))
#define MAP_NAN0(x) ((x) != (x) ? 0.0 : (double)(x))
#define MAP_ABS(x) fabs((double)(x))
#define MAP_SQ(x) ((double)(x) * (double)(x))
#define MAP_POW(x) pow(fabs((double)(x)), parg)
#define MAP_EXP(x) exp((double)(x) - shift)

#define DEF_SUMK(KIND, SFX, ST, ACC_T, FIELD, MAP)                                               \
    PTL_CLONES static void row_##KIND##_##SFX(const char *p, int64_t n, int64_t st, int64_t idx0,  \
                                              rstate *s, double parg) {                          \
        (void)idx0; (void)parg;                                                                  \
        const double shift = s->shift; (void)shift;                                              \
        ACC_T a0 = 0, a1 = 0, a2 = 0, a3 = 0;                                                    \
        int64_t i = 0;                                                                           \
        if (st == (int64_t)sizeof(ST)) {                                                         \
            const ST *q = (const ST *)p;                                                         \
            for (; i + 4 <= n; i += 4) {                                                         \
                a0 += MAP(CV_##SFX(q[i]));                                                       \
                a1 += MAP(CV_##SFX(q[i + 1]));                                                   \
                a2 += MAP(CV_##SFX(q[i + 2]));                                                   \
                a3 += MAP(CV_##SFX(q[i + 3]));                                                   \
            }                                                                                    \
            for (; i < n; i++) a0 += MAP(CV_##SFX(q[i]));                                        \
        } else {                                                                                 \
            for (; i + 4 <= n; i += 4) {                                                         \
                a0 += MAP(CV_##SFX(*(const ST *)(p + i * st)));                                  \
                a1 += MAP(CV_##SFX(*(const ST *)(p + (i + 1) * st)));                            \
                a2 += MAP(CV_##SFX(*(const ST *)(p + (i + 2) * st)));                            \
                a3 += MAP(CV_##SFX(*(const ST *)(p + (i + 3) * st)));                            \
            }                                                                                    \
            for (; i < n; i++) a0 += MAP(CV_##SFX(*(const ST *)(p + i * st)));                   \
        }                                                                                        \
        s->FIELD += (a0 + a1) + (a2 + a3);                                                       \
    }                                                                                            \
    PTL_CLONES static void col_##KIND##_##SFX(void *accv, int64_t L, const char *p, int64_t cst,   \
                                              int64_t rst, int64_t nrows, int64_t r0, int first,  \
                                              const char *aux, int64_t ast, int adt, double parg) { \
        (void)r0; (void)aux; (void)ast; (void)adt; (void)parg;                                   \
        const double shift = 0; (void)shift;                                                     \
        ACC_T *restrict acc = (ACC_T *)accv;                                                     \
        int64_t r = 0;                                                                           \
        if (cst == (int64_t)sizeof(ST)) {                                                        \
            /* up to four rows per sweep: a quarter of the accumulator traffic (and a first   \
             * sweep that writes the tile instead of reading it) */                            \
            while (r < nrows) {                                                                  \
                int64_t k = nrows - r >= 4 ? 4 : nrows - r;                                      \
                const ST *restrict q0 = (const ST *)(p + r * rst);                               \
                const ST *restrict q1 = (const ST *)(p + (r + (k > 1)) * rst);                   \
                const ST *restrict q2 = (const ST *)(p + (r + (k > 2) * 2) * rst);               \
                const ST *restrict q3 = (const ST *)(p + (r + (k > 3) * 3) * rst);               \
                if (k == 4) {                                                                    \
                    if (first)                                                                   \
                        for (int64_t j = 0; j < L; j++)                                          \
                            acc[j] = (MAP(CV_##SFX(q0[j])) + MAP(CV_##SFX(q1[j]))) +             \
                                     (MAP(CV_##SFX(q2[j])) + MAP(CV_##SFX(q3[j])));              \
                    else                                                                         \
                        for (int64_t j = 0; j < L; j++)                                          \
                            acc[j] += (MAP(CV_##SFX(q0[j])) + MAP(CV_##SFX(q1[j]))) +            \
                                      (MAP(CV_##SFX(q2[j])) + MAP(CV_##SFX(q3[j])));             \
                } else if (k == 3) {                                                             \
                    if (first)                                                                   \
                        for (int64_t j = 0; j < L; j++) acc[j] = (MAP(CV_##SFX(q0[j])) + MAP(CV_##SFX(q1[j]))) + MAP(CV_##SFX(q2[j])); \
                    else                                                                         \
                        for (int64_t j = 0; j < L; j++) acc[j] += (MAP(CV_##SFX(q0[j])) + MAP(CV_##SFX(q1[j]))) + MAP(CV_##SFX(q2[j])); \
                } else if (k == 2) {                                                             \
                    if (first)                                                                   \
                        for (int64_t j = 0; j < L; j++) acc[j] = MAP(CV_##SFX(q0[j])) + MAP(CV_##SFX(q1[j])); \
                    else                                                                         \
                        for (int64_t j = 0; j < L; j++) acc[j] += MAP(CV_##SFX(q0[j])) + MAP(CV_##SFX(q1[j])); \
                } else {                                                                         \
                    if (first)                                                                   \
                        for (int64_t j = 0; j < L; j++) acc[j] = MAP(CV_##SFX(q0[j])); \
                    else                                                                         \
                        for (int64_t j = 0; j < L; j++) acc[j] += MAP(CV_##SFX(q0[j])); \
                }                                                                                \
                (void)q3;                                                                        \
                first = 0;                                                                       \
                r += k;                                                                          \
            }                                                                                    \
        } else {                                                                                 \
            if (first) {                                                                         \
                for (int64_t j = 0; j < L; j++) acc[j] = MAP(CV_##SFX(*(const ST *)(p + j * cst))); \
                r = 1;                                                                           \
            }                                                                                    \
            for (; r < nrows; r++) {                                                             \
                const char *q = p + r * rst;                                                     \
                for (int64_t j = 0; j < L; j++) acc[j] += MAP(CV_##SFX(*(const ST *)(q + j * cst))); \
            }                                                                                    \
        }                                                                                        \
    }

static void rinit_zero(rstate *s) { memset(s, 0, sizeof *s); }
static void rinit_one(rstate *s) { memset(s, 0, sizeof *s); s->d = 1; s->i = 1; }
static void rinit_arg(rstate *s) { memset(s, 0, sizeof *s); s->n = -1; }
static void rcomb_sum(rstate *a, const rstate *b) {
    a->d += b->d;
    a->i = (int64_t)((uint64_t)a->i + (uint64_t)b->i);
}
static void rcomb_prod(rstate *a, const rstate *b) {
    a->d *= b->d;
    a->i = (int64_t)((uint64_t)a->i * (uint64_t)b->i); /* integer products wrap, as in PyTorch */
}

static void ccomb_sum_d(void *a, const void *b, int64_t L, int64_t na, int64_t nb) {
    (void)na; (void)nb;
    double *x = (double *)a;
    const double *y = (const double *)b;
    for (int64_t j = 0; j < L; j++) x[j] += y[j];
}
static void ccomb_sum_i(void *a, const void *b, int64_t L, int64_t na, int64_t nb) {
    (void)na; (void)nb;
    int64_t *x = (int64_t *)a;
    const int64_t *y = (const int64_t *)b;
    for (int64_t j = 0; j < L; j++) x[j] = (int64_t)((uint64_t)x[j] + (uint64_t)y[j]);
}
static void ccomb_prod_d(void *a, const void *b, int64_t L, int64_t na, int64_t nb) {
    (void)na; (void)nb;
    double *x = (double *)a;
    const double *y = (const double *)b;
    for (int64_t j = 0; j < L; j++) x[j] *= y[j];
}
static void ccomb_prod_i(void *a, const void *b, int64_t L, int64_t na, int64_t nb) {
    (void)na; (void)nb;
    uint64_t *x = (uint64_t *)a;
    const uint64_t *y = (const uint64_t *)b;
    for (int64_t j = 0; j < L; j++) x[j] *= y[j];
}
static void cstate_d(const void *acc, int64_t L, int64_t j, int64_t nrows, rstate *s) {
    (void)L; (void)nrows;
    memset(s, 0, sizeof *s);
    s->d = ((const double *)acc)[j];
}
static void cstate_i(const void *acc, int64_t L, int64_t j, int64_t nrows, rstate *s) {
    (void)L; (void)nrows;
    memset(s, 0, sizeof *s);
    s->i = ((const int64_t *)acc)[j];
}

/* integer sums accumulate in uint64 so that overflow wraps (defined) like int64 in PyTorch */
#define DEF_SUM_ALL(SFX, ST, VT, ISF) DEF_SUM_##ISF(SFX, ST)
#define DEF_SUM_0(SFX, ST) DEF_SUMK(K_SUM, SFX, ST, uint64_t, i, (uint64_t)MAP_ID)
#define DEF_SUM_1(SFX, ST) DEF_SUMK(K_SUM, SFX, ST, double, d, (double)MAP_ID)
ALL_DTYPES(DEF_SUM_ALL)

#define DEF_NZ_ALL(SFX, ST, VT, ISF) DEF_SUMK(K_NZ, SFX, ST, int64_t, i, MAP_NZ)
ALL_DTYPES(DEF_NZ_ALL)

#define DEF_FLOAT_MAPS(SFX, ST, VT, ISF)                          \
    DEF_SUMK(K_NANSUM, SFX, ST, double, d, MAP_NAN0)              \
    DEF_SUMK(K_ABS, SFX, ST, double, d, MAP_ABS)                  \
    DEF_SUMK(K_SQ, SFX, ST, double, d, MAP_SQ)                    \
    DEF_SUMK(K_POW, SFX, ST, double, d, MAP_POW)
FLOAT_DTYPES(DEF_FLOAT_MAPS)

/* float32/float64 contiguous sums take the hand-vectorised loops */
static void row_sum_f32(const char *p, int64_t n, int64_t st, int64_t idx0, rstate *s, double parg) {
    if (st == 4) s->d += sum_f32_contig((const float *)p, n);
    else row_K_SUM_f32(p, n, st, idx0, s, parg);
}
static void row_sum_f64(const char *p, int64_t n, int64_t st, int64_t idx0, rstate *s, double parg) {
    if (st == 8) s->d += sum_f64_contig((const double *)p, n);
    else row_K_SUM_f64(p, n, st, idx0, s, parg);
}

/* ---- products ------------------------------------------------------------------------ */

#define DEF_PRODK(SFX, ST, ACC_T, FIELD)                                                          \
    static void row_K_PROD_##SFX(const char *p, int64_t n, int64_t st, int64_t idx0, rstate *s,  \
                                 double parg) {                                                  \
        (void)idx0; (void)parg;                                                                  \
        ACC_T a0 = 1, a1 = 1;                                                                    \
        int64_t i = 0;                                                                           \
        for (; i + 2 <= n; i += 2) {                                                             \
            a0 *= (ACC_T)CV_##SFX(*(const ST *)(p + i * st));                                    \
            a1 *= (ACC_T)CV_##SFX(*(const ST *)(p + (i + 1) * st));                              \
        }                                                                                        \
        if (i < n) a0 *= (ACC_T)CV_##SFX(*(const ST *)(p + i * st));                             \
        ACC_T cur = (ACC_T)s->FIELD;                                                             \
        cur *= a0 * a1;                                                                          \
        s->FIELD = cur;                                                                          \
    }                                                                                            \
    static void col_K_PROD_##SFX(void *accv, int64_t L, const char *p, int64_t cst, int64_t rst,  \
                                 int64_t nrows, int64_t r0, int first, const char *aux,          \
                                 int64_t ast, int adt, double parg) {                            \
        (void)r0; (void)aux; (void)ast; (void)adt; (void)parg;                                   \
        ACC_T *acc = (ACC_T *)accv;                                                              \
        int64_t r = 0;                                                                           \
        if (first) {                                                                             \
            for (int64_t j = 0; j < L; j++) acc[j] = (ACC_T)CV_##SFX(*(const ST *)(p + j * cst)); \
            r = 1;                                                                               \
        }                                                                                        \
        for (; r < nrows; r++) {                                                                 \
            const char *q = p + r * rst;                                                         \
            for (int64_t j = 0; j < L; j++) acc[j] *= (ACC_T)CV_##SFX(*(const ST *)(q + j * cst)); \
        }                                                                                        \
    }
#define DEF_PROD_ALL(SFX, ST, VT, ISF) DEF_PROD_##ISF(SFX, ST)
#define DEF_PROD_0(SFX, ST) DEF_PRODK(SFX, ST, uint64_t, i)
#define DEF_PROD_1(SFX, ST) DEF_PRODK(SFX, ST, double, d)
ALL_DTYPES(DEF_PROD_ALL)

/* ---- logsumexp: sum of exp(x - shift), the shift being the max of the slice ---------- */

#define DEF_EXPK(SFX, ST, VT, ISF)                                                                \
    DEF_SUMK(K_EXP_row_only, SFX, ST, double, d, MAP_EXP)                                        \
    static void col_K_EXP_##SFX(void *accv, int64_t L, const char *p, int64_t cst, int64_t rst,  \
                                int64_t nrows, int64_t r0, int first, const char *aux,           \
                                int64_t ast, int adt, double parg) {                             \
        (void)r0; (void)parg;                                                                    \
        double *acc = (double *)accv, *sh = acc + L;                                             \
        if (first) {                                                                             \
            for (int64_t j = 0; j < L; j++) {                                                    \
                double m = load_as_double(aux + j * ast, adt);                                   \
                sh[j] = isinf(m) ? 0.0 : m;                                                      \
                acc[j] = 0;                                                                      \
            }                                                                                    \
        }                                                                                        \
        for (int64_t r = 0; r < nrows; r++) {                                                    \
            const char *q = p + r * rst;                                                         \
            for (int64_t j = 0; j < L; j++)                                                      \
                acc[j] += exp((double)CV_##SFX(*(const ST *)(q + j * cst)) - sh[j]);             \
        }                                                                                        \
    }
FLOAT_DTYPES(DEF_EXPK)

static void cstate_exp(const void *acc, int64_t L, int64_t j, int64_t nrows, rstate *s) {
    (void)nrows;
    memset(s, 0, sizeof *s);
    s->d = ((const double *)acc)[j];
    s->shift = ((const double *)acc)[L + j];
}

/* ---- nanmean: sum and count of the non-NaN values --------------------------------------- */

#define DEF_NANMEANK(SFX, ST, VT, ISF)                                                            \
    static void row_K_NANMEAN_##SFX(const char *p, int64_t n, int64_t st, int64_t idx0,          \
                                    rstate *s, double parg) {                                    \
        (void)idx0; (void)parg;                                                                  \
        double a = 0;                                                                            \
        int64_t c = 0;                                                                           \
        for (int64_t i = 0; i < n; i++) {                                                        \
            double x = CV_##SFX(*(const ST *)(p + i * st));                                      \
            if (x == x) { a += x; c++; }                                                         \
        }                                                                                        \
        s->d += a;                                                                               \
        s->i += c;                                                                               \
    }                                                                                            \
    static void col_K_NANMEAN_##SFX(void *accv, int64_t L, const char *p, int64_t cst,           \
                                    int64_t rst, int64_t nrows, int64_t r0, int first,           \
                                    const char *aux, int64_t ast, int adt, double parg) {        \
        (void)r0; (void)aux; (void)ast; (void)adt; (void)parg;                                   \
        double *acc = (double *)accv;                                                            \
        int64_t *cnt = (int64_t *)(acc + L);                                                     \
        if (first)                                                                               \
            for (int64_t j = 0; j < L; j++) { acc[j] = 0; cnt[j] = 0; }                          \
        for (int64_t r = 0; r < nrows; r++) {                                                    \
            const char *q = p + r * rst;                                                         \
            for (int64_t j = 0; j < L; j++) {                                                    \
                double x = CV_##SFX(*(const ST *)(q + j * cst));                                 \
                int ok = x == x;                                                                 \
                acc[j] += ok ? x : 0.0;                                                          \
                cnt[j] += ok;                                                                    \
            }                                                                                    \
        }                                                                                        \
    }
FLOAT_DTYPES(DEF_NANMEANK)

static void ccomb_nanmean(void *a, const void *b, int64_t L, int64_t na, int64_t nb) {
    (void)na; (void)nb;
    double *x = (double *)a;
    const double *y = (const double *)b;
    int64_t *cx = (int64_t *)(x + L);
    const int64_t *cy = (const int64_t *)(y + L);
    for (int64_t j = 0; j < L; j++) { x[j] += y[j]; cx[j] += cy[j]; }
}
static void cstate_nanmean(const void *acc, int64_t L, int64_t j, int64_t nrows, rstate *s) {
    (void)nrows;
    memset(s, 0, sizeof *s);
    s->d = ((const double *)acc)[j];
    s->i = ((const int64_t *)((const double *)acc + L))[j];
}

/* ---- max / min (NaN propagates) ------------------------------------------------------- */

/* "b replaces a": strictly better, or b is NaN while a is not. Integers have no NaN. */
#define BETTER_F(b, a, OP) (((b) OP (a) || (b) != (b)) && (a) == (a))
#define BETTER_I(b, a, OP) ((b) OP (a))

#define DEF_EXTK(KIND, SFX, ST, VT, ISF, OP, MAP, FIELD, BETTER)                                  \
    static void row_##KIND##_##SFX(const char *p, int64_t n, int64_t st, int64_t idx0, rstate *s, \
                                   double parg) {                                                \
        (void)idx0; (void)parg;                                                                  \
        if (n <= 0) return;                                                                      \
        VT m = MAP(CV_##SFX(*(const ST *)p));                                                    \
        for (int64_t i = 1; i < n; i++) {                                                        \
            VT x = MAP(CV_##SFX(*(const ST *)(p + i * st)));                                     \
            if (BETTER(x, m, OP)) m = x;                                                         \
        }                                                                                        \
        if (!s->n || BETTER(m, (VT)s->FIELD, OP)) s->FIELD = m;                                  \
        s->n = 1;                                                                                \
    }                                                                                            \
    PTL_CLONES static void col_##KIND##_##SFX(void *accv, int64_t L, const char *p, int64_t cst, \
                                              int64_t rst, int64_t nrows, int64_t r0, int first,  \
                                              const char *aux, int64_t ast, int adt, double parg) { \
        (void)r0; (void)aux; (void)ast; (void)adt; (void)parg;                                   \
        VT *restrict acc = (VT *)accv;                                                           \
        int64_t r = 0;                                                                           \
        if (first) {                                                                             \
            for (int64_t j = 0; j < L; j++) acc[j] = MAP(CV_##SFX(*(const ST *)(p + j * cst)));  \
            r = 1;                                                                               \
        }                                                                                        \
        if (cst == (int64_t)sizeof(ST)) {                                                        \
            for (; r < nrows; r++) {                                                             \
                const ST *restrict q = (const ST *)(p + r * rst);                                \
                for (int64_t j = 0; j < L; j++) {                                                \
                    VT x = MAP(CV_##SFX(q[j])), a = acc[j];                                      \
                    acc[j] = BETTER(x, a, OP) ? x : a;                                           \
                }                                                                                \
            }                                                                                    \
        } else {                                                                                 \
            for (; r < nrows; r++) {                                                             \
                const char *q = p + r * rst;                                                     \
                for (int64_t j = 0; j < L; j++) {                                                \
                    VT x = MAP(CV_##SFX(*(const ST *)(q + j * cst))), a = acc[j];                \
                    acc[j] = BETTER(x, a, OP) ? x : a;                                           \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    static void ccomb_##KIND##_##SFX(void *a, const void *b, int64_t L, int64_t na, int64_t nb) { \
        (void)na; (void)nb;                                                                      \
        VT *x = (VT *)a;                                                                         \
        const VT *y = (const VT *)b;                                                             \
        for (int64_t j = 0; j < L; j++)                                                          \
            if (BETTER(y[j], x[j], OP)) x[j] = y[j];                                             \
    }                                                                                            \
    static void cstate_##KIND##_##SFX(const void *acc, int64_t L, int64_t j, int64_t nrows,      \
                                      rstate *s) {                                               \
        (void)L; (void)nrows;                                                                    \
        memset(s, 0, sizeof *s);                                                                 \
        s->FIELD = ((const VT *)acc)[j];                                                         \
        s->n = 1;                                                                                \
    }                                                                                            \
    static void rcomb_##KIND##_##SFX(rstate *a, const rstate *b) {                               \
        if (!b->n) return;                                                                       \
        if (!a->n || BETTER((VT)b->FIELD, (VT)a->FIELD, OP)) a->FIELD = b->FIELD;                \
        a->n = 1;                                                                                \
    }

#define DEF_EXT_ALL(SFX, ST, VT, ISF) DEF_EXT_##ISF(SFX, ST, VT)
#define DEF_EXT_0(SFX, ST, VT)                                    \
    DEF_EXTK(K_MAX, SFX, ST, VT, 0, >, MAP_ID, i, BETTER_I)       \
    DEF_EXTK(K_MIN, SFX, ST, VT, 0, <, MAP_ID, i, BETTER_I)
#define DEF_EXT_1(SFX, ST, VT)                                    \
    DEF_EXTK(K_MAX, SFX, ST, VT, 1, >, MAP_ID, d, BETTER_F)       \
    DEF_EXTK(K_MIN, SFX, ST, VT, 1, <, MAP_ID, d, BETTER_F)       \
    DEF_EXTK(K_MAXABS, SFX, ST, VT, 1, >, (VT)fabs, d, BETTER_F)  \
    DEF_EXTK(K_MINABS, SFX, ST, VT, 1, <, (VT)fabs, d, BETTER_F)
ALL_DTYPES(DEF_EXT_ALL)

#define DEF_EXT_FAST(NAME, T, KIND, SFX, FN, OP)                                                  \
    static void NAME(const char *p, int64_t n, int64_t st, int64_t idx0, rstate *s, double parg) { \
        if (st != (int64_t)sizeof(T) || n < 64) {                                                \
            row_##KIND##_##SFX(p, n, st, idx0, s, parg);                                         \
            return;                                                                              \
        }                                                                                        \
        int nan = 0;                                                                             \
        T m = FN((const T *)p, n, &nan);                                                         \
        if (nan) m = NAN;                                                                        \
        if (!s->n || BETTER_F(m, (T)s->d, OP)) s->d = m;                                         \
        s->n = 1;                                                                                \
    }
DEF_EXT_FAST(row_max_f32, float, K_MAX, f32, max_f32_contig, >)
DEF_EXT_FAST(row_min_f32, float, K_MIN, f32, min_f32_contig, <)
DEF_EXT_FAST(row_max_f64, double, K_MAX, f64, max_f64_contig, >)
DEF_EXT_FAST(row_min_f64, double, K_MIN, f64, min_f64_contig, <)

/* ---- max/min with indices, argmax/argmin (first occurrence; the first NaN wins) ------- */

#define DEF_ARGK(KIND, SFX, ST, VT, ISF, OP, FIELD, BETTER)                                       \
    static void row_##KIND##_##SFX(const char *p, int64_t n, int64_t st, int64_t idx0, rstate *s, \
                                   double parg) {                                                \
        (void)parg;                                                                              \
        if (n <= 0) return;                                                                      \
        VT m = CV_##SFX(*(const ST *)p);                                                         \
        int64_t mi = 0;                                                                          \
        for (int64_t i = 1; i < n; i++) {                                                        \
            VT x = CV_##SFX(*(const ST *)(p + i * st));                                          \
            if (BETTER(x, m, OP)) { m = x; mi = i; }                                             \
        }                                                                                        \
        if (s->n < 0 || BETTER(m, (VT)s->FIELD, OP)) { s->FIELD = m; s->n = idx0 + mi; }         \
    }                                                                                            \
    PTL_CLONES static void col_##KIND##_##SFX(void *accv, int64_t L, const char *p, int64_t cst, \
                                              int64_t rst, int64_t nrows, int64_t r0, int first,  \
                                              const char *aux, int64_t ast, int adt, double parg) { \
        (void)aux; (void)ast; (void)adt; (void)parg;                                             \
        VT *restrict val = (VT *)accv;                                                           \
        int64_t *restrict idx = (int64_t *)((char *)accv + L * 8);                               \
        int64_t r = 0;                                                                           \
        if (first) {                                                                             \
            for (int64_t j = 0; j < L; j++) {                                                    \
                val[j] = CV_##SFX(*(const ST *)(p + j * cst));                                   \
                idx[j] = r0;                                                                     \
            }                                                                                    \
            r = 1;                                                                               \
        }                                                                                        \
        for (; r < nrows; r++) {                                                                 \
            const char *q = p + r * rst;                                                         \
            const int64_t ri = r0 + r;                                                           \
            for (int64_t j = 0; j < L; j++) {                                                    \
                VT x = CV_##SFX(*(const ST *)(q + j * cst)), a = val[j];                         \
                int c = BETTER(x, a, OP);                                                        \
                val[j] = c ? x : a;                                                              \
                idx[j] = c ? ri : idx[j];                                                        \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    static void ccomb_##KIND##_##SFX(void *a, const void *b, int64_t L, int64_t na, int64_t nb) { \
        (void)na; (void)nb;                                                                      \
        VT *x = (VT *)a;                                                                         \
        const VT *y = (const VT *)b;                                                             \
        int64_t *xi = (int64_t *)((char *)a + L * 8);                                            \
        const int64_t *yi = (const int64_t *)((const char *)b + L * 8);                          \
        for (int64_t j = 0; j < L; j++)                                                          \
            if (BETTER(y[j], x[j], OP)) { x[j] = y[j]; xi[j] = yi[j]; }                          \
    }                                                                                            \
    static void cstate_##KIND##_##SFX(const void *acc, int64_t L, int64_t j, int64_t nrows,      \
                                      rstate *s) {                                               \
        (void)nrows;                                                                             \
        memset(s, 0, sizeof *s);                                                                 \
        s->FIELD = ((const VT *)acc)[j];                                                         \
        s->n = ((const int64_t *)((const char *)acc + L * 8))[j];                                \
    }                                                                                            \
    static void rcomb_##KIND##_##SFX(rstate *a, const rstate *b) {                               \
        if (b->n < 0) return;                                                                    \
        if (a->n < 0 || BETTER((VT)b->FIELD, (VT)a->FIELD, OP)) { a->FIELD = b->FIELD; a->n = b->n; } \
    }

#define DEF_ARG_ALL(SFX, ST, VT, ISF) DEF_ARG_##ISF(SFX, ST, VT)
#define DEF_ARG_0(SFX, ST, VT)                                 \
    DEF_ARGK(K_ARGMAX, SFX, ST, VT, 0, >, i, BETTER_I)         \
    DEF_ARGK(K_ARGMIN, SFX, ST, VT, 0, <, i, BETTER_I)
#define DEF_ARG_1(SFX, ST, VT)                                 \
    DEF_ARGK(K_ARGMAX, SFX, ST, VT, 1, >, d, BETTER_F)         \
    DEF_ARGK(K_ARGMIN, SFX, ST, VT, 1, <, d, BETTER_F)
ALL_DTYPES(DEF_ARG_ALL)

/* Contiguous float rows: find each block's extreme with the vector loop, and only when it
 * beats the best so far look for its first position inside the (cached) block. */
#define DEF_ARG_FAST(NAME, T, KIND, SFX, FN, OP)                                                  \
    static void NAME(const char *p, int64_t n, int64_t st, int64_t idx0, rstate *s, double parg) { \
        if (st != (int64_t)sizeof(T) || n < 64) {                                                \
            row_##KIND##_##SFX(p, n, st, idx0, s, parg);                                         \
            return;                                                                              \
        }                                                                                        \
        const T *q = (const T *)p;                                                               \
        T best = 0;                                                                              \
        int64_t bi = -1;                                                                         \
        for (int64_t b = 0; b < n; b += 512) {                                                   \
            int64_t len = n - b < 512 ? n - b : 512;                                             \
            int nan = 0;                                                                         \
            T m = FN(q + b, len, &nan);                                                          \
            if (nan) {                                                                           \
                for (int64_t k = 0; k < len; k++)                                                \
                    if (q[b + k] != q[b + k]) { best = q[b + k]; bi = b + k; break; }            \
                break;                                                                           \
            }                                                                                    \
            if (bi < 0 || m OP best) {                                                           \
                for (int64_t k = 0; k < len; k++)                                                \
                    if (q[b + k] == m) { bi = b + k; break; }                                    \
                best = m;                                                                        \
            }                                                                                    \
        }                                                                                        \
        if (s->n < 0 || BETTER_F(best, (T)s->d, OP)) { s->d = best; s->n = idx0 + bi; }          \
    }
DEF_ARG_FAST(row_argmax_f32, float, K_ARGMAX, f32, max_f32_contig, >)
DEF_ARG_FAST(row_argmin_f32, float, K_ARGMIN, f32, min_f32_contig, <)
DEF_ARG_FAST(row_argmax_f64, double, K_ARGMAX, f64, max_f64_contig, >)
DEF_ARG_FAST(row_argmin_f64, double, K_ARGMIN, f64, min_f64_contig, <)

/* ---- variance --------------------------------------------------------------------------
 * Row path: blocks of 1024 (in cache) get an exact two-pass mean and M2, merged with
 * Chan et al.'s pairwise formula. Column path: per-column sums of (x - shift) and
 * (x - shift)^2 with the column's first value as shift, which avoids the cancellation of
 * the naive sum-of-squares formula; partials are merged with the same formula. */

static void chan_merge(rstate *a, int64_t nb, double mb, double m2b) {
    if (nb == 0) return;
    if (a->n == 0) { a->n = nb; a->d = mb; a->m2 = m2b; return; }
    int64_t n = a->n + nb;
    double delta = mb - a->d;
    a->d += delta * ((double)nb / (double)n);
    a->m2 += m2b + delta * delta * ((double)a->n * (double)nb / (double)n);
    a->n = n;
}
static void rcomb_var(rstate *a, const rstate *b) { chan_merge(a, b->n, b->d, b->m2); }

#define VAR_BLOCK 1024
#define DEF_VARK(SFX, ST, VT, ISF)                                                                \
    static void row_K_VAR_##SFX(const char *p, int64_t n, int64_t st, int64_t idx0, rstate *s,   \
                                double parg) {                                                   \
        (void)idx0; (void)parg;                                                                  \
        double buf[VAR_BLOCK];                                                                   \
        for (int64_t b = 0; b < n; b += VAR_BLOCK) {                                             \
            int64_t len = n - b < VAR_BLOCK ? n - b : VAR_BLOCK;                                 \
            double sum = 0;                                                                      \
            for (int64_t k = 0; k < len; k++) {                                                  \
                buf[k] = CV_##SFX(*(const ST *)(p + (b + k) * st));                              \
                sum += buf[k];                                                                   \
            }                                                                                    \
            double mean = sum / (double)len, m2 = 0;                                             \
            for (int64_t k = 0; k < len; k++) m2 += (buf[k] - mean) * (buf[k] - mean);           \
            chan_merge(s, len, mean, m2);                                                        \
        }                                                                                        \
    }                                                                                            \
    PTL_CLONES static void col_K_VAR_##SFX(void *accv, int64_t L, const char *p, int64_t cst,    \
                                           int64_t rst, int64_t nrows, int64_t r0, int first,     \
                                           const char *aux, int64_t ast, int adt, double parg) {  \
        (void)r0; (void)aux; (void)ast; (void)adt; (void)parg;                                   \
        double *restrict sh = (double *)accv, *restrict s1 = sh + L, *restrict s2 = sh + 2 * L;  \
        int64_t r = 0;                                                                           \
        if (first) {                                                                             \
            for (int64_t j = 0; j < L; j++) {                                                    \
                sh[j] = CV_##SFX(*(const ST *)(p + j * cst));                                    \
                s1[j] = 0;                                                                       \
                s2[j] = 0;                                                                       \
            }                                                                                    \
            r = 1;                                                                               \
        }                                                                                        \
        for (; r < nrows; r++) {                                                                 \
            const char *q = p + r * rst;                                                         \
            if (cst == (int64_t)sizeof(ST)) {                                                    \
                const ST *restrict qq = (const ST *)q;                                           \
                for (int64_t j = 0; j < L; j++) {                                                \
                    double d = (double)CV_##SFX(qq[j]) - sh[j];                                  \
                    s1[j] += d;                                                                  \
                    s2[j] += d * d;                                                              \
                }                                                                                \
            } else {                                                                             \
                for (int64_t j = 0; j < L; j++) {                                                \
                    double d = (double)CV_##SFX(*(const ST *)(q + j * cst)) - sh[j];             \
                    s1[j] += d;                                                                  \
                    s2[j] += d * d;                                                              \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }
FLOAT_DTYPES(DEF_VARK)

static void var_from_shifted(const double *acc, int64_t L, int64_t j, int64_t n, double *mean, double *m2) {
    double sh = acc[j], s1 = acc[L + j], s2 = acc[2 * L + j];
    *mean = sh + s1 / (double)n;
    double v = s2 - s1 * s1 / (double)n;
    *m2 = v < 0 ? 0 : v; /* rounding can dip below 0; a NaN must stay NaN */
}
static void ccomb_var(void *a, const void *b, int64_t L, int64_t na, int64_t nb) {
    double *x = (double *)a;
    const double *y = (const double *)b;
    for (int64_t j = 0; j < L; j++) {
        rstate s = {0};
        double mb, m2b;
        var_from_shifted(x, L, j, na, &s.d, &s.m2);
        s.n = na;
        var_from_shifted(y, L, j, nb, &mb, &m2b);
        chan_merge(&s, nb, mb, m2b);
        /* store back in shifted form: shift = mean, s1 = 0, s2 = M2 */
        x[j] = s.d;
        x[L + j] = 0;
        x[2 * L + j] = s.m2;
    }
}
static void cstate_var(const void *acc, int64_t L, int64_t j, int64_t nrows, rstate *s) {
    memset(s, 0, sizeof *s);
    s->n = nrows;
    var_from_shifted((const double *)acc, L, j, nrows, &s->d, &s->m2);
}

#define DEF_VAR_FAST(SFX, T, SUMFN, SQFN)                                                         \
    static void row_var_##SFX(const char *p, int64_t n, int64_t st, int64_t idx0, rstate *s,     \
                              double parg) {                                                     \
        if (st != (int64_t)sizeof(T)) {                                                          \
            row_K_VAR_##SFX(p, n, st, idx0, s, parg);                                            \
            return;                                                                              \
        }                                                                                        \
        const T *q = (const T *)p;                                                               \
        for (int64_t b = 0; b < n; b += VAR_BLOCK) {                                             \
            int64_t len = n - b < VAR_BLOCK ? n - b : VAR_BLOCK;                                 \
            double mean = SUMFN(q + b, len) / (double)len;                                       \
            chan_merge(s, len, mean, SQFN(q + b, len, mean));                                    \
        }                                                                                        \
    }
DEF_VAR_FAST(f32, float, sum_f32_contig, sqdev_f32_contig)
DEF_VAR_FAST(f64, double, sum_f64_contig, sqdev_f64_contig)

/* ---- the table: kind x dtype -> functions -------------------------------------------- */

#define SUMK_ENTRY(KIND, SFX, ROW, RINIT, RCOMB, CCOMB, CSTATE)                               \
    static const kind_fns fns_##KIND##_##SFX = {RINIT, ROW, RCOMB, col_##KIND##_##SFX, CCOMB, CSTATE, 8};

#define ENTRIES_ALL(SFX, ST, VT, ISF) ENTRIES_##ISF(SFX)
#define ENTRIES_0(SFX)                                                                         \
    SUMK_ENTRY(K_SUM, SFX, row_K_SUM_##SFX, rinit_zero, rcomb_sum, ccomb_sum_i, cstate_i)      \
    SUMK_ENTRY(K_PROD, SFX, row_K_PROD_##SFX, rinit_one, rcomb_prod, ccomb_prod_i, cstate_i)   \
    SUMK_ENTRY(K_NZ, SFX, row_K_NZ_##SFX, rinit_zero, rcomb_sum, ccomb_sum_i, cstate_i)        \
    EXT_ENTRY(K_MAX, SFX) EXT_ENTRY(K_MIN, SFX) ARG_ENTRY(K_ARGMAX, SFX) ARG_ENTRY(K_ARGMIN, SFX)
#define ENTRIES_1(SFX)                                                                         \
    SUMK_ENTRY(K_PROD, SFX, row_K_PROD_##SFX, rinit_one, rcomb_prod, ccomb_prod_d, cstate_d)   \
    SUMK_ENTRY(K_NZ, SFX, row_K_NZ_##SFX, rinit_zero, rcomb_sum, ccomb_sum_i, cstate_i)        \
    SUMK_ENTRY(K_NANSUM, SFX, row_K_NANSUM_##SFX, rinit_zero, rcomb_sum, ccomb_sum_d, cstate_d) \
    SUMK_ENTRY(K_ABS, SFX, row_K_ABS_##SFX, rinit_zero, rcomb_sum, ccomb_sum_d, cstate_d)      \
    SUMK_ENTRY(K_SQ, SFX, row_K_SQ_##SFX, rinit_zero, rcomb_sum, ccomb_sum_d, cstate_d)        \
    SUMK_ENTRY(K_POW, SFX, row_K_POW_##SFX, rinit_zero, rcomb_sum, ccomb_sum_d, cstate_d)      \
    static const kind_fns fns_K_EXP_##SFX = {rinit_zero, row_K_EXP_row_only_##SFX, rcomb_sum,    \
                                             col_K_EXP_##SFX, ccomb_sum_d, cstate_exp, 16};      \
    static const kind_fns fns_K_NANMEAN_##SFX = {rinit_zero, row_K_NANMEAN_##SFX, rcomb_sum,     \
                                                 col_K_NANMEAN_##SFX, ccomb_nanmean, cstate_nanmean, 16}; \
    EXT_ENTRY(K_MAX, SFX) EXT_ENTRY(K_MIN, SFX) EXT_ENTRY(K_MAXABS, SFX) EXT_ENTRY(K_MINABS, SFX) \
    ARG_ENTRY(K_ARGMAX, SFX) ARG_ENTRY(K_ARGMIN, SFX)
#define EXT_ENTRY(KIND, SFX)                                                                   \
    static const kind_fns fns_##KIND##_##SFX = {rinit_zero, EXT_ROW_##KIND(SFX), rcomb_##KIND##_##SFX, \
                                                col_##KIND##_##SFX, ccomb_##KIND##_##SFX,            \
                                                cstate_##KIND##_##SFX, 8};
#define ARG_ENTRY(KIND, SFX)                                                                   \
    static const kind_fns fns_##KIND##_##SFX = {rinit_arg, ARG_ROW_##KIND(SFX), rcomb_##KIND##_##SFX, \
                                                col_##KIND##_##SFX, ccomb_##KIND##_##SFX,            \
                                                cstate_##KIND##_##SFX, 16};

/* the row functions that have a hand-vectorised float32/float64 version */
#define FAST_ROW(SFX, GENERIC, FAST32, FAST64) FAST_ROW_##SFX(GENERIC, FAST32, FAST64)
#define FAST_ROW_b8(G, A, B) G
#define FAST_ROW_u8(G, A, B) G
#define FAST_ROW_i8(G, A, B) G
#define FAST_ROW_i16(G, A, B) G
#define FAST_ROW_i32(G, A, B) G
#define FAST_ROW_i64(G, A, B) G
#define FAST_ROW_f16(G, A, B) G
#define FAST_ROW_bf16(G, A, B) G
#define FAST_ROW_f32(G, A, B) A
#define FAST_ROW_f64(G, A, B) B
#define EXT_ROW_K_MAX(SFX) FAST_ROW(SFX, row_K_MAX_##SFX, row_max_f32, row_max_f64)
#define EXT_ROW_K_MIN(SFX) FAST_ROW(SFX, row_K_MIN_##SFX, row_min_f32, row_min_f64)
#define EXT_ROW_K_MAXABS(SFX) row_K_MAXABS_##SFX
#define EXT_ROW_K_MINABS(SFX) row_K_MINABS_##SFX
#define ARG_ROW_K_ARGMAX(SFX) FAST_ROW(SFX, row_K_ARGMAX_##SFX, row_argmax_f32, row_argmax_f64)
#define ARG_ROW_K_ARGMIN(SFX) FAST_ROW(SFX, row_K_ARGMIN_##SFX, row_argmin_f32, row_argmin_f64)

ALL_DTYPES(ENTRIES_ALL)

static const kind_fns fns_K_SUM_f16 = {rinit_zero, row_K_SUM_f16, rcomb_sum, col_K_SUM_f16, ccomb_sum_d, cstate_d, 8};
static const kind_fns fns_K_SUM_bf16 = {rinit_zero, row_K_SUM_bf16, rcomb_sum, col_K_SUM_bf16, ccomb_sum_d, cstate_d, 8};
static const kind_fns fns_K_SUM_f32 = {rinit_zero, row_sum_f32, rcomb_sum, col_K_SUM_f32, ccomb_sum_d, cstate_d, 8};
static const kind_fns fns_K_SUM_f64 = {rinit_zero, row_sum_f64, rcomb_sum, col_K_SUM_f64, ccomb_sum_d, cstate_d, 8};
static const kind_fns fns_K_VAR_f16 = {rinit_zero, row_K_VAR_f16, rcomb_var, col_K_VAR_f16, ccomb_var, cstate_var, 24};
static const kind_fns fns_K_VAR_bf16 = {rinit_zero, row_K_VAR_bf16, rcomb_var, col_K_VAR_bf16, ccomb_var, cstate_var, 24};
static const kind_fns fns_K_VAR_f32 = {rinit_zero, row_var_f32, rcomb_var, col_K_VAR_f32, ccomb_var, cstate_var, 24};
static const kind_fns fns_K_VAR_f64 = {rinit_zero, row_var_f64, rcomb_var, col_K_VAR_f64, ccomb_var, cstate_var, 24};

#define ROW_ALL(KIND) {&fns_##KIND##_b8, &fns_##KIND##_u8, &fns_##KIND##_i8, &fns_##KIND##_i16, \
                       &fns_##KIND##_i32, &fns_##KIND##_i64, &fns_##KIND##_f16, &fns_##KIND##_bf16, \
                       &fns_##KIND##_f32, &fns_##KIND##_f64}
#define ROW_FLOAT(KIND) {0, 0, 0, 0, 0, 0, &fns_##KIND##_f16, &fns_##KIND##_bf16, &fns_##KIND##_f32, \
                         &fns_##KIND##_f64}

static const kind_fns *const kind_table[K_NUM][PTL_NUM_DTYPES] = {
    [K_SUM] = ROW_ALL(K_SUM),
    [K_PROD] = ROW_ALL(K_PROD),
    [K_NZ] = ROW_ALL(K_NZ),
    [K_NANSUM] = ROW_FLOAT(K_NANSUM),
    [K_ABS] = ROW_FLOAT(K_ABS),
    [K_SQ] = ROW_FLOAT(K_SQ),
    [K_POW] = ROW_FLOAT(K_POW),
    [K_EXP] = ROW_FLOAT(K_EXP),
    [K_NANMEAN] = ROW_FLOAT(K_NANMEAN),
    [K_MAX] = ROW_ALL(K_MAX),
    [K_MIN] = ROW_ALL(K_MIN),
    [K_MAXABS] = ROW_FLOAT(K_MAXABS),
    [K_MINABS] = ROW_FLOAT(K_MINABS),
    [K_ARGMAX] = ROW_ALL(K_ARGMAX),
    [K_ARGMIN] = ROW_ALL(K_ARGMIN),
    [K_VAR] = ROW_FLOAT(K_VAR),
};

static int kind_of(int op, int dt, double arg) {
    int isf = dt >= PTL_F16;
    switch (op) {
        case R_SUM: case R_MEAN: return K_SUM;
        case R_PROD: return K_PROD;
        case R_NANSUM: return isf ? K_NANSUM : K_SUM;
        case R_NANMEAN: return K_NANMEAN;
        case R_COUNT_NZ: case R_ALL: case R_ANY: return K_NZ;
        case R_NORM:
            if (arg == 0) return K_NZ;
            if (arg == 1) return K_ABS;
            if (arg == 2) return K_SQ;
            if (arg == INFINITY) return K_MAXABS;
            if (arg == -INFINITY) return K_MINABS;
            return K_POW;
        case R_LOGSUMEXP: return K_EXP;
        case R_AMAX: return K_MAX;
        case R_AMIN: return K_MIN;
        case R_MAX: case R_ARGMAX: return K_ARGMAX;
        case R_MIN: case R_ARGMIN: return K_ARGMIN;
        case R_VAR: case R_STD: return K_VAR;
        default: return -1;
    }
}

/* ---- finishing one output element --------------------------------------------------- */

typedef struct {
    int op, kind, dt, odt, adt, isf;
    double arg;
    const kind_fns *f;
    int nk, nr;
    int64_t ksz[PTL_MAX_DIMS], kis[PTL_MAX_DIMS], kos[PTL_MAX_DIMS], kas[PTL_MAX_DIMS];
    int64_t rsz[PTL_MAX_DIMS], ris[PTL_MAX_DIMS];
    int64_t M, N;
    char *in, *out, *aux;
} rplan;

static void finish(const rplan *p, const rstate *s, char *out, char *aux) {
    int64_t N = p->N;
    switch (p->op) {
        case R_SUM: case R_NANSUM: case R_PROD:
            if (p->isf) store_d(out, p->odt, s->d);
            else store_i(out, p->odt, s->i);
            break;
        case R_MEAN: store_d(out, p->odt, s->d / (double)N); break;
        case R_NANMEAN: store_d(out, p->odt, s->d / (double)s->i); break;
        case R_COUNT_NZ: store_i(out, p->odt, s->i); break;
        case R_ALL: store_i(out, p->odt, s->i == N); break;
        case R_ANY: store_i(out, p->odt, s->i > 0); break;
        case R_NORM:
            switch (p->kind) {
                case K_NZ: store_d(out, p->odt, (double)s->i); break;
                case K_SQ: store_d(out, p->odt, sqrt(s->d)); break;
                case K_POW: store_d(out, p->odt, pow(s->d, 1.0 / p->arg)); break;
                default: store_d(out, p->odt, s->d); break;
            }
            break;
        case R_LOGSUMEXP: store_d(out, p->odt, log(s->d) + s->shift); break;
        case R_AMAX: case R_AMIN:
            if (p->isf) store_d(out, p->odt, s->d);
            else store_i(out, p->odt, s->i);
            break;
        case R_MAX: case R_MIN:
            if (p->isf) store_d(out, p->odt, s->d);
            else store_i(out, p->odt, s->i);
            *(int64_t *)aux = s->n < 0 ? 0 : s->n;
            break;
        case R_ARGMAX: case R_ARGMIN: *(int64_t *)out = s->n < 0 ? 0 : s->n; break;
        case R_VAR: case R_STD: {
            double dof = (double)N - p->arg;
            double v = s->m2 / (dof > 0 ? dof : 0.0);
            if (N == 0) v = NAN;
            store_d(out, p->odt, p->op == R_STD ? sqrt(v) : v);
            if (aux) store_d(aux, p->adt, N == 0 ? NAN : s->d);
            break;
        }
    }
}

static void init_state(const rplan *p, rstate *s, const char *aux) {
    p->f->rinit(s);
    if (p->op == R_LOGSUMEXP && aux && p->N > 0) {
        double m = load_as_double(aux, p->adt);
        s->shift = isinf(m) ? 0.0 : m;
    }
}

/* ---- the plan -------------------------------------------------------------------------- */

static int64_t stride_key(int64_t s) { return s == 0 ? INT64_MAX : (s < 0 ? -s : s); }

static int build_plan(rplan *p, const ptl_tensor *in, const ptl_tensor *out, const ptl_tensor *aux) {
    int nd = in->ndim;
    if (nd < 0 || nd > PTL_MAX_DIMS || out->ndim != nd || (aux && aux->ndim != nd)) return PTL_ERR_NDIM;
    int isz = ptl_itemsize[in->dtype], osz = ptl_itemsize[out->dtype], asz = aux ? ptl_itemsize[aux->dtype] : 0;
    int nk = 0, nr = 0;
    int64_t ksz[PTL_MAX_DIMS], kis[PTL_MAX_DIMS], kos[PTL_MAX_DIMS], kas[PTL_MAX_DIMS];
    int64_t rsz[PTL_MAX_DIMS], ris[PTL_MAX_DIMS];
    p->M = 1;
    p->N = 1;
    for (int d = 0; d < nd; d++) {
        int64_t n = in->sizes[d];
        if (out->sizes[d] != n && out->sizes[d] != 1) return PTL_ERR_ARG;
        if (aux && aux->sizes[d] != out->sizes[d]) return PTL_ERR_ARG;
        if (n == 1) continue;
        if (out->sizes[d] == 1) {
            rsz[nr] = n;
            ris[nr] = in->strides[d] * isz;
            nr++;
            p->N *= n;
        } else {
            ksz[nk] = n;
            kis[nk] = in->strides[d] * isz;
            kos[nk] = out->strides[d] * osz;
            kas[nk] = aux ? aux->strides[d] * asz : 0;
            nk++;
            p->M *= n;
        }
    }
    /* kept dims: stable sort by input stride (broadcast dims last), then merge neighbours
     * that are contiguous in input, output and aux alike */
    int order[PTL_MAX_DIMS];
    for (int i = 0; i < nk; i++) order[i] = i;
    for (int i = 1; i < nk; i++) {
        int v = order[i], j = i - 1;
        while (j >= 0 && (stride_key(kis[order[j]]) > stride_key(kis[v]) ||
                          (stride_key(kis[order[j]]) == stride_key(kis[v]) &&
                           stride_key(kos[order[j]]) > stride_key(kos[v])))) {
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = v;
    }
    p->nk = 0;
    for (int i = 0; i < nk; i++) {
        int d = order[i], m = p->nk;
        if (m > 0 && kis[d] == p->kis[m - 1] * p->ksz[m - 1] && kos[d] == p->kos[m - 1] * p->ksz[m - 1] &&
            kas[d] == p->kas[m - 1] * p->ksz[m - 1]) {
            p->ksz[m - 1] *= ksz[d];
            continue;
        }
        p->ksz[m] = ksz[d];
        p->kis[m] = kis[d];
        p->kos[m] = kos[d];
        p->kas[m] = kas[d];
        p->nk++;
    }
    /* reduced dims likewise (index-returning ops reduce one dim, so nothing merges there;
     * merging would not change the order of elements anyway since it keeps r0 innermost) */
    for (int i = 0; i < nr; i++) order[i] = i;
    for (int i = 1; i < nr; i++) {
        int v = order[i], j = i - 1;
        while (j >= 0 && stride_key(ris[order[j]]) > stride_key(ris[v])) {
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = v;
    }
    p->nr = 0;
    for (int i = 0; i < nr; i++) {
        int d = order[i], m = p->nr;
        if (m > 0 && ris[d] == p->ris[m - 1] * p->rsz[m - 1]) {
            p->rsz[m - 1] *= rsz[d];
            continue;
        }
        p->rsz[m] = rsz[d];
        p->ris[m] = ris[d];
        p->nr++;
    }
    if (p->nr == 0) { /* nothing to reduce: one element per output */
        p->rsz[0] = 1;
        p->ris[0] = isz;
        p->nr = 1;
    }
    p->in = (char *)in->data;
    p->out = (char *)out->data;
    p->aux = aux ? (char *)aux->data : NULL;
    return PTL_OK;
}

/* pointers of output number o (row-major over the kept dims, dim 0 innermost) */
static void kept_offsets(const rplan *p, int first_dim, int64_t o, int64_t *ioff, int64_t *ooff, int64_t *aoff) {
    int64_t a = 0, b = 0, c = 0;
    for (int d = first_dim; d < p->nk && o; d++) {
        int64_t k = o % p->ksz[d];
        o /= p->ksz[d];
        a += k * p->kis[d];
        b += k * p->kos[d];
        c += k * p->kas[d];
    }
    *ioff = a;
    *ooff = b;
    *aoff = c;
}

/* reduce the flattened reduced-index range [rb, re) of one output into s */
static void reduce_range(const rplan *p, const char *base, int64_t rb, int64_t re, rstate *s) {
    if (p->nr == 1) { /* the common case, without the index arithmetic (two divisions a row) */
        p->f->row(base + rb * p->ris[0], re - rb, p->ris[0], rb, s, p->arg);
        return;
    }
    int64_t idx[PTL_MAX_DIMS], rem = rb;
    for (int d = 0; d < p->nr; d++) {
        idx[d] = rem % p->rsz[d];
        rem /= p->rsz[d];
    }
    while (rb < re) {
        const char *q = base;
        for (int d = 0; d < p->nr; d++) q += idx[d] * p->ris[d];
        int64_t n = p->rsz[0] - idx[0];
        if (n > re - rb) n = re - rb;
        p->f->row(q, n, p->ris[0], rb, s, p->arg);
        rb += n;
        idx[0] += n;
        for (int d = 0; d < p->nr - 1 && idx[d] >= p->rsz[d]; d++) {
            idx[d] = 0;
            idx[d + 1]++;
        }
    }
}

/* A thread's unfinished first/last output, merged with its neighbours' afterwards. */
typedef struct {
    int64_t o;     /* output (row path) or work item (column path); -1: none */
    int64_t count; /* reduced elements covered (column path) */
    rstate s;
    void *acc;
} partial;

/* ---- row path ------------------------------------------------------------------------- */

/* Contiguous float32/float64 rows summed (or averaged) into the same dtype: whole rows
 * skip the state, the table calls and `finish`, which matter when rows are short. */
static int row_fast_sum(const rplan *p) {
    return !p->aux && p->nr == 1 && (p->op == R_SUM || p->op == R_MEAN) && p->odt == p->dt &&
           ((p->dt == PTL_F32 && p->ris[0] == 4) || (p->dt == PTL_F64 && p->ris[0] == 8));
}

static void row_run(const rplan *p, int64_t b, int64_t e, partial *head, partial *tail) {
    int64_t N = p->N;
    const int fast = row_fast_sum(p), mean = p->op == R_MEAN;
    int64_t o = b / N, r = b % N;
    int64_t kidx[PTL_MAX_DIMS], rem = o;
    int64_t ioff = 0, ooff = 0, aoff = 0;
    for (int d = 0; d < p->nk; d++) {
        kidx[d] = rem % p->ksz[d];
        rem /= p->ksz[d];
        ioff += kidx[d] * p->kis[d];
        ooff += kidx[d] * p->kos[d];
        aoff += kidx[d] * p->kas[d];
    }
    while (b < e) {
        int64_t re = (e - b < N - r) ? r + (e - b) : N;
        char *auxp = p->aux ? p->aux + aoff : NULL;
        if (fast && r == 0 && re == N) {
            if (p->dt == PTL_F32) {
                double v = sum_f32_contig((const float *)(p->in + ioff), N);
                *(float *)(p->out + ooff) = (float)(mean ? v / (double)N : v);
            } else {
                double v = sum_f64_contig((const double *)(p->in + ioff), N);
                *(double *)(p->out + ooff) = mean ? v / (double)N : v;
            }
            goto next;
        }
        rstate s;
        init_state(p, &s, auxp);
        reduce_range(p, p->in + ioff, r, re, &s);
        if (r == 0 && re == N) {
            finish(p, &s, p->out + ooff, auxp);
        } else if (r != 0) {
            head->o = o;
            head->s = s;
        } else {
            tail->o = o;
            tail->s = s;
        }
    next:
        b += re - r;
        r = 0;
        o++;
        /* next output: odometer over the kept dims */
        for (int d = 0; d < p->nk; d++) {
            kidx[d]++;
            ioff += p->kis[d];
            ooff += p->kos[d];
            aoff += p->kas[d];
            if (kidx[d] < p->ksz[d]) break;
            ioff -= kidx[d] * p->kis[d];
            ooff -= kidx[d] * p->kos[d];
            aoff -= kidx[d] * p->kas[d];
            kidx[d] = 0;
        }
    }
}

static void row_merge(const rplan *p, partial *parts, int np) {
    int have = 0;
    partial cur;
    for (int k = 0; k <= np; k++) {
        if (k < np && parts[k].o < 0) continue;
        if (have && (k == np || parts[k].o != cur.o)) {
            int64_t ioff, ooff, aoff;
            kept_offsets(p, 0, cur.o, &ioff, &ooff, &aoff);
            finish(p, &cur.s, p->out + ooff, p->aux ? p->aux + aoff : NULL);
            have = 0;
        }
        if (k == np) break;
        if (have) {
            p->f->rcomb(&cur.s, &parts[k].s);
        } else {
            cur = parts[k];
            have = 1;
        }
    }
}

/* ---- column path ------------------------------------------------------------------------ */

#define TILE_BYTES (32 * 1024)

typedef struct {
    int64_t L, TL, ntiles, items;
} colgeom;

static void col_item(const rplan *p, const colgeom *g, int64_t item, int64_t rb, int64_t re, void *acc) {
    int64_t tile = item % g->ntiles, ko = item / g->ntiles;
    int64_t j0 = tile * g->TL, tl = g->L - j0 < g->TL ? g->L - j0 : g->TL;
    int64_t ioff, ooff, aoff;
    kept_offsets(p, 1, ko, &ioff, &ooff, &aoff);
    const char *base = p->in + ioff + j0 * p->kis[0];
    const char *auxp = p->aux ? p->aux + aoff + j0 * p->kas[0] : NULL;
    int64_t idx[PTL_MAX_DIMS], rem = rb;
    for (int d = 0; d < p->nr; d++) {
        idx[d] = rem % p->rsz[d];
        rem /= p->rsz[d];
    }
    int first = 1;
    while (rb < re) {
        const char *q = base;
        for (int d = 0; d < p->nr; d++) q += idx[d] * p->ris[d];
        int64_t n = p->rsz[0] - idx[0];
        if (n > re - rb) n = re - rb;
        p->f->col(acc, tl, q, p->kis[0], p->ris[0], n, rb, first, auxp, p->kas[0], p->adt, p->arg);
        first = 0;
        rb += n;
        idx[0] += n;
        for (int d = 0; d < p->nr - 1 && idx[d] >= p->rsz[d]; d++) {
            idx[d] = 0;
            idx[d + 1]++;
        }
    }
}

/* The common column results written by one tight loop each, instead of one call of
 * `finish` per element (which costs more than the reduction itself when few rows are
 * reduced into many columns). Returns 0 where the general path must run. */
static int col_finish_fast(const rplan *p, const void *acc, int64_t tl, char *out, int64_t ost) {
    if (p->aux) return 0;
    int op = p->op, kind = p->kind;
    if ((op == R_SUM || op == R_NANSUM || op == R_MEAN || (op == R_NORM && (kind == K_ABS || kind == K_SQ))) &&
        p->isf) {
        const double *a = (const double *)acc;
        double n = (double)p->N;
        int mean = op == R_MEAN, root = kind == K_SQ;
        if (p->odt == PTL_F32) {
            for (int64_t j = 0; j < tl; j++) {
                double v = mean ? a[j] / n : a[j];
                *(float *)(out + j * ost) = (float)(root ? sqrt(v) : v);
            }
            return 1;
        }
        if (p->odt == PTL_F64) {
            for (int64_t j = 0; j < tl; j++) {
                double v = mean ? a[j] / n : a[j];
                *(double *)(out + j * ost) = root ? sqrt(v) : v;
            }
            return 1;
        }
        return 0;
    }
    if ((op == R_SUM || op == R_NANSUM || op == R_COUNT_NZ) && !p->isf && p->odt == PTL_I64) {
        const int64_t *a = (const int64_t *)acc;
        for (int64_t j = 0; j < tl; j++) *(int64_t *)(out + j * ost) = a[j];
        return 1;
    }
    if ((op == R_AMAX || op == R_AMIN) && p->odt == p->dt && (p->dt == PTL_F32 || p->dt == PTL_F64)) {
        if (p->dt == PTL_F32)
            for (int64_t j = 0; j < tl; j++) *(float *)(out + j * ost) = ((const float *)acc)[j];
        else
            for (int64_t j = 0; j < tl; j++) *(double *)(out + j * ost) = ((const double *)acc)[j];
        return 1;
    }
    return 0;
}

static void col_finish(const rplan *p, const colgeom *g, int64_t item, const void *acc) {
    int64_t tile = item % g->ntiles, ko = item / g->ntiles;
    int64_t j0 = tile * g->TL, tl = g->L - j0 < g->TL ? g->L - j0 : g->TL;
    int64_t ioff, ooff, aoff;
    kept_offsets(p, 1, ko, &ioff, &ooff, &aoff);
    char *out = p->out + ooff + j0 * p->kos[0];
    char *aux = p->aux ? p->aux + aoff + j0 * p->kas[0] : NULL;
    if (col_finish_fast(p, acc, tl, out, p->kos[0])) return;
    for (int64_t j = 0; j < tl; j++) {
        rstate s;
        p->f->cstate(acc, tl, j, p->N, &s);
        finish(p, &s, out + j * p->kos[0], aux ? aux + j * p->kas[0] : NULL);
    }
}

/* bufs: three tile buffers (work, head, tail) */
static void col_run(const rplan *p, const colgeom *g, int64_t b, int64_t e, char *bufs, partial *head,
                    partial *tail) {
    int64_t N = p->N, bufsize = g->TL * p->f->acc_bytes;
    int64_t item = b / N, r = b % N;
    while (b < e) {
        int64_t re = (e - b < N - r) ? r + (e - b) : N;
        partial *part = NULL;
        void *acc = bufs;
        if (r != 0) {
            part = head;
            acc = bufs + bufsize;
        } else if (re != N) {
            part = tail;
            acc = bufs + 2 * bufsize;
        }
        col_item(p, g, item, r, re, acc);
        if (part) {
            part->o = item;
            part->count = re - r;
            part->acc = acc;
        } else {
            col_finish(p, g, item, acc);
        }
        b += re - r;
        r = 0;
        item++;
    }
}

static void col_merge(const rplan *p, const colgeom *g, partial *parts, int np) {
    int have = 0;
    partial cur;
    for (int k = 0; k <= np; k++) {
        if (k < np && parts[k].o < 0) continue;
        if (have && (k == np || parts[k].o != cur.o)) {
            col_finish(p, g, cur.o, cur.acc);
            have = 0;
        }
        if (k == np) break;
        if (have) {
            int64_t j0 = (cur.o % g->ntiles) * g->TL, tl = g->L - j0 < g->TL ? g->L - j0 : g->TL;
            p->f->ccomb(cur.acc, parts[k].acc, tl, cur.count, parts[k].count);
            cur.count += parts[k].count;
        } else {
            cur = parts[k];
            have = 1;
        }
    }
}

/* ---- the entry point ------------------------------------------------------------------- */

/* Reduce `in` into `out` (keepdim shape: size 1 on reduced dims). aux: the index output
 * of max/min, the mean output of var/std (optional), the shift (max) input of logsumexp.
 * arg: var/std correction, norm's p. */
int ptl_reduce(int op, const ptl_tensor *in, const ptl_tensor *out, const ptl_tensor *aux, double arg) {
    if (op < 0 || op >= R_NUM_OPS) return PTL_ERR_ARG;
    if (in->dtype < 0 || in->dtype >= PTL_NUM_DTYPES || out->dtype < 0 || out->dtype >= PTL_NUM_DTYPES ||
        (aux && (aux->dtype < 0 || aux->dtype >= PTL_NUM_DTYPES)))
        return PTL_ERR_DTYPE;
    if ((op == R_MAX || op == R_MIN) && (!aux || aux->dtype != PTL_I64)) return PTL_ERR_ARG;
    if ((op == R_ARGMAX || op == R_ARGMIN) && out->dtype != PTL_I64) return PTL_ERR_ARG;
    rplan p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.dt = in->dtype;
    p.odt = out->dtype;
    p.adt = aux ? aux->dtype : 0;
    p.isf = in->dtype >= PTL_F16;
    p.arg = arg;
    p.kind = kind_of(op, in->dtype, arg);
    if (p.kind < 0) return PTL_ERR_ARG;
    p.f = kind_table[p.kind][in->dtype];
    if (!p.f) return PTL_ERR_DTYPE;
    int st = build_plan(&p, in, out, aux);
    if (st != PTL_OK) return st;
    if (p.M == 0) return PTL_OK;
    if (op == R_LOGSUMEXP && !p.aux && p.N > 0) return PTL_ERR_ARG;
    if (p.N == 0 && (p.kind == K_MAX || p.kind == K_MIN || p.kind == K_MAXABS || p.kind == K_MINABS ||
                     p.kind == K_ARGMAX || p.kind == K_ARGMIN))
        return PTL_ERR_INDEX; /* no identity: the caller raises PyTorch's message first */

    /* column path when a kept dim moves fastest in memory, or the reduced rows are too
     * short for a row loop to pay for its call */
    int column = p.N > 1 && p.nk > 0 &&
                 (stride_key(p.kis[0]) < stride_key(p.ris[0]) || p.rsz[0] < 16);
    int64_t total = p.M * (p.N > 0 ? p.N : 1);
    int nthreads = 1;
#ifdef _OPENMP
    nthreads = omp_get_max_threads();
    if (total < PTL_GRAIN) nthreads = 1;
    else if (total / (PTL_GRAIN / 2) < nthreads) nthreads = (int)(total / (PTL_GRAIN / 2));
#endif
    if (p.N == 0) column = 0;

    partial *parts = (partial *)calloc((size_t)2 * nthreads, sizeof(partial));
    if (!parts) return PTL_ERR_ALLOC;
    for (int k = 0; k < 2 * nthreads; k++) parts[k].o = -1;
    int used = 1;

    if (!column) {
        if (p.N == 0) {
            /* empty reductions: every output is the identity (0, 1, nan, True, ...) */
            for (int64_t o = 0; o < p.M; o++) {
                int64_t ioff, ooff, aoff;
                kept_offsets(&p, 0, o, &ioff, &ooff, &aoff);
                rstate s;
                init_state(&p, &s, p.aux ? p.aux + aoff : NULL);
                finish(&p, &s, p.out + ooff, p.aux ? p.aux + aoff : NULL);
            }
        } else if (nthreads <= 1) {
            row_run(&p, 0, total, &parts[0], &parts[1]);
        } else {
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
            {
                int t = omp_get_thread_num(), nt = omp_get_num_threads();
                if (t == 0) used = nt;
                int64_t b = total * t / nt, e = total * (t + 1) / nt;
                if (e > b) row_run(&p, b, e, &parts[2 * t], &parts[2 * t + 1]);
            }
#endif
        }
        row_merge(&p, parts, 2 * used);
    } else {
        colgeom g;
        g.L = p.ksz[0];
        g.TL = TILE_BYTES / p.f->acc_bytes;
        if (g.L <= g.TL + g.TL / 2) g.TL = g.L; /* a tile a bit too big beats a sliver of a second one */
        g.ntiles = (g.L + g.TL - 1) / g.TL;
        g.items = (p.M / g.L) * g.ntiles;
        int64_t bufsize = g.TL * p.f->acc_bytes;
        char *bufs = (char *)malloc((size_t)(3 * bufsize * nthreads));
        if (!bufs) {
            free(parts);
            return PTL_ERR_ALLOC;
        }
        int64_t ctotal = g.items * p.N;
        if (nthreads <= 1) {
            col_run(&p, &g, 0, ctotal, bufs, &parts[0], &parts[1]);
        } else {
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
            {
                int t = omp_get_thread_num(), nt = omp_get_num_threads();
                if (t == 0) used = nt;
                int64_t b = ctotal * t / nt, e = ctotal * (t + 1) / nt;
                if (e > b) col_run(&p, &g, b, e, bufs + 3 * bufsize * t, &parts[2 * t], &parts[2 * t + 1]);
            }
#endif
        }
        col_merge(&p, &g, parts, 2 * used);
        free(bufs);
    }
    free(parts);
    return PTL_OK;
}
