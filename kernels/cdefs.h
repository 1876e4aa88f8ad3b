/* Entry points of the hand-written kernels, as cffi reads them (plain prototypes only;
 * the structs they use are declared for cffi in codegen/build.py). */

/* runtime.c */
void ptl_set_num_threads(int n);
int ptl_get_num_threads(void);
int ptl_has_openmp(void);
void *ptl_alloc(int64_t nbytes);
void ptl_free(void *p, int64_t nbytes);
void ptl_empty_cache(void);
void ptl_set_cache_limit(int64_t bytes);
void ptl_allocator_stats(int64_t *out);
void ptl_reset_peak(void);
/* runtime.c: allocator with integer addresses (the Storage fast path) */
intptr_t ptl_alloc_addr(int64_t nbytes);
void ptl_free_addr(intptr_t p, int64_t nbytes);
int ptl_set_desc(ptl_tensor *ts, int k, intptr_t data, int dtype, int ndim, const int64_t *sizes,
                 const int64_t *strides);
int ptl_copy(const ptl_tensor *ts);
int ptl_fill(const ptl_tensor *t, double d, int64_t i);

/* matmul */
int ptl_gemm(const ptl_tensor *ts, double alpha_d, int64_t alpha_i, double beta_d, int64_t beta_i,
             int reduce_batches);
int ptl_gemm2d(int dtype, intptr_t c, intptr_t a, intptr_t b, int64_t M, int64_t N, int64_t K,
               int64_t rsa, int64_t csa, int64_t rsb, int64_t csb,
               double alpha_d, int64_t alpha_i, double beta_d, int64_t beta_i);
int ptl_set_gemm(intptr_t sgemm, intptr_t dgemm, intptr_t sgemm_batch, intptr_t dgemm_batch);

/* indexing: index.c */
int ptl_index_gather(const ptl_tensor *out, const ptl_tensor *src, int nidx, const ptl_tensor *idx,
                     const int64_t *isize, const int64_t *istride, int64_t *bad);
int ptl_index_scatter(const ptl_tensor *dst, const ptl_tensor *src, int nidx, const ptl_tensor *idx,
                      const int64_t *isize, const int64_t *istride, int accumulate, int64_t *bad);
int ptl_count_nonzero(const ptl_tensor *t, int64_t *count);
int ptl_nonzero(const ptl_tensor *t, int64_t *out, int64_t capacity, int64_t *count);
int ptl_nonzero_flat(const ptl_tensor *t, int64_t *out, int64_t capacity, int64_t *count);
int ptl_masked_fill(const ptl_tensor *ts, double d, int64_t i);

/* dlpack.c */
intptr_t ptl_dlpack_hook(int which);

/* random: random.c (Philox4x32-10 keyed by seed, counter from offset) */
void ptl_philox4x32_10(const uint32_t *ctr, const uint32_t *key, uint32_t *out);
int64_t ptl_random_counters(int kind, int dtype, int64_t n, uint64_t range);
int ptl_random_uniform(const ptl_tensor *out, uint64_t seed, uint64_t offset, double from, double to);
int ptl_random_normal(const ptl_tensor *out, const ptl_tensor *mean, const ptl_tensor *std, uint64_t seed,
                      uint64_t offset, double mean_d, double std_d);
int ptl_random_exponential(const ptl_tensor *out, uint64_t seed, uint64_t offset, double lambd);
int ptl_random_integers(const ptl_tensor *out, uint64_t seed, uint64_t offset, int64_t from, uint64_t range);
int ptl_random_bernoulli(const ptl_tensor *out, const ptl_tensor *p, uint64_t seed, uint64_t offset, double p_d);
int ptl_random_poisson(const ptl_tensor *out, const ptl_tensor *rate, uint64_t seed, uint64_t offset);
int ptl_random_all_in_range(const ptl_tensor *t, double lo, double hi, int *ok);
int ptl_randperm(int64_t *out, int64_t n, uint64_t seed, uint64_t offset);
int ptl_multinomial(const ptl_tensor *prob, int64_t nsample, int with_replacement, uint64_t seed, uint64_t offset,
                    int64_t *out, int *err);

/* reductions: reduce.c */
int ptl_reduce(int op, const ptl_tensor *in, const ptl_tensor *out, const ptl_tensor *aux, double arg);

/* small-call fast paths: overhead.c */
int ptl_reduce_contiguous(int op, intptr_t in, int in_dtype, int64_t n, intptr_t out, int out_dtype, double arg);

/* data movement: movement.c */
int ptl_cat(intptr_t out, int64_t outer, int64_t out_row, int n, const intptr_t *ptrs, const int64_t *rows);
int ptl_gather(const ptl_tensor *ts, int64_t dim_size, int64_t dim_stride, int wrap, int64_t *bad);
int ptl_scatter(const ptl_tensor *ts, int64_t dim_size, int64_t dim_stride, int dim, int op, int wrap, int precheck,
                int64_t *bad);

/* @@ section: data-movement (add declarations above this line) @@ */

/* sorting, selection, scans, counting: sort.c */
int ptl_sort(const ptl_tensor *in, const ptl_tensor *values, const ptl_tensor *indices, int dim, int descending);
int ptl_topk(const ptl_tensor *in, const ptl_tensor *values, const ptl_tensor *indices, int dim, int64_t k,
             int largest);
int ptl_select(int op, const ptl_tensor *in, const ptl_tensor *values, const ptl_tensor *indices, int dim,
               int64_t k);
int ptl_scan(int op, const ptl_tensor *in, const ptl_tensor *out, const ptl_tensor *idx, int dim);
int ptl_unique_runs(const ptl_tensor *vals, const int64_t *perm, const ptl_tensor *uvals, int64_t *inverse,
                    int64_t *counts, int64_t *ngroups);
int ptl_searchsorted(const ptl_tensor *seq, const ptl_tensor *vals, const int64_t *sorter, const ptl_tensor *out,
                     int64_t rows, int64_t seq_rows, int64_t m, int64_t k, int right);
int ptl_bincount(const int64_t *x, int64_t n, const double *weights, void *out, int64_t nbins);
int ptl_histc(const double *x, int64_t n, double *out, int64_t bins, double lo, double hi);

/* @@ section: sorting-scans (add declarations above this line) @@ */

/* LAPACK factorizations: lapack.c (batches of column-major matrices, one info per matrix) */
int ptl_lapack_lu(int dtype, int64_t batch, int64_t m, int64_t n, intptr_t a, int32_t *ipiv, int32_t *info,
                  intptr_t sign, intptr_t logabs, intptr_t det);
int ptl_lapack_solve(int dtype, int64_t batch, int64_t n, int64_t nrhs, intptr_t a, intptr_t b, int32_t *ipiv,
                     int32_t *info);
int ptl_lapack_cholesky(int dtype, int64_t batch, int64_t n, intptr_t a, int upper, int32_t *info);
int ptl_lapack_qr(int dtype, int64_t batch, int64_t m, int64_t n, intptr_t a, intptr_t q, int64_t qcols,
                  intptr_t r, int64_t rrows, int32_t *info);
int ptl_lapack_svd(int dtype, int64_t batch, int64_t m, int64_t n, intptr_t a, intptr_t s, intptr_t u,
                   intptr_t vt, int jobz, int32_t *info);
int ptl_lapack_eigh(int dtype, int64_t batch, int64_t n, intptr_t a, intptr_t w, int vectors, int upper,
                    int32_t *info);
int ptl_lapack_lstsq(int dtype, int driver, int64_t batch, int64_t m, int64_t n, int64_t nrhs, intptr_t a,
                     intptr_t b, intptr_t s, int64_t *rank, double rcond, int32_t *info);
int ptl_lapack_trsm(int dtype, int64_t batch, int64_t m, int64_t n, intptr_t a, intptr_t b, int left, int upper,
                    int unit);

/* @@ section: linalg (add declarations above this line) @@ */

/* nn.c: softmax, convolution, pooling */
int ptl_softmax_forward(int dtype, intptr_t x, intptr_t y, int64_t outer, int64_t n, int64_t inner, int is_log);
int ptl_softmax_backward(int dtype, intptr_t g, intptr_t y, intptr_t gx, int64_t outer, int64_t n, int64_t inner,
                         int is_log);
int ptl_conv2d(int which, int dtype, const int64_t *g, intptr_t a, intptr_t b, intptr_t c, intptr_t d);
int ptl_nll_loss(int backward, int dtype, intptr_t x_or_g, intptr_t target, int t_u8, intptr_t weight, int64_t N,
                 int64_t C, int64_t D, int reduction, int64_t ignore, intptr_t out, intptr_t total, int64_t *bad);
int ptl_pool2d(int which, int dtype, const int64_t *p, intptr_t a, intptr_t b, intptr_t c, int flags, int64_t dov);
int ptl_layer_norm(int dtype, intptr_t x, intptr_t w, intptr_t b, intptr_t y, intptr_t mean, intptr_t rstd,
                   int64_t R, int64_t M, double eps);

/* @@ section: nn (add declarations above this line) @@ */
