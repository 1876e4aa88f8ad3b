/* ptl_blas.h: the GEMM entry points every kernel calls.
 *
 * They start as OpenBLAS's (the scipy-openblas32 build, linked by name) and may be switched
 * once, at import, to another CBLAS with the same ABI: Intel MKL's cblas_?gemm and
 * cblas_?gemm_batch_strided take the same arguments (32-bit integers in MKL's LP64
 * interface, the same enum values). pytorchlite/_blas.py makes that choice and hands the
 * addresses to ptl_set_gemm. LAPACK stays on OpenBLAS. */
#ifndef PTL_BLAS_H
#define PTL_BLAS_H

#include <cblas.h>

typedef __typeof__(scipy_cblas_sgemm) ptl_sgemm_fn;
typedef __typeof__(scipy_cblas_dgemm) ptl_dgemm_fn;
typedef __typeof__(scipy_cblas_sgemm_batch_strided) ptl_sgemm_batch_fn;
typedef __typeof__(scipy_cblas_dgemm_batch_strided) ptl_dgemm_batch_fn;

extern ptl_sgemm_fn *ptl_sgemm;
extern ptl_dgemm_fn *ptl_dgemm;
extern ptl_sgemm_batch_fn *ptl_sgemm_batch;
extern ptl_dgemm_batch_fn *ptl_dgemm_batch;

/* Inside our own OpenMP regions each thread calls the BLAS for its own small product: it
 * must not start threads of its own. Called around such a region (not inside it): OpenBLAS
 * is set to one thread and back (its count is process-wide; another Python thread's GEMM
 * meanwhile runs on one thread too, slower but right); MKL needs nothing, as it runs
 * sequentially when called inside an OpenMP parallel region (MKL_DYNAMIC, its default). */
static inline int ptl_openblas_serial_begin(void) {
    int n = scipy_openblas_get_num_threads();
    if (n > 1) scipy_openblas_set_num_threads(1);
    return n;
}
static inline void ptl_openblas_serial_end(int previous) {
    if (previous > 1) scipy_openblas_set_num_threads(previous);
}
static inline int ptl_blas_serial_begin(void) {
    return ptl_sgemm == scipy_cblas_sgemm ? ptl_openblas_serial_begin() : 0;
}
static inline void ptl_blas_serial_end(int previous) {
    ptl_openblas_serial_end(previous);
}

#endif
