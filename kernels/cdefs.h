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
int ptl_copy(const ptl_tensor *ts);
int ptl_fill(const ptl_tensor *t, double d, int64_t i);

/* dlpack.c */
intptr_t ptl_dlpack_hook(int which);
