/* reduce.c: the reduction engine, and the hand-written fast paths ops.yaml names.
 *
 * What a reduction computes is declared in ops.yaml (`- reduction:` entries: map,
 * combine or prefer, identity, finish; docs/ops_yaml.md) and codegen writes, per
 * reduction and dtype, the functions this engine calls (generated/reductions.c, through a
 * ptl_red_instance: kernels/ptl_reduce.h). This file knows no reduction by name. One entry
 * point, ptl_reduce(op, in, out, aux, arg); the caller (pytorchlite/_kernels/reduce.py)
 * describes the output in its keepdim shape: same ndim as the input, size 1 on every
 * reduced dimension. From the two descriptors the engine
 *
 *   1. splits the dimensions into kept (output) and reduced ones, drops size-1 dims,
 *      sorts each group by input stride and merges neighbours that are contiguous;
 *   2. picks a path:
 *        row    - the reduced dims are innermost: each output element is one (strided)
 *                 run of input, reduced by the instance's "row" function (several
 *                 accumulators; sum over dim=1 of a row-major matrix);
 *        column - a kept dim is innermost: whole rows of that dim are accumulated into a
 *                 tile of per-column accumulators, so memory is read front to back
 *                 (sum over dim=0);
 *   3. splits the flattened (outputs x reduced elements) space evenly across OpenMP
 *      threads. A thread's first and last output may be shared with its neighbours:
 *      those partial states are merged in thread order afterwards, which keeps the
 *      "first occurrence" rule of max/argmax and makes a full reduction of one huge
 *      tensor use every core.
 *
 * The fast paths (the declarations' `fast:` entries) are the hand-vectorised float32 /
 * float64 loops below: contiguous float32 rows add 512-element blocks in float32 lanes
 * (16 values per lane) and the block totals in double (the streaming speed of a float32
 * loop, the accuracy of a cascade); float64 rows use blocked lanes so the error grows with
 * the block count, not with n; max/min/argmax/argmin find block extremes with vector
 * compares; var takes per-block two-pass moments (rows) or shifted sums (columns), merged
 * with the declared Chan combine. PTL_REDUCE_GENERIC=1 in the environment turns them off,
 * so that the tests can compare every generated generic instance against them.
 */
#include "../generated/reductions.h"

#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

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

/* ---- the fast paths the declarations name ------------------------------------------------
 * Row paths (kernels/ptl_reduce.h): fold a contiguous run into *acc with the declared
 * combine or prefer, or decline (return 0) and let the generated loop run. */

int ptl_red_fast_sum_f32(const float *p, int64_t n, int64_t idx0, double *acc, int64_t *index) {
    (void)idx0; (void)index;
    *acc = ptl_red_combine_sum_f32(*acc, sum_f32_contig(p, n));
    return 1;
}
int ptl_red_fast_sum_f64(const double *p, int64_t n, int64_t idx0, double *acc, int64_t *index) {
    (void)idx0; (void)index;
    *acc = ptl_red_combine_sum_f64(*acc, sum_f64_contig(p, n));
    return 1;
}

/* below 64 elements the generated loop is as fast */
#define DEF_FAST_EXTREME(NAME, T, FN, PREFER)                                                       \
    int NAME(const T *p, int64_t n, int64_t idx0, T *acc, int64_t *index) {                        \
        if (n < 64) return 0;                                                                      \
        int nan = 0;                                                                               \
        T m = FN(p, n, &nan);                                                                      \
        if (nan) m = NAN;                                                                          \
        if (*index < 0 || PREFER(*acc, m)) {                                                       \
            *acc = m;                                                                              \
            *index = idx0;                                                                         \
        }                                                                                          \
        return 1;                                                                                  \
    }
DEF_FAST_EXTREME(ptl_red_fast_amax_f32, float, max_f32_contig, ptl_red_prefer_amax_f32)
DEF_FAST_EXTREME(ptl_red_fast_amin_f32, float, min_f32_contig, ptl_red_prefer_amin_f32)
DEF_FAST_EXTREME(ptl_red_fast_amax_f64, double, max_f64_contig, ptl_red_prefer_amax_f64)
DEF_FAST_EXTREME(ptl_red_fast_amin_f64, double, min_f64_contig, ptl_red_prefer_amin_f64)

/* Find each block's extreme with the vector loop, and only when it beats the best so far
 * look for its first position inside the (cached) block. */
#define DEF_FAST_ARG(NAME, T, FN, OP, PREFER)                                                       \
    int NAME(const T *p, int64_t n, int64_t idx0, T *acc, int64_t *index) {                        \
        if (n < 64) return 0;                                                                      \
        T best = 0;                                                                                \
        int64_t bi = -1;                                                                           \
        for (int64_t b = 0; b < n; b += 512) {                                                     \
            int64_t len = n - b < 512 ? n - b : 512;                                               \
            int nan = 0;                                                                           \
            T m = FN(p + b, len, &nan);                                                            \
            if (nan) {                                                                             \
                for (int64_t k = 0; k < len; k++)                                                  \
                    if (p[b + k] != p[b + k]) {                                                    \
                        best = p[b + k];                                                           \
                        bi = b + k;                                                                \
                        break;                                                                     \
                    }                                                                              \
                break;                                                                             \
            }                                                                                      \
            if (bi < 0 || m OP best) {                                                             \
                for (int64_t k = 0; k < len; k++)                                                  \
                    if (p[b + k] == m) {                                                           \
                        bi = b + k;                                                                \
                        break;                                                                     \
                    }                                                                              \
                best = m;                                                                          \
            }                                                                                      \
        }                                                                                          \
        if (*index < 0 || PREFER(*acc, best)) {                                                    \
            *acc = best;                                                                           \
            *index = idx0 + bi;                                                                    \
        }                                                                                          \
        return 1;                                                                                  \
    }
DEF_FAST_ARG(ptl_red_fast_argmax_f32, float, max_f32_contig, >, ptl_red_prefer_argmax_f32)
DEF_FAST_ARG(ptl_red_fast_argmin_f32, float, min_f32_contig, <, ptl_red_prefer_argmin_f32)
DEF_FAST_ARG(ptl_red_fast_argmax_f64, double, max_f64_contig, >, ptl_red_prefer_argmax_f64)
DEF_FAST_ARG(ptl_red_fast_argmin_f64, double, min_f64_contig, <, ptl_red_prefer_argmin_f64)

/* var: blocks of 1024 (in cache) get an exact two-pass mean and M2, merged in order
 * with the declared combine (the generic loop updates per element, dividing) */
#define VAR_BLOCK 1024
#define DEF_FAST_VAR(SFX, T, SUMFN, SQFN)                                                           \
    int ptl_red_fast_var_##SFX(const T *p, int64_t n, int64_t idx0, ptl_red_acc_var *acc,          \
                               int64_t *index) {                                                   \
        (void)idx0; (void)index;                                                                   \
        for (int64_t b = 0; b < n; b += VAR_BLOCK) {                                               \
            int64_t len = n - b < VAR_BLOCK ? n - b : VAR_BLOCK;                                   \
            double mean = SUMFN(p + b, len) / (double)len;                                         \
            ptl_red_acc_var blk = {.n = (double)len, .mean = mean, .m2 = SQFN(p + b, len, mean)};   \
            *acc = ptl_red_combine_var_##SFX(*acc, blk);                                           \
        }                                                                                          \
        return 1;                                                                                  \
    }
DEF_FAST_VAR(f32, float, sum_f32_contig, sqdev_f32_contig)
DEF_FAST_VAR(f64, double, sum_f64_contig, sqdev_f64_contig)

/* float16 / bfloat16: each block converted once into a double buffer, then two passes */
#define DEF_FAST_VAR_HALF(SFX, LOAD)                                                                \
    int ptl_red_fast_var_##SFX(const uint16_t *p, int64_t n, int64_t idx0, ptl_red_acc_var *acc,   \
                               int64_t *index) {                                                   \
        (void)idx0; (void)index;                                                                   \
        double buf[VAR_BLOCK];                                                                     \
        for (int64_t b = 0; b < n; b += VAR_BLOCK) {                                               \
            int64_t len = n - b < VAR_BLOCK ? n - b : VAR_BLOCK;                                   \
            double sum = 0, m2 = 0;                                                                \
            for (int64_t k = 0; k < len; k++) {                                                    \
                buf[k] = LOAD(p[b + k]);                                                           \
                sum += buf[k];                                                                     \
            }                                                                                      \
            double mean = sum / (double)len;                                                       \
            for (int64_t k = 0; k < len; k++) m2 += (buf[k] - mean) * (buf[k] - mean);            \
            ptl_red_acc_var blk = {.n = (double)len, .mean = mean, .m2 = m2};                      \
            *acc = ptl_red_combine_var_##SFX(*acc, blk);                                           \
        }                                                                                          \
        return 1;                                                                                  \
    }
DEF_FAST_VAR_HALF(f16, ptl_h2f)
DEF_FAST_VAR_HALF(bf16, ptl_bf2f)

/* var's column path: per-column sums of (x - shift) and (x - shift)^2 with the column's
 * first value as shift, which avoids the cancellation of the naive sum-of-squares formula
 * and vectorises (the declared per-element Chan update divides); tiles are merged with
 * the declared combine. Tile: shift[L], s1[L], s2[L]. */
static void var_from_shifted(const double *acc, int64_t L, int64_t j, int64_t n, ptl_red_acc_var *m) {
    double sh = acc[j], s1 = acc[L + j], s2 = acc[2 * L + j];
    m->n = (double)n;
    m->mean = sh + s1 / (double)n;
    double v = s2 - s1 * s1 / (double)n;
    m->m2 = v < 0 ? 0 : v; /* rounding can dip below 0; a NaN must stay NaN */
}
#define DEF_FAST_VAR_COL(SFX, ST, LOAD)                                                             \
    PTL_HOT static void var_col_##SFX(void *accv, int64_t L, const char *p, int64_t cst, int64_t rst, \
                                      int64_t nrows, int64_t r0, int first, const char *aux,       \
                                      int64_t ast, int adt, double parg) {                         \
        (void)r0; (void)aux; (void)ast; (void)adt; (void)parg;                                     \
        double *restrict sh = (double *)accv, *restrict s1 = sh + L, *restrict s2 = sh + 2 * L;    \
        int64_t r = 0;                                                                             \
        if (first) {                                                                               \
            for (int64_t j = 0; j < L; j++) {                                                      \
                sh[j] = LOAD(*(const ST *)(p + j * cst));                                          \
                s1[j] = 0;                                                                         \
                s2[j] = 0;                                                                         \
            }                                                                                      \
            r = 1;                                                                                 \
        }                                                                                          \
        for (; r < nrows; r++) {                                                                   \
            const char *q = p + r * rst;                                                           \
            if (cst == (int64_t)sizeof(ST)) {                                                      \
                const ST *restrict qq = (const ST *)q;                                             \
                for (int64_t j = 0; j < L; j++) {                                                  \
                    double d = (double)LOAD(qq[j]) - sh[j];                                        \
                    s1[j] += d;                                                                    \
                    s2[j] += d * d;                                                                \
                }                                                                                  \
            } else {                                                                               \
                for (int64_t j = 0; j < L; j++) {                                                  \
                    double d = (double)LOAD(*(const ST *)(q + j * cst)) - sh[j];                   \
                    s1[j] += d;                                                                    \
                    s2[j] += d * d;                                                                \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void var_ccomb_##SFX(void *a, const void *b, int64_t L, int64_t na, int64_t nb) {       \
        double *x = (double *)a;                                                                   \
        const double *y = (const double *)b;                                                       \
        for (int64_t j = 0; j < L; j++) {                                                          \
            ptl_red_acc_var ma, mb;                                                                \
            var_from_shifted(x, L, j, na, &ma);                                                    \
            var_from_shifted(y, L, j, nb, &mb);                                                    \
            ma = ptl_red_combine_var_##SFX(ma, mb);                                                \
            /* back in shifted form: shift = mean, s1 = 0, s2 = M2 */                              \
            x[j] = ma.mean;                                                                        \
            x[L + j] = 0;                                                                          \
            x[2 * L + j] = ma.m2;                                                                  \
        }                                                                                          \
    }                                                                                              \
    static void var_cstate_##SFX(const void *acc, int64_t L, int64_t j, int64_t nrows,             \
                                 ptl_red_state *s) {                                               \
        ptl_red_acc_var m;                                                                         \
        memset(s, 0, sizeof *s);                                                                   \
        var_from_shifted((const double *)acc, L, j, nrows, &m);                                    \
        memcpy(s->acc.bytes, &m, sizeof m);                                                        \
    }                                                                                              \
    const ptl_red_colpath ptl_red_fast_var_col_##SFX = {var_col_##SFX, var_ccomb_##SFX, var_cstate_##SFX, 24};
#define LOAD_F16(v) ptl_h2f(v)
#define LOAD_BF16(v) ptl_bf2f(v)
#define LOAD_F(v) (v)
DEF_FAST_VAR_COL(f16, uint16_t, LOAD_F16)
DEF_FAST_VAR_COL(bf16, uint16_t, LOAD_BF16)
DEF_FAST_VAR_COL(f32, float, LOAD_F)
DEF_FAST_VAR_COL(f64, double, LOAD_F)

/* ---- the plan ---------------------------------------------------------------------------- */

int ptl_red_fast_enabled = -1; /* read from PTL_REDUCE_GENERIC at the first reduction */

typedef struct {
    const ptl_red_instance *f;
    const ptl_red_colpath *cp; /* f->col, or f->col_generic when the fast paths are off */
    int dt, odt, adt;
    double arg;
    int nk, nr;
    int64_t ksz[PTL_MAX_DIMS], kis[PTL_MAX_DIMS], kos[PTL_MAX_DIMS], kas[PTL_MAX_DIMS];
    int64_t rsz[PTL_MAX_DIMS], ris[PTL_MAX_DIMS];
    int64_t M, N;
    char *in, *out, *aux;
} rplan;

static void finish(const rplan *p, const ptl_red_state *s, char *out, char *aux) {
    p->f->finish(s, p->N, p->arg, out, p->odt, aux, p->adt);
}

/* an aux input (logsumexp's shift) is read only when there is something to reduce */
static void init_state(const rplan *p, ptl_red_state *s, const char *aux) {
    p->f->init(s, p->N > 0 ? aux : NULL, p->adt);
}

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
static void reduce_range(const rplan *p, const char *base, int64_t rb, int64_t re, ptl_red_state *s) {
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
    ptl_red_state s;
    void *acc;
} partial;

/* ---- row path ------------------------------------------------------------------------- */

static void row_run(const rplan *p, int64_t b, int64_t e, partial *head, partial *tail) {
    int64_t N = p->N;
    /* one run per output: whole outputs along the innermost kept dim go to the instance in
     * one call (state, loop and typed store together), which matters when rows are short */
    const int whole = p->nr == 1;
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
        if (whole && r == 0 && re == N) {
            int64_t count = (e - b) / N;
            if (p->nk == 0) {
                count = 1;
            } else if (count > p->ksz[0] - kidx[0]) {
                count = p->ksz[0] - kidx[0];
            }
            p->f->rows(p->in + ioff, N, p->ris[0], count, p->nk ? p->kis[0] : 0, p->arg, p->out + ooff,
                       p->nk ? p->kos[0] : 0, p->odt, auxp, p->nk ? p->kas[0] : 0, p->adt);
            /* the last of them is the current output: the loop below moves past it */
            b += (count - 1) * N;
            o += count - 1;
            if (p->nk) {
                kidx[0] += count - 1;
                ioff += (count - 1) * p->kis[0];
                ooff += (count - 1) * p->kos[0];
                aoff += (count - 1) * p->kas[0];
            }
        } else {
            ptl_red_state s;
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
        }
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
        p->cp->col(acc, tl, q, p->kis[0], p->ris[0], n, rb, first, auxp, p->kas[0], p->adt, p->arg);
        first = 0;
        rb += n;
        idx[0] += n;
        for (int d = 0; d < p->nr - 1 && idx[d] >= p->rsz[d]; d++) {
            idx[d] = 0;
            idx[d + 1]++;
        }
    }
}

static void col_finish(const rplan *p, const colgeom *g, int64_t item, const void *acc) {
    int64_t tile = item % g->ntiles, ko = item / g->ntiles;
    int64_t j0 = tile * g->TL, tl = g->L - j0 < g->TL ? g->L - j0 : g->TL;
    int64_t ioff, ooff, aoff;
    kept_offsets(p, 1, ko, &ioff, &ooff, &aoff);
    char *out = p->out + ooff + j0 * p->kos[0];
    char *aux = p->aux ? p->aux + aoff + j0 * p->kas[0] : NULL;
    /* the tile of the generic layout straight into the declared output dtype: one loop
     * instead of one call of `finish` per element (which costs more than the reduction
     * itself when few rows are reduced into many columns) */
    if (p->cp == p->f->col_generic && p->odt == p->f->out_dtype && !(aux && (p->f->flags & PTL_RED_AUX_OUT))) {
        p->f->cfinish(acc, tl, p->N, p->arg, out, p->kos[0]);
        return;
    }
    for (int64_t j = 0; j < tl; j++) {
        ptl_red_state s;
        p->cp->cstate(acc, tl, j, p->N, &s);
        finish(p, &s, out + j * p->kos[0], aux ? aux + j * p->kas[0] : NULL);
    }
}

/* bufs: three tile buffers (work, head, tail) */
static void col_run(const rplan *p, const colgeom *g, int64_t b, int64_t e, char *bufs, partial *head,
                    partial *tail) {
    int64_t N = p->N, bufsize = g->TL * p->cp->acc_bytes;
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
            p->cp->ccomb(cur.acc, parts[k].acc, tl, cur.count, parts[k].count);
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
    if (ptl_red_fast_enabled < 0) {
        const char *g = getenv("PTL_REDUCE_GENERIC");
        ptl_red_fast_enabled = !(g && *g && *g != '0');
    }
    if (op < 0 || op >= R_NUM_OPS) return PTL_ERR_ARG;
    if (in->dtype < 0 || in->dtype >= PTL_NUM_DTYPES || out->dtype < 0 || out->dtype >= PTL_NUM_DTYPES ||
        (aux && (aux->dtype < 0 || aux->dtype >= PTL_NUM_DTYPES)))
        return PTL_ERR_DTYPE;
    rplan p;
    memset(&p, 0, sizeof p);
    p.f = ptl_red_lookup(op, in->dtype, arg);
    if (!p.f) return PTL_ERR_DTYPE;
    if (p.f->aux_dtype >= 0 && (!aux || aux->dtype != p.f->aux_dtype)) return PTL_ERR_ARG;
    p.cp = ptl_red_fast_enabled ? p.f->col : p.f->col_generic;
    p.dt = in->dtype;
    p.odt = out->dtype;
    p.adt = aux ? aux->dtype : 0;
    p.arg = arg;
    int st = build_plan(&p, in, out, aux);
    if (st != PTL_OK) return st;
    if (p.M == 0) return PTL_OK;
    if ((p.f->flags & PTL_RED_AUX_IN) && !p.aux && p.N > 0) return PTL_ERR_ARG;
    if (p.N == 0 && (p.f->flags & PTL_RED_NO_IDENTITY))
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
                ptl_red_state s;
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
        g.TL = TILE_BYTES / p.cp->acc_bytes;
        if (g.L <= g.TL + g.TL / 2) g.TL = g.L; /* a tile a bit too big beats a sliver of a second one */
        g.ntiles = (g.L + g.TL - 1) / g.TL;
        g.items = (p.M / g.L) * g.ntiles;
        int64_t bufsize = g.TL * p.cp->acc_bytes;
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
