/* lapack.c: batched LAPACK factorizations and BLAS triangular solves (trsm) for float32/float64
 * (the C step of a call, see docs/architecture.md).
 *
 * LAPACK comes from the same scipy-openblas32 library as BLAS: its Fortran entry points carry
 * the `scipy_` prefix (scipy_dgetrf_, ...), take every argument by pointer and a 32-bit
 * integer, and, being compiled by gfortran, expect the lengths of character arguments as
 * hidden trailing size_t arguments (passed here, so nothing reads stack garbage).
 *
 * Every entry works on `batch` matrices stored one after another, each contiguous in
 * column-major order (LAPACK's layout; the Python side builds these buffers, so a row-major
 * tensor is read as its transpose for free). Each entry writes one LAPACK `info` per matrix
 * and returns a status code; the Python side turns positive infos into PyTorch's messages
 * (singular matrix, not positive-definite, no convergence). Workspace sizes are queried
 * once per call (every matrix in a batch has the same shape) and the buffer is reused.
 * The batch loop is serial: OpenBLAS threads inside each factorization.
 */

#include <limits.h>
#include <stdlib.h>

#include <math.h>

#include "ptl.h"
#include "ptl_blas.h"

typedef int lapack_int;   /* scipy-openblas32: 32-bit integers */

#define FDECL(T, p)                                                                                          \
    extern void scipy_##p##getrf_(const lapack_int *, const lapack_int *, T *, const lapack_int *,           \
                                  lapack_int *, lapack_int *);                                               \
    extern void scipy_##p##getrs_(const char *, const lapack_int *, const lapack_int *, const T *,           \
                                  const lapack_int *, const lapack_int *, T *, const lapack_int *,           \
                                  lapack_int *, size_t);                                                     \
    extern void scipy_##p##potrf_(const char *, const lapack_int *, T *, const lapack_int *, lapack_int *,   \
                                  size_t);                                                                   \
    extern void scipy_##p##geqrf_(const lapack_int *, const lapack_int *, T *, const lapack_int *, T *, T *, \
                                  const lapack_int *, lapack_int *);                                         \
    extern void scipy_##p##orgqr_(const lapack_int *, const lapack_int *, const lapack_int *, T *,           \
                                  const lapack_int *, const T *, T *, const lapack_int *, lapack_int *);     \
    extern void scipy_##p##gesdd_(const char *, const lapack_int *, const lapack_int *, T *,                 \
                                  const lapack_int *, T *, T *, const lapack_int *, T *, const lapack_int *, \
                                  T *, const lapack_int *, lapack_int *, lapack_int *, size_t);              \
    extern void scipy_##p##syevd_(const char *, const char *, const lapack_int *, T *, const lapack_int *,   \
                                  T *, T *, const lapack_int *, lapack_int *, const lapack_int *,            \
                                  lapack_int *, size_t, size_t);                                             \
    extern void scipy_##p##gelsd_(const lapack_int *, const lapack_int *, const lapack_int *, T *,           \
                                  const lapack_int *, T *, const lapack_int *, T *, const T *, lapack_int *, \
                                  T *, const lapack_int *, lapack_int *, lapack_int *);                      \
    extern void scipy_##p##gelsy_(const lapack_int *, const lapack_int *, const lapack_int *, T *,           \
                                  const lapack_int *, T *, const lapack_int *, lapack_int *, const T *,      \
                                  lapack_int *, T *, const lapack_int *, lapack_int *);                      \
    extern void scipy_##p##trsm_(const char *, const char *, const char *, const char *, const lapack_int *, \
                                 const lapack_int *, const T *, const T *, const lapack_int *, T *,          \
                                 const lapack_int *, size_t, size_t, size_t, size_t);

FDECL(float, s)
FDECL(double, d)

static int too_big(int64_t v) { return v < 0 || v > INT_MAX; }

static lapack_int ld(int64_t v) { return (lapack_int)(v > 1 ? v : 1); }

/* a workspace size returned by a query (as a floating value), made a safe allocation size */
static lapack_int wsize(double w, lapack_int least) {
    lapack_int n = (lapack_int)w;
    if ((double)n < w) n++;
    return n > least ? n : least;
}

/* Matrices up to SMALL_N: LU with partial pivoting and the triangular solves written out
 * (LAPACK's unblocked getf2/getrs, the same pivot choice: the first entry of largest
 * magnitude). For tiny matrices the library calls cost more than the arithmetic, and a
 * batch of them is split over OpenMP threads (pure C, no BLAS inside). */
#define SMALL_N 16

#define DEFINE_SMALL(T, p)                                                                                   \
    static lapack_int small_getrf_##p(int64_t n, T *A, int32_t *piv) {                                      \
        lapack_int info = 0;                                                                                 \
        for (int64_t j = 0; j < n; j++) {                                                                    \
            int64_t pv = j;                                                                                  \
            T mx = (T)fabs((double)A[j * n + j]);                                                            \
            for (int64_t i = j + 1; i < n; i++) {                                                            \
                T v = (T)fabs((double)A[j * n + i]);                                                         \
                if (v > mx) { mx = v; pv = i; }                                                              \
            }                                                                                                \
            piv[j] = (int32_t)(pv + 1);                                                                      \
            if (A[j * n + pv] != 0) {                                                                        \
                if (pv != j)                                                                                 \
                    for (int64_t k = 0; k < n; k++) {                                                        \
                        T t = A[k * n + j]; A[k * n + j] = A[k * n + pv]; A[k * n + pv] = t;                 \
                    }                                                                                        \
                T r = 1 / A[j * n + j];                                                                      \
                for (int64_t i = j + 1; i < n; i++) A[j * n + i] *= r;                                       \
            } else if (info == 0) {                                                                          \
                info = (lapack_int)(j + 1);                                                                  \
            }                                                                                                \
            for (int64_t k = j + 1; k < n; k++) {                                                            \
                T f = A[k * n + j];                                                                          \
                if (f != 0)                                                                                  \
                    for (int64_t i = j + 1; i < n; i++) A[k * n + i] -= A[j * n + i] * f;                    \
            }                                                                                                \
        }                                                                                                    \
        return info;                                                                                         \
    }                                                                                                        \
                                                                                                             \
    static void small_getrs_##p(int64_t n, int64_t nrhs, const T *A, const int32_t *piv, T *B) {            \
        for (int64_t c = 0; c < nrhs; c++) {                                                                 \
            T *b = B + c * n;                                                                                \
            for (int64_t j = 0; j < n; j++) {                                                                \
                int64_t q = piv[j] - 1;                                                                      \
                if (q != j) { T t = b[j]; b[j] = b[q]; b[q] = t; }                                           \
            }                                                                                                \
            for (int64_t j = 0; j < n; j++) {                                                                \
                T v = b[j];                                                                                  \
                if (v != 0)                                                                                  \
                    for (int64_t i = j + 1; i < n; i++) b[i] -= A[j * n + i] * v;                            \
            }                                                                                                \
            for (int64_t j = n - 1; j >= 0; j--) {                                                           \
                b[j] /= A[j * n + j];                                                                        \
                T v = b[j];                                                                                  \
                if (v != 0)                                                                                  \
                    for (int64_t i = 0; i < j; i++) b[i] -= A[j * n + i] * v;                                \
            }                                                                                                \
        }                                                                                                    \
    }

/* Cholesky of a column-major n x n matrix up to SMALL_N: LAPACK's unblocked potf2, which
 * stops at the first pivot that is not positive *or is NaN* (OpenBLAS's own potrf checks
 * only `<= 0`, so a NaN went through as a "successful" factor; PyTorch's LAPACK reports it).
 * As in potf2, the failing diagonal entry keeps the value computed for it and the columns
 * after it are left as they were. */
#define DEFINE_SMALL_POTF2(T, p)                                                                             \
    static lapack_int small_potf2_##p(int64_t n, T *A, int upper) {                                          \
        for (int64_t j = 0; j < n; j++) {                                                                    \
            T ajj = A[j * n + j];                                                                            \
            for (int64_t k = 0; k < j; k++) {                                                                \
                T v = upper ? A[j * n + k] : A[k * n + j];   /* U(k,j) or L(j,k) */                          \
                ajj -= v * v;                                                                                \
            }                                                                                                \
            if (!(ajj > 0)) { A[j * n + j] = ajj; return (lapack_int)(j + 1); }                              \
            ajj = (T)sqrt((double)ajj);                                                                      \
            A[j * n + j] = ajj;                                                                              \
            T r = 1 / ajj;                                                                                   \
            for (int64_t i = j + 1; i < n; i++) {                                                            \
                if (upper) {            /* U(j,i) = (A(j,i) - sum_k U(k,j) U(k,i)) / ajj */                  \
                    T s = A[i * n + j];                                                                      \
                    for (int64_t k = 0; k < j; k++) s -= A[j * n + k] * A[i * n + k];                        \
                    A[i * n + j] = s * r;                                                                    \
                } else {                /* L(i,j) = (A(i,j) - sum_k L(i,k) L(j,k)) / ajj */                  \
                    T s = A[j * n + i];                                                                      \
                    for (int64_t k = 0; k < j; k++) s -= A[k * n + i] * A[k * n + j];                        \
                    A[j * n + i] = s * r;                                                                    \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
        return 0;                                                                                            \
    }

DEFINE_SMALL(float, s)
DEFINE_SMALL(double, d)
DEFINE_SMALL_POTF2(float, s)
DEFINE_SMALL_POTF2(double, d)

/* parallelise a batch of small problems when there is enough work for threads to pay */
#define SMALL_PARALLEL(batch, n) ((double)(batch) * (double)(n) * (double)(n) * (double)(n) > 32768.0)

#define DEFINE_LAPACK(T, p)                                                                                  \
    /* LU with partial pivoting in place; ipiv gets min(m,n) 1-based pivots per matrix. With    \
     * want_det, det[b] (and sign/logabs) are filled from the factors. */                        \
    static int lu_##p(int64_t batch, int64_t m, int64_t n, T *a, int32_t *ipiv, int32_t *info, T *sign,    \
                      T *logabs, T *det) {                                                                   \
        lapack_int M = (lapack_int)m, N = (lapack_int)n, LDA = ld(m);                                        \
        int64_t k = m < n ? m : n;                                                                           \
        int small = m == n && n <= SMALL_N;                                                                  \
        _Pragma("omp parallel for schedule(static) if (small && SMALL_PARALLEL(batch, n))")                 \
        for (int64_t b = 0; b < batch; b++) {                                                                \
            T *A = a + b * m * n;                                                                            \
            int32_t *piv = ipiv + b * k;                                                                     \
            lapack_int inf = 0;                                                                              \
            if (small) inf = small_getrf_##p(n, A, piv);                                                     \
            else if (m > 0 && n > 0) scipy_##p##getrf_(&M, &N, A, &LDA, piv, &inf);                          \
            info[b] = inf;                                                                                   \
            if (sign || logabs || det) {                                                                     \
                T s = 1, la = 0, d = 1;                                                                      \
                for (int64_t i = 0; i < k; i++) {                                                            \
                    T u = A[i * m + i];                                                                      \
                    if (piv[i] != i + 1) { s = -s; d = -d; }                                                 \
                    if (u < 0) s = -s;                                                                       \
                    d *= u;                                                                                  \
                    la += (T)log(fabs((double)u));                                                           \
                }                                                                                            \
                if (inf > 0) { s = 0; la = -INFINITY; }                                                      \
                if (sign) sign[b] = s;                                                                       \
                if (logabs) logabs[b] = la;                                                                  \
                if (det) det[b] = d;                                                                         \
            }                                                                                                \
        }                                                                                                    \
        return PTL_OK;                                                                                       \
    }                                                                                                        \
                                                                                                             \
    /* A X = B for each batch: LU of A (n x n, overwritten), then B (n x nrhs) overwritten by X.    \
     * A matrix whose LU is singular gets info > 0 and its B still goes through the triangular  \
     * solves (divisions by the zero pivot: inf/nan, what PyTorch's linalg.inv_ex returns). */  \
    static int solve_##p(int64_t batch, int64_t n, int64_t nrhs, T *a, T *bm, int32_t *ipiv, int32_t *info) { \
        lapack_int N = (lapack_int)n, NRHS = (lapack_int)nrhs, LDA = ld(n);                                  \
        if (n <= SMALL_N) {                                                                                  \
            _Pragma("omp parallel for schedule(static) if (SMALL_PARALLEL(batch, n))")                      \
            for (int64_t b = 0; b < batch; b++) {                                                            \
                T *A = a + b * n * n;                                                                        \
                int32_t *piv = ipiv + b * n;                                                                 \
                info[b] = small_getrf_##p(n, A, piv);                                                        \
                small_getrs_##p(n, nrhs, A, piv, bm + b * n * nrhs);                                         \
            }                                                                                                \
            return PTL_OK;                                                                                   \
        }                                                                                                    \
        for (int64_t b = 0; b < batch; b++) {                                                                \
            T *A = a + b * n * n, *B = bm + b * n * nrhs;                                                    \
            int32_t *piv = ipiv + b * n;                                                                     \
            lapack_int inf = 0;                                                                              \
            if (n > 0) scipy_##p##getrf_(&N, &N, A, &LDA, piv, &inf);                                        \
            info[b] = inf;                                                                                   \
            if (inf >= 0 && n > 0 && nrhs > 0) {                                                             \
                lapack_int inf2 = 0;                                                                         \
                scipy_##p##getrs_("N", &N, &NRHS, A, &LDA, piv, B, &LDA, &inf2, 1);                          \
                if (inf2 != 0) info[b] = -1;                                                                 \
            }                                                                                                \
        }                                                                                                    \
        return PTL_OK;                                                                                       \
    }                                                                                                        \
                                                                                                             \
    /* Cholesky in place; the other triangle is zeroed so the buffer is the factor itself. */    \
    static int potrf_##p(int64_t batch, int64_t n, T *a, int upper, int32_t *info) {                         \
        lapack_int N = (lapack_int)n, LDA = ld(n);                                                           \
        const char *uplo = upper ? "U" : "L";                                                                \
        _Pragma("omp parallel for schedule(static) if (n <= SMALL_N && SMALL_PARALLEL(batch, n))")          \
        for (int64_t b = 0; b < batch; b++) {                                                                \
            T *A = a + b * n * n;                                                                            \
            lapack_int inf = 0;                                                                              \
            if (n <= SMALL_N) {                                                                              \
                inf = small_potf2_##p(n, A, upper);                                                          \
            } else {                                                                                         \
                scipy_##p##potrf_(uplo, &N, A, &LDA, &inf, 1);                                               \
                /* a NaN pivot reaches the diagonal of a "successful" factor: the first one is    \
                 * where the unblocked algorithm stops (NaN spreads the same way in both) */    \
                for (int64_t j = 0; inf == 0 && j < n; j++)                                                  \
                    if (A[j * n + j] != A[j * n + j]) inf = (lapack_int)(j + 1);                             \
            }                                                                                                \
            info[b] = inf;                                                                                   \
            for (int64_t j = 0; j < n; j++)          /* column j */                                          \
                for (int64_t i = 0; i < n; i++)                                                              \
                    if (upper ? i > j : i < j) A[j * n + i] = 0;                                             \
        }                                                                                                    \
        return PTL_OK;                                                                                       \
    }                                                                                                        \
                                                                                                             \
    /* QR of each m x n matrix a: q gets m x qcols (qcols = 0: no Q), r gets rrows x n       \
     * (upper triangular part of the factor, zeros below). */                                 \
    static int qr_##p(int64_t batch, int64_t m, int64_t n, const T *a, T *q, int64_t qcols, T *r,           \
                      int64_t rrows, int32_t *info) {                                                        \
        int64_t k = m < n ? m : n, wcols = n > qcols ? n : qcols;                                            \
        lapack_int M = (lapack_int)m, N = (lapack_int)n, K = (lapack_int)k, QC = (lapack_int)qcols;         \
        lapack_int LDA = ld(m), lwork = -1, inf = 0;                                                         \
        T q1 = 0, q2 = 0, dummy = 0;                                                                         \
        if (m > 0 && n > 0) scipy_##p##geqrf_(&M, &N, &dummy, &LDA, &dummy, &q1, &lwork, &inf);             \
        if (qcols > 0 && m > 0) scipy_##p##orgqr_(&M, &QC, &K, &dummy, &LDA, &dummy, &q2, &lwork, &inf);   \
        lwork = wsize((double)(q1 > q2 ? q1 : q2), 1);                                                       \
        T *work = malloc(sizeof(T) * ((size_t)lwork + (size_t)(m * wcols) + (size_t)k + 1));                 \
        if (!work) return PTL_ERR_ALLOC;                                                                     \
        T *w = work + lwork, *tau = w + m * wcols;                                                           \
        for (int64_t b = 0; b < batch; b++) {                                                                \
            memcpy(w, a + b * m * n, sizeof(T) * (size_t)(m * n));                                           \
            inf = 0;                                                                                         \
            if (m > 0 && n > 0) scipy_##p##geqrf_(&M, &N, w, &LDA, tau, work, &lwork, &inf);                 \
            info[b] = inf;                                                                                   \
            T *R = r + b * rrows * n;                                                                        \
            for (int64_t j = 0; j < n; j++)                                                                  \
                for (int64_t i = 0; i < rrows; i++)                                                          \
                    R[j * rrows + i] = (i <= j && i < m) ? w[j * m + i] : 0;                                 \
            if (qcols > 0 && m > 0) {                                                                        \
                if (k == 0) { /* no reflectors: Q is the identity */                                         \
                    memset(w, 0, sizeof(T) * (size_t)(m * qcols));                                           \
                    for (int64_t i = 0; i < qcols && i < m; i++) w[i * m + i] = 1;                           \
                } else {                                                                                     \
                    scipy_##p##orgqr_(&M, &QC, &K, w, &LDA, tau, work, &lwork, &inf);                        \
                    if (inf != 0) info[b] = inf;                                                             \
                }                                                                                            \
                memcpy(q + b * m * qcols, w, sizeof(T) * (size_t)(m * qcols));                               \
            }                                                                                                \
        }                                                                                                    \
        free(work);                                                                                          \
        return PTL_OK;                                                                                       \
    }                                                                                                        \
                                                                                                             \
    /* SVD by divide and conquer; a is overwritten. jobz: 'N' (s only), 'S' (u: m x k,         \
     * vt: k x n) or 'A' (u: m x m, vt: n x n). */                                             \
    static int gesdd_##p(int64_t batch, int64_t m, int64_t n, T *a, T *s, T *u, T *vt, char jobz,           \
                         int32_t *info) {                                                                    \
        int64_t k = m < n ? m : n;                                                                           \
        int64_t ucols = jobz == 'A' ? m : (jobz == 'S' ? k : 0);                                             \
        int64_t vrows = jobz == 'A' ? n : (jobz == 'S' ? k : 0);                                             \
        lapack_int M = (lapack_int)m, N = (lapack_int)n, LDA = ld(m), LDU = ld(m), LDVT = ld(vrows);        \
        lapack_int lwork = -1, inf = 0;                                                                      \
        T wq = 0, dummy = 0;                                                                                 \
        lapack_int *iwork = malloc(sizeof(lapack_int) * (size_t)(8 * k + 1));                                \
        if (!iwork) return PTL_ERR_ALLOC;                                                                    \
        T ud = 0, vd = 0;                                                                                    \
        scipy_##p##gesdd_(&jobz, &M, &N, &dummy, &LDA, &dummy, &ud, &LDU, &vd, &LDVT, &wq, &lwork, iwork,   \
                          &inf, 1);                                                                          \
        lwork = wsize((double)wq, 1);                                                                        \
        T *work = malloc(sizeof(T) * (size_t)lwork);                                                         \
        if (!work) { free(iwork); return PTL_ERR_ALLOC; }                                                    \
        for (int64_t b = 0; b < batch; b++) {                                                                \
            inf = 0;                                                                                         \
            T *U = ucols ? u + b * m * ucols : &ud, *VT = vrows ? vt + b * vrows * n : &vd;                  \
            /* an infinity without a NaN: OpenBLAS's gesdd does not return (a NaN it refuses with    \
             * info = -4). PyTorch's LAPACK gives NaN singular values: so do we, and NaN factors. */  \
            int has_inf = 0, has_nan = 0;                                                                    \
            for (int64_t e = 0; e < m * n; e++) {                                                            \
                T v = a[b * m * n + e];                                                                      \
                if (v != v) has_nan = 1;                                                                     \
                else if (v - v != 0) has_inf = 1;                                                            \
            }                                                                                                \
            if (has_inf && !has_nan) {                                                                       \
                for (int64_t e = 0; e < k; e++) s[b * k + e] = (T)NAN;                                       \
                for (int64_t e = 0; ucols && e < m * ucols; e++) U[e] = (T)NAN;                              \
                for (int64_t e = 0; vrows && e < vrows * n; e++) VT[e] = (T)NAN;                             \
                info[b] = 0;                                                                                 \
                continue;                                                                                    \
            }                                                                                                \
            scipy_##p##gesdd_(&jobz, &M, &N, a + b * m * n, &LDA, s + b * k, U, &LDU, VT, &LDVT, work,       \
                              &lwork, iwork, &inf, 1);                                                       \
            info[b] = inf;                                                                                   \
        }                                                                                                    \
        free(work);                                                                                          \
        free(iwork);                                                                                         \
        return PTL_OK;                                                                                       \
    }                                                                                                        \
                                                                                                             \
    /* Symmetric eigendecomposition; a (n x n) is overwritten by the eigenvectors when       \
     * vectors is set; w gets the n eigenvalues in ascending order. */                        \
    static int syevd_##p(int64_t batch, int64_t n, T *a, T *w, int vectors, int upper, int32_t *info) {     \
        lapack_int N = (lapack_int)n, LDA = ld(n), lwork = -1, liwork = -1, inf = 0, iq = 0;                 \
        const char *jobz = vectors ? "V" : "N", *uplo = upper ? "U" : "L";                                   \
        T wq = 0, dummy = 0, wdummy = 0;                                                                     \
        scipy_##p##syevd_(jobz, uplo, &N, &dummy, &LDA, &wdummy, &wq, &lwork, &iq, &liwork, &inf, 1, 1);    \
        lwork = wsize((double)wq, 1);                                                                        \
        liwork = iq > 1 ? iq : 1;                                                                            \
        T *work = malloc(sizeof(T) * (size_t)lwork);                                                         \
        lapack_int *iwork = malloc(sizeof(lapack_int) * (size_t)liwork);                                     \
        if (!work || !iwork) { free(work); free(iwork); return PTL_ERR_ALLOC; }                              \
        for (int64_t b = 0; b < batch; b++) {                                                                \
            inf = 0;                                                                                         \
            scipy_##p##syevd_(jobz, uplo, &N, a + b * n * n, &LDA, w + b * n, work, &lwork, iwork, &liwork, \
                              &inf, 1, 1);                                                                   \
            info[b] = inf;                                                                                   \
        }                                                                                                    \
        free(work);                                                                                          \
        free(iwork);                                                                                         \
        return PTL_OK;                                                                                       \
    }                                                                                                        \
                                                                                                             \
    /* Least squares min ||A X - B||: a (m x n) is overwritten; bm is ldb x nrhs with          \
     * ldb = max(m, n) and gets X in its first n rows. driver 0: gelsy (rank only), 1: gelsd   \
     * (rank and singular values s, min(m,n) per matrix). rcond < 0: machine precision. */    \
    static int gels_##p(int driver, int64_t batch, int64_t m, int64_t n, int64_t nrhs, T *a, T *bm,         \
                        T *s, int64_t *rank, double rcond, int32_t *info) {                                  \
        int64_t k = m < n ? m : n, ldb = m > n ? m : n;                                                      \
        lapack_int M = (lapack_int)m, N = (lapack_int)n, NRHS = (lapack_int)nrhs, LDA = ld(m),               \
                   LDB = ld(ldb), lwork = -1, inf = 0, rk = 0, iq = 0;                                       \
        T rc = (T)rcond, wq = 0, dummy = 0, sdummy = 0;                                                      \
        lapack_int *iwork = NULL;                                                                            \
        if (driver == 1) {                                                                                   \
            scipy_##p##gelsd_(&M, &N, &NRHS, &dummy, &LDA, &dummy, &LDB, &sdummy, &rc, &rk, &wq, &lwork,    \
                              &iq, &inf);                                                                    \
            iwork = malloc(sizeof(lapack_int) * (size_t)(iq > 1 ? iq : 1));                                  \
        } else {                                                                                             \
            lapack_int jd = 0;                                                                               \
            scipy_##p##gelsy_(&M, &N, &NRHS, &dummy, &LDA, &dummy, &LDB, &jd, &rc, &rk, &wq, &lwork, &inf); \
            iwork = malloc(sizeof(lapack_int) * (size_t)(n > 1 ? n : 1));                                    \
        }                                                                                                    \
        lwork = wsize((double)wq, 1);                                                                        \
        T *work = malloc(sizeof(T) * (size_t)lwork);                                                         \
        T *sbuf = malloc(sizeof(T) * (size_t)(k + 1));                                                       \
        if (!work || !iwork || !sbuf) { free(work); free(iwork); free(sbuf); return PTL_ERR_ALLOC; }        \
        for (int64_t b = 0; b < batch; b++) {                                                                \
            inf = 0;                                                                                         \
            rk = 0;                                                                                          \
            T *A = a + b * m * n, *B = bm + b * ldb * nrhs;                                                  \
            if (driver == 1) {                                                                               \
                scipy_##p##gelsd_(&M, &N, &NRHS, A, &LDA, B, &LDB, s ? s + b * k : sbuf, &rc, &rk, work,    \
                                  &lwork, iwork, &inf);                                                      \
            } else {                                                                                         \
                memset(iwork, 0, sizeof(lapack_int) * (size_t)(n > 1 ? n : 1));                              \
                scipy_##p##gelsy_(&M, &N, &NRHS, A, &LDA, B, &LDB, iwork, &rc, &rk, work, &lwork, &inf);     \
            }                                                                                                \
            info[b] = inf;                                                                                   \
            if (rank) rank[b] = rk;                                                                          \
        }                                                                                                    \
        free(work);                                                                                          \
        free(iwork);                                                                                         \
        free(sbuf);                                                                                          \
        return PTL_OK;                                                                                       \
    }                                                                                                        \
                                                                                                             \
    /* Triangular solves (BLAS trsm): B (m x n) is overwritten by X with A X = B (left, A m x m) \
     * or X A = B (right, A n x n); only A's `upper` (or lower) triangle is read, and with     \
     * `unit` its diagonal is taken as ones. No singularity check, as in PyTorch: a zero on     \
     * the diagonal gives inf/nan. */                                                          \
    static int trsm_##p(int64_t batch, int64_t m, int64_t n, const T *a, T *bm, int left, int upper,       \
                        int unit) {                                                                          \
        int64_t k = left ? m : n;                                                                            \
        lapack_int M = (lapack_int)m, N = (lapack_int)n, LDA = ld(k), LDB = ld(m);                           \
        const T one = 1;                                                                                     \
        if (m == 0 || n == 0) return PTL_OK;                                                                 \
        for (int64_t b = 0; b < batch; b++)                                                                  \
            scipy_##p##trsm_(left ? "L" : "R", upper ? "U" : "L", "N", unit ? "U" : "N", &M, &N, &one,       \
                             a + b * k * k, &LDA, bm + b * m * n, &LDB, 1, 1, 1, 1);                         \
        return PTL_OK;                                                                                       \
    }

DEFINE_LAPACK(float, s)
DEFINE_LAPACK(double, d)

/* ---- entry points: dtype switch and size checks -------------------------------------- */

/* OpenBLAS's LAPACK factors a matrix in many small BLAS steps, each handed to its thread
 * pool: for a matrix up to ~512 x 512 waking the pool at every step costs more than it
 * saves (2 threads against 1 on 2 cores, n = 256: cholesky 1.6 ms vs 0.37, qr 9.9 vs 2.4,
 * eigh 8.9 vs 5.4; from n = 1024 inv, eigh and svd gain). Below SERIAL_WORK (m * n *
 * min(m, n) of one matrix) the call runs on the calling thread only. */
#define SERIAL_WORK (512.0 * 512.0 * 512.0)

#define DISPATCH(work, call_s, call_d)                                          \
    {                                                                           \
        int threads_ = (work) < SERIAL_WORK ? ptl_openblas_serial_begin() : 0;  \
        int status_;                                                            \
        switch (dtype) {                                                        \
        case PTL_F32: status_ = call_s; break;                                  \
        case PTL_F64: status_ = call_d; break;                                  \
        default: status_ = PTL_ERR_DTYPE;                                       \
        }                                                                       \
        ptl_openblas_serial_end(threads_);                                      \
        return status_;                                                         \
    }

static double cube(int64_t m, int64_t n, int64_t k) { return (double)m * (double)n * (double)k; }

int ptl_lapack_lu(int dtype, int64_t batch, int64_t m, int64_t n, intptr_t a, int32_t *ipiv, int32_t *info,
                  intptr_t sign, intptr_t logabs, intptr_t det) {
    if (batch < 0 || too_big(m) || too_big(n)) return PTL_ERR_ARG;
    DISPATCH(cube(m, n, m < n ? m : n), lu_s(batch, m, n, (float *)a, ipiv, info, (float *)sign, (float *)logabs, (float *)det),
             lu_d(batch, m, n, (double *)a, ipiv, info, (double *)sign, (double *)logabs, (double *)det))
}

int ptl_lapack_solve(int dtype, int64_t batch, int64_t n, int64_t nrhs, intptr_t a, intptr_t b, int32_t *ipiv,
                     int32_t *info) {
    if (batch < 0 || too_big(n) || too_big(nrhs)) return PTL_ERR_ARG;
    DISPATCH(cube(n, n, n > nrhs ? n : nrhs), solve_s(batch, n, nrhs, (float *)a, (float *)b, ipiv, info),
             solve_d(batch, n, nrhs, (double *)a, (double *)b, ipiv, info))
}

int ptl_lapack_cholesky(int dtype, int64_t batch, int64_t n, intptr_t a, int upper, int32_t *info) {
    if (batch < 0 || too_big(n)) return PTL_ERR_ARG;
    DISPATCH(cube(n, n, n), potrf_s(batch, n, (float *)a, upper, info), potrf_d(batch, n, (double *)a, upper, info))
}

int ptl_lapack_qr(int dtype, int64_t batch, int64_t m, int64_t n, intptr_t a, intptr_t q, int64_t qcols,
                  intptr_t r, int64_t rrows, int32_t *info) {
    if (batch < 0 || too_big(m) || too_big(n) || qcols < 0 || qcols > m || rrows < 0 || rrows > m)
        return PTL_ERR_ARG;
    DISPATCH(cube(m, n, m < n ? m : n), qr_s(batch, m, n, (const float *)a, (float *)q, qcols, (float *)r, rrows, info),
             qr_d(batch, m, n, (const double *)a, (double *)q, qcols, (double *)r, rrows, info))
}

int ptl_lapack_svd(int dtype, int64_t batch, int64_t m, int64_t n, intptr_t a, intptr_t s, intptr_t u,
                   intptr_t vt, int jobz, int32_t *info) {
    if (batch < 0 || too_big(m) || too_big(n) || too_big(8 * (m < n ? m : n) + 1)) return PTL_ERR_ARG;
    if (jobz != 'N' && jobz != 'S' && jobz != 'A') return PTL_ERR_ARG;
    DISPATCH(cube(m, n, m < n ? m : n), gesdd_s(batch, m, n, (float *)a, (float *)s, (float *)u, (float *)vt, (char)jobz, info),
             gesdd_d(batch, m, n, (double *)a, (double *)s, (double *)u, (double *)vt, (char)jobz, info))
}

int ptl_lapack_eigh(int dtype, int64_t batch, int64_t n, intptr_t a, intptr_t w, int vectors, int upper,
                    int32_t *info) {
    if (batch < 0 || too_big(n)) return PTL_ERR_ARG;
    DISPATCH(cube(n, n, n), syevd_s(batch, n, (float *)a, (float *)w, vectors, upper, info),
             syevd_d(batch, n, (double *)a, (double *)w, vectors, upper, info))
}

int ptl_lapack_lstsq(int dtype, int driver, int64_t batch, int64_t m, int64_t n, int64_t nrhs, intptr_t a,
                     intptr_t b, intptr_t s, int64_t *rank, double rcond, int32_t *info) {
    if (batch < 0 || too_big(m) || too_big(n) || too_big(nrhs) || (driver != 0 && driver != 1))
        return PTL_ERR_ARG;
    DISPATCH(cube(m, n, nrhs > (m < n ? m : n) ? nrhs : (m < n ? m : n)), gels_s(driver, batch, m, n, nrhs, (float *)a, (float *)b, (float *)s, rank, rcond, info),
             gels_d(driver, batch, m, n, nrhs, (double *)a, (double *)b, (double *)s, rank, rcond, info))
}

int ptl_lapack_trsm(int dtype, int64_t batch, int64_t m, int64_t n, intptr_t a, intptr_t b, int left, int upper,
                    int unit) {
    if (batch < 0 || too_big(m) || too_big(n)) return PTL_ERR_ARG;
    DISPATCH(cube(m, n, left ? m : n), trsm_s(batch, m, n, (const float *)a, (float *)b, left, upper, unit),
             trsm_d(batch, m, n, (const double *)a, (double *)b, left, upper, unit))
}
