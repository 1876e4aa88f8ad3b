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
