/* matmul.c: matrix products for every dtype (the C step of a call, see docs/architecture.md).
 *
 * ptl_gemm (descriptors) and ptl_gemm2d (plain arguments, the cheap 2-D call) compute
 *
 *     C[b] = beta * C[b] + alpha * A[b] @ B[b]          for every batch index b, or
 *     C    = beta * C    + alpha * sum_b A[b] @ B[b]    with reduce_batches (addbmm),
 *
 * where A is (..., M, K), B is (..., K, N) and C is a contiguous (..., M, N) (or (M, N)).
 * A and B may have any strides, including 0 for broadcast batch dimensions; mm, bmm, mv,
 * dot and matmul are all this one computation with the right geometry. The Python side checks
 * shapes and dtypes first; the checks here only guard memory safety.
 *
 * float32/float64 go to the BLAS chosen at import (ptl_blas.h: OpenBLAS from the
 * scipy-openblas32 build, or MKL when installed; blasint is 32-bit either way). A matrix whose rows or columns are contiguous is handed
 * over as it is, transposed when it is column-major, so `a @ b.t()` copies nothing; a matrix
 * with neither layout (step-sliced both ways, expanded rows) is packed into a buffer.
 * The BLAS runs its own threads, so the batch loop calls it from one thread.
 *
 * float16/bfloat16 are widened to float32, multiplied by sgemm and rounded once on store.
 * Integers use a blocked C kernel that wraps like the dtype: for types of 32 bits or fewer
 * the products are accumulated in uint32 (arithmetic modulo 2^32 reduces to the same value
 * modulo 2^8 or 2^16 as int64 accumulation would, and AVX2 multiplies 32-bit lanes natively);
 * int64 accumulates in uint64. Unsigned arithmetic keeps the wrap-around defined behaviour.
 */

#include <limits.h>
#include <stdlib.h>

#include <omp.h>

#include "ptl.h"
#include "ptl_blas.h"

/* ---- the GEMM in use (see ptl_blas.h) --------------------------------------------------- */

ptl_sgemm_fn *ptl_sgemm = scipy_cblas_sgemm;
ptl_dgemm_fn *ptl_dgemm = scipy_cblas_dgemm;
ptl_sgemm_batch_fn *ptl_sgemm_batch = scipy_cblas_sgemm_batch_strided;
ptl_dgemm_batch_fn *ptl_dgemm_batch = scipy_cblas_dgemm_batch_strided;

/* Point GEMM at another CBLAS (all four addresses), or back at OpenBLAS (all zero). Called
 * once at import, before any kernel runs. */
int ptl_set_gemm(intptr_t sgemm, intptr_t dgemm, intptr_t sgemm_batch, intptr_t dgemm_batch) {
    if (!sgemm && !dgemm && !sgemm_batch && !dgemm_batch) {
        ptl_sgemm = scipy_cblas_sgemm;
        ptl_dgemm = scipy_cblas_dgemm;
        ptl_sgemm_batch = scipy_cblas_sgemm_batch_strided;
        ptl_dgemm_batch = scipy_cblas_dgemm_batch_strided;
        return PTL_OK;
    }
    if (!sgemm || !dgemm || !sgemm_batch || !dgemm_batch) return PTL_ERR_ARG;
    ptl_sgemm = (ptl_sgemm_fn *)sgemm;
    ptl_dgemm = (ptl_dgemm_fn *)dgemm;
    ptl_sgemm_batch = (ptl_sgemm_batch_fn *)sgemm_batch;
    ptl_dgemm_batch = (ptl_dgemm_batch_fn *)dgemm_batch;
    return PTL_OK;
}

/* ---- operand geometry ---------------------------------------------------------------- */

#define MAX_BATCH PTL_MAX_DIMS

typedef struct {
    int64_t M, N, K;
    /* batch dimensions after dropping size-1 dims and merging contiguous neighbours */
    int nb;
    int64_t bsize[MAX_BATCH];
    int64_t bstride[3][MAX_BATCH]; /* C, A, B (C's is 0 when the batches are reduced) */
    int64_t nbatch;
    char *data[3];
    int64_t rs[3], cs[3];          /* row and column strides of each matrix, in elements */
    int reduce;
} gemm_problem;

/* Element offsets of batch `idx` for C, A and B. */
static void batch_offsets(const gemm_problem *p, int64_t idx, int64_t off[3]) {
    off[0] = off[1] = off[2] = 0;
    for (int d = p->nb - 1; d >= 0; d--) {
        int64_t i = idx % p->bsize[d];
        idx /= p->bsize[d];
        for (int k = 0; k < 3; k++) off[k] += i * p->bstride[k][d];
    }
}

/* Can BLAS read this rows x cols matrix in place? Row-major NoTrans needs unit column
 * stride and a row stride >= cols; Trans (column-major storage) the converse. A dimension
 * of size 1 places no constraint on its stride. Sets *trans and *ld on success. */
static int blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int *trans, int64_t *ld) {
    int64_t mc = cols > 1 ? cols : 1, mr = rows > 1 ? rows : 1;
    if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= mc)) {
        *trans = 0;
        *ld = rows <= 1 ? mc : rs;
        return *ld <= INT_MAX;
    }
    if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= mr)) {
        *trans = 1;
        *ld = cols <= 1 ? mr : cs;
        return *ld <= INT_MAX;
    }
    return 0;
}

/* ---- packing: any dtype and strides -> a dense row-major buffer of the compute type ---- */

#define PACK_LOOP(ST, EXPR)                                                      \
    do {                                                                         \
        const ST *s_ = (const ST *)src;                                          \
        for (int64_t i = 0; i < rows; i++)                                       \
            for (int64_t j = 0; j < cols; j++) {                                 \
                ST v = s_[i * rs + j * cs];                                      \
                dst[i * cols + j] = (EXPR);                                      \
            }                                                                    \
    } while (0)

static void pack_f32(float *dst, const char *src, int dtype, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    switch (dtype) {
    case PTL_F16: PACK_LOOP(uint16_t, ptl_h2f(v)); break;
    case PTL_BF16: PACK_LOOP(uint16_t, ptl_bf2f(v)); break;
    default: PACK_LOOP(float, v); break;
    }
}

static void pack_f64(double *dst, const char *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    PACK_LOOP(double, v);
}

/* the BLAS drivers' packers, one signature for both types */
static void pack_blas_f32(float *dst, const char *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    pack_f32(dst, src, PTL_F32, rows, cols, rs, cs);
}
#define pack_blas_f64 pack_f64

static void pack_u32(uint32_t *dst, const char *src, int dtype, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    switch (dtype) {
    case PTL_U8: PACK_LOOP(uint8_t, (uint32_t)v); break;
    case PTL_I8: PACK_LOOP(int8_t, (uint32_t)(int32_t)v); break;
    case PTL_I16: PACK_LOOP(int16_t, (uint32_t)(int32_t)v); break;
    default: PACK_LOOP(int32_t, (uint32_t)v); break;
    }
}

static void pack_u64(uint64_t *dst, const char *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    PACK_LOOP(int64_t, (uint64_t)v);
}

/* Store a dense M x N buffer into C (contiguous), converting to C's dtype. */
static void store_f32(char *c, int dtype, const float *src, int64_t n) {
    if (dtype == PTL_F16) {
        uint16_t *d = (uint16_t *)c;
        for (int64_t i = 0; i < n; i++) d[i] = ptl_f2h(src[i]);
    } else if (dtype == PTL_BF16) {
        uint16_t *d = (uint16_t *)c;
        for (int64_t i = 0; i < n; i++) d[i] = ptl_f2bf(src[i]);
    } else {
        memcpy(c, src, (size_t)n * sizeof(float));
    }
}

/* ---- integer GEMM: C += A @ B on dense row-major buffers, wrapping -------------------- */

/* Blocks: a KB x NB panel of B (128 x 512 x 4 bytes = 256 KiB for uint32) stays in L2
 * while a thread runs its rows over it; the innermost loop is a contiguous axpy over j
 * that the compiler vectorises. */
#define IGEMM_KB 128
#define IGEMM_NB 512

#define DEFINE_IGEMM(U)                                                                        \
    PTL_HOT                                                                                    \
    static void igemm_##U(int64_t M, int64_t N, int64_t K, const U##_t *A, const U##_t *B,      \
                          U##_t *C) {                                                          \
        double work = (double)M * (double)N * (double)K;                                       \
        _Pragma("omp parallel for schedule(static) if (work > 262144.0)")                      \
        for (int64_t i = 0; i < M; i++) {                                                      \
            U##_t *c = C + i * N;                                                              \
            const U##_t *a = A + i * K;                                                        \
            for (int64_t j0 = 0; j0 < N; j0 += IGEMM_NB) {                                     \
                int64_t j1 = j0 + IGEMM_NB < N ? j0 + IGEMM_NB : N;                            \
                for (int64_t k0 = 0; k0 < K; k0 += IGEMM_KB) {                                 \
                    int64_t k1 = k0 + IGEMM_KB < K ? k0 + IGEMM_KB : K;                        \
                    for (int64_t k = k0; k < k1; k++) {                                        \
                        U##_t av = a[k];                                                       \
                        const U##_t *b = B + k * N;                                            \
                        for (int64_t j = j0; j < j1; j++) c[j] += av * b[j];                   \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }

DEFINE_IGEMM(uint32)
DEFINE_IGEMM(uint64)

/* ---- the per-dtype drivers ------------------------------------------------------------ */

/* C = beta * C over the whole (contiguous) output: the k == 0 or no-batch case, where no
 * product contributes. beta == 0 writes zeros, so NaN in C does not survive (PyTorch). */
static void scale_output(char *c, int dtype, int64_t n, double beta_d, int64_t beta_i) {
#define SCALE(T, LOAD, STORE, ZERO, B)                                          \
    do {                                                                         \
        T *x = (T *)c;                                                           \
        for (int64_t i = 0; i < n; i++) x[i] = STORE(B == 0 ? ZERO : LOAD(x[i]) * B); \
    } while (0)
#define ID(v) (v)
#define U64(v) ((uint64_t)(v))
    float bf = (float)beta_d;
    uint64_t bi = (uint64_t)beta_i;
    switch (dtype) {
    case PTL_F32: SCALE(float, ID, ID, 0.0f, bf); break;
    case PTL_F64: SCALE(double, ID, ID, 0.0, beta_d); break;
    case PTL_F16: SCALE(uint16_t, ptl_h2f, ptl_f2h, 0.0f, bf); break;
    case PTL_BF16: SCALE(uint16_t, ptl_bf2f, ptl_f2bf, 0.0f, bf); break;
    case PTL_U8: SCALE(uint8_t, U64, (uint8_t), 0, bi); break;
    case PTL_I8: SCALE(int8_t, U64, (int8_t), 0, bi); break;
    case PTL_I16: SCALE(int16_t, U64, (int16_t), 0, bi); break;
    case PTL_I32: SCALE(int32_t, U64, (int32_t), 0, bi); break;
    case PTL_I64: SCALE(int64_t, U64, (int64_t), 0, bi); break;
    }
#undef SCALE
#undef ID
#undef U64
}

/* float32 / float64 through OpenBLAS. */
#define DEFINE_BLAS_DRIVER(T, sfx, GEMM, GEMM_BATCH)                                                  \
    static int gemm_blas_##sfx(const gemm_problem *p, T alpha, T beta) {                              \
        int64_t M = p->M, N = p->N, K = p->K;                                                         \
        int ta = 0, tb = 0;                                                                           \
        int64_t lda = 1, ldb = 1, ldc = N > 1 ? N : 1;                                                \
        int okA = blas_layout(M, K, p->rs[1], p->cs[1], &ta, &lda);                                   \
        int okB = blas_layout(K, N, p->rs[2], p->cs[2], &tb, &ldb);                                   \
        T *bufA = NULL, *bufB = NULL;                                                                 \
        if (!okA && !(bufA = malloc((size_t)(M * K) * sizeof(T)))) return PTL_ERR_ALLOC;              \
        if (!okB && !(bufB = malloc((size_t)(K * N) * sizeof(T)))) { free(bufA); return PTL_ERR_ALLOC; } \
        if (!okA) { ta = 0; lda = K; }                                                                \
        if (!okB) { tb = 0; ldb = N > 1 ? N : 1; }                                                    \
        /* Many mid-sized products: OpenBLAS's strided-batch call spreads the batch over its \
         * threads, where one product is too small to split well. Measured on 2 cores, it     \
         * loses below about 40^3 multiply-adds per product (its per-item setup dominates)    \
         * and gains nothing from 256^3 up. It needs one stride per operand between batches    \
         * and nothing to pack. */                                                             \
        double work = (double)M * N * K;                                                       \
        if (okA && okB && !p->reduce && p->nb == 1 && p->nbatch > 1 && work >= 64000.0 &&        \
            work < 256.0 * 256 * 256 && p->bstride[0][0] <= INT_MAX && p->bstride[1][0] <= INT_MAX && \
            p->bstride[2][0] <= INT_MAX && p->nbatch <= INT_MAX) {                              \
            GEMM_BATCH(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,   \
                       (blasint)M, (blasint)N, (blasint)K, alpha,                                     \
                       (const T *)p->data[1], (blasint)lda, (blasint)p->bstride[1][0],                \
                       (const T *)p->data[2], (blasint)ldb, (blasint)p->bstride[2][0], beta,          \
                       (T *)p->data[0], (blasint)ldc, (blasint)p->bstride[0][0], (blasint)p->nbatch); \
            return PTL_OK;                                                                            \
        }                                                                                             \
        for (int64_t bi = 0; bi < p->nbatch; bi++) {                                                  \
            int64_t off[3];                                                                           \
            batch_offsets(p, bi, off);                                                                \
            const T *a = (const T *)p->data[1] + off[1];                                              \
            const T *b = (const T *)p->data[2] + off[2];                                              \
            T *c = (T *)p->data[0] + off[0];                                                          \
            if (!okA) { pack_blas_##sfx(bufA, (const char *)a, M, K, p->rs[1], p->cs[1]); a = bufA; }  \
            if (!okB) { pack_blas_##sfx(bufB, (const char *)b, K, N, p->rs[2], p->cs[2]); b = bufB; }  \
            T be = (p->reduce && bi > 0) ? (T)1 : beta;                                               \
            GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,       \
                 (blasint)M, (blasint)N, (blasint)K, alpha, a, (blasint)lda, b, (blasint)ldb, be, c,    \
                 (blasint)ldc);                                                                       \
        }                                                                                             \
        free(bufA);                                                                                   \
        free(bufB);                                                                                   \
        return PTL_OK;                                                                                \
    }

DEFINE_BLAS_DRIVER(float, f32, ptl_sgemm, ptl_sgemm_batch)
DEFINE_BLAS_DRIVER(double, f64, ptl_dgemm, ptl_dgemm_batch)

/* float16 / bfloat16: widen to float32 buffers, sgemm, round once. */
static int gemm_half(const gemm_problem *p, int dtype, float alpha, float beta) {
    int64_t M = p->M, N = p->N, K = p->K, MN = M * N;
    float *a = malloc((size_t)(M * K) * sizeof(float));
    float *b = malloc((size_t)(K * N) * sizeof(float));
    float *c = malloc((size_t)MN * sizeof(float));
    if (!a || !b || !c) { free(a); free(b); free(c); return PTL_ERR_ALLOC; }
    int ldn = N > 1 ? (int)N : 1, ldk = K > 1 ? (int)K : 1;
    for (int64_t bi = 0; bi < p->nbatch; bi++) {
        int64_t off[3];
        batch_offsets(p, bi, off);
        pack_f32(a, p->data[1] + off[1] * 2, dtype, M, K, p->rs[1], p->cs[1]);
        pack_f32(b, p->data[2] + off[2] * 2, dtype, K, N, p->rs[2], p->cs[2]);
        char *cp = p->data[0] + off[0] * 2;
        float be = beta;
        if (p->reduce && bi > 0) {
            be = 1.0f;                 /* keep accumulating in float32 */
        } else if (beta != 0.0f) {
            pack_f32(c, cp, dtype, M, N, N, 1);
        } else {
            memset(c, 0, (size_t)MN * sizeof(float));   /* never let 0 * garbage make a NaN */
        }
        ptl_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)M, (blasint)N, (blasint)K,
                          alpha, a, ldk, b, ldn, be, c, ldn);
        if (!p->reduce) store_f32(cp, dtype, c, MN);
    }
    if (p->reduce) store_f32(p->data[0], dtype, c, MN);
    free(a);
    free(b);
    free(c);
    return PTL_OK;
}

/* Integers: pack to the accumulation type, multiply, then C = beta * C + alpha * acc. */
#define DEFINE_INT_DRIVER(U, PACK_A, PACK_B)                                                      \
    static int gemm_int_##U(const gemm_problem *p, int dtype, U##_t alpha, U##_t beta) {          \
        int64_t M = p->M, N = p->N, K = p->K, MN = M * N;                                         \
        int isz = ptl_itemsize[dtype];                                                            \
        U##_t *a = malloc((size_t)(M * K) * sizeof(U##_t));                                       \
        U##_t *b = malloc((size_t)(K * N) * sizeof(U##_t));                                       \
        U##_t *acc = malloc((size_t)MN * sizeof(U##_t));                                          \
        if (!a || !b || !acc) { free(a); free(b); free(acc); return PTL_ERR_ALLOC; }              \
        for (int64_t bi = 0; bi < p->nbatch; bi++) {                                              \
            int64_t off[3];                                                                       \
            batch_offsets(p, bi, off);                                                            \
            PACK_A;                                                                               \
            PACK_B;                                                                               \
            if (!p->reduce || bi == 0) memset(acc, 0, (size_t)MN * sizeof(U##_t));                \
            igemm_##U(M, N, K, a, b, acc);                                                        \
            if (!p->reduce || bi == p->nbatch - 1) {                                              \
                char *cp = p->data[0] + off[0] * isz;                                             \
                for (int64_t i = 0; i < MN; i++) {                                                \
                    U##_t r = alpha * acc[i];                                                     \
                    if (beta != 0) r += beta * load_int_##U(cp, dtype, i);                        \
                    store_int_##U(cp, dtype, i, r);                                               \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        free(a);                                                                                  \
        free(b);                                                                                  \
        free(acc);                                                                                \
        return PTL_OK;                                                                            \
    }

static inline uint32_t load_int_uint32(const char *c, int dtype, int64_t i) {
    switch (dtype) {
    case PTL_U8: return ((const uint8_t *)c)[i];
    case PTL_I8: return (uint32_t)(int32_t)((const int8_t *)c)[i];
    case PTL_I16: return (uint32_t)(int32_t)((const int16_t *)c)[i];
    default: return (uint32_t)((const int32_t *)c)[i];
    }
}

static inline void store_int_uint32(char *c, int dtype, int64_t i, uint32_t v) {
    switch (dtype) {
    case PTL_U8: ((uint8_t *)c)[i] = (uint8_t)v; break;
    case PTL_I8: ((int8_t *)c)[i] = (int8_t)v; break;
    case PTL_I16: ((int16_t *)c)[i] = (int16_t)v; break;
    default: ((int32_t *)c)[i] = (int32_t)v; break;
    }
}

static inline uint64_t load_int_uint64(const char *c, int dtype, int64_t i) {
    (void)dtype;
    return (uint64_t)((const int64_t *)c)[i];
}

static inline void store_int_uint64(char *c, int dtype, int64_t i, uint64_t v) {
    (void)dtype;
    ((int64_t *)c)[i] = (int64_t)v;
}

DEFINE_INT_DRIVER(uint32,
                  pack_u32(a, p->data[1] + off[1] * isz, dtype, M, K, p->rs[1], p->cs[1]),
                  pack_u32(b, p->data[2] + off[2] * isz, dtype, K, N, p->rs[2], p->cs[2]))
DEFINE_INT_DRIVER(uint64,
                  pack_u64(a, p->data[1] + off[1] * 8, M, K, p->rs[1], p->cs[1]),
                  pack_u64(b, p->data[2] + off[2] * 8, K, N, p->rs[2], p->cs[2]))

/* ---- the entries ---------------------------------------------------------------------- */

/* Dispatch a checked problem by dtype, after the cases with no product term. */
static int run_problem(const gemm_problem *p, int dtype, double alpha_d, int64_t alpha_i, double beta_d,
                       int64_t beta_i) {
    if (p->M == 0 || p->N == 0) return PTL_OK;
    if (p->nbatch == 0 && !p->reduce) return PTL_OK;
    if (p->K == 0 || p->nbatch == 0) {
        /* no product term: C = beta * C (zeros when beta == 0) */
        scale_output(p->data[0], dtype, (p->reduce ? 1 : p->nbatch) * p->M * p->N, beta_d, beta_i);
        return PTL_OK;
    }
    switch (dtype) {
    case PTL_F32: return gemm_blas_f32(p, (float)alpha_d, (float)beta_d);
    case PTL_F64: return gemm_blas_f64(p, alpha_d, beta_d);
    case PTL_F16:
    case PTL_BF16: return gemm_half(p, dtype, (float)alpha_d, (float)beta_d);
    case PTL_I64: return gemm_int_uint64(p, dtype, (uint64_t)alpha_i, (uint64_t)beta_i);
    default: return gemm_int_uint32(p, dtype, (uint32_t)(uint64_t)alpha_i, (uint32_t)(uint64_t)beta_i);
    }
}

/* The general entry: descriptors of C, A, B with the same number of dimensions (C has
 * two with reduce_batches), batch dimensions already broadcast (stride 0 allowed). */
int ptl_gemm(const ptl_tensor *ts, double alpha_d, int64_t alpha_i, double beta_d, int64_t beta_i,
             int reduce_batches) {
    const ptl_tensor *C = &ts[0], *A = &ts[1], *B = &ts[2];
    int nd = A->ndim, nb = nd - 2, dtype = A->dtype;
    if (nd < 2 || nd > PTL_MAX_DIMS || B->ndim != nd || C->ndim != (reduce_batches ? 2 : nd))
        return PTL_ERR_ARG;
    if (B->dtype != dtype || C->dtype != dtype || dtype < 0 || dtype >= PTL_NUM_DTYPES)
        return PTL_ERR_DTYPE;
    if (dtype == PTL_BOOL) return PTL_ERR_DTYPE;
    gemm_problem p;
    p.M = A->sizes[nb];
    p.K = A->sizes[nb + 1];
    p.N = B->sizes[nb + 1];
    p.reduce = reduce_batches;
    int cb = C->ndim - 2;
    if (B->sizes[nb] != p.K || C->sizes[cb] != p.M || C->sizes[cb + 1] != p.N) return PTL_ERR_ARG;
    /* C must be contiguous: its batches are addressed as c + b * M * N with ldc = N */
    int64_t expect = 1;
    for (int d = C->ndim - 1; d >= 0; d--) {
        if (C->sizes[d] > 1 && C->strides[d] != expect) return PTL_ERR_ARG;
        expect *= C->sizes[d] > 1 ? C->sizes[d] : 1;
    }
    if (p.M > INT_MAX || p.N > INT_MAX || p.K > INT_MAX) return PTL_ERR_ARG;
    p.data[0] = C->data;
    p.data[1] = A->data;
    p.data[2] = B->data;
    for (int k = 0; k < 3; k++) {
        const ptl_tensor *t = &ts[k];
        int r = t->ndim - 2;
        p.rs[k] = t->strides[r];
        p.cs[k] = t->strides[r + 1];
    }
    /* batch dimensions: drop size 1, merge a dim into the previous one when every operand
     * steps through both as through one */
    p.nb = 0;
    p.nbatch = 1;
    for (int d = 0; d < nb; d++) {
        int64_t n = A->sizes[d];
        if (B->sizes[d] != n || (!reduce_batches && C->sizes[d] != n)) return PTL_ERR_ARG;
        p.nbatch *= n;
        if (n == 1) continue;
        int64_t s[3] = {reduce_batches ? 0 : C->strides[d], A->strides[d], B->strides[d]};
        int j = p.nb - 1;
        if (j >= 0 && s[0] * n == p.bstride[0][j] && s[1] * n == p.bstride[1][j] && s[2] * n == p.bstride[2][j]) {
            p.bsize[j] *= n;
            for (int k = 0; k < 3; k++) p.bstride[k][j] = s[k];
            continue;
        }
        p.bsize[p.nb] = n;
        for (int k = 0; k < 3; k++) p.bstride[k][p.nb] = s[k];
        p.nb++;
    }
    return run_problem(&p, dtype, alpha_d, alpha_i, beta_d, beta_i);
}

/* The 2-D case (mm, addmm, mv, addmv, dot) with plain arguments: no descriptor structs to
 * build on the Python side, which is most of a small product's overhead. Addresses are
 * integers (Storage.ptr plus offset); C is a contiguous M x N matrix. */
int ptl_gemm2d(int dtype, intptr_t c, intptr_t a, intptr_t b, int64_t M, int64_t N, int64_t K,
               int64_t rsa, int64_t csa, int64_t rsb, int64_t csb,
               double alpha_d, int64_t alpha_i, double beta_d, int64_t beta_i) {
    if (dtype < 0 || dtype >= PTL_NUM_DTYPES || dtype == PTL_BOOL) return PTL_ERR_DTYPE;
    if (M < 0 || N < 0 || K < 0 || M > INT_MAX || N > INT_MAX || K > INT_MAX) return PTL_ERR_ARG;
    gemm_problem p;
    p.M = M;
    p.N = N;
    p.K = K;
    p.nb = 0;
    p.nbatch = 1;
    p.reduce = 0;
    p.data[0] = (char *)c;
    p.data[1] = (char *)a;
    p.data[2] = (char *)b;
    p.rs[0] = N;
    p.cs[0] = 1;
    p.rs[1] = rsa;
    p.cs[1] = csa;
    p.rs[2] = rsb;
    p.cs[2] = csb;
    return run_problem(&p, dtype, alpha_d, alpha_i, beta_d, beta_i);
}
