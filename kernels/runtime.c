/* runtime.c: the CPU allocator, the pointwise iterator, copy (with casts) and fill.
 *
 * The iterator is the heart of every elementwise kernel: it orders dimensions so the
 * output's fastest-moving one is innermost, merges dimensions that are contiguous in
 * every operand, and splits the flat index range across OpenMP threads. The generated
 * inner loops then see one row at a time with byte strides, and take a vectorisable
 * path when every stride equals the element size.
 */
#include "ptl.h"

#include <pthread.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- threads ------------------------------------------------------------------------ */

void ptl_set_num_threads(int n) {
#ifdef _OPENMP
    if (n > 0) omp_set_num_threads(n);
#else
    (void)n;
#endif
}

int ptl_get_num_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

int ptl_has_openmp(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

/* ---- allocator -----------------------------------------------------------------------
 * Large blocks are kept after free in a small bounded cache: a fresh large allocation
 * from the kernel costs a page fault per 4 KiB on first touch (about 5x the cost of the
 * arithmetic for a pointwise op), and training loops ask for the same sizes again and
 * again. Small blocks go straight to malloc, which is fast for them already.
 *
 * Every block carries a header just below the user pointer holding its real size and
 * the address malloc returned. The cache may hand out a block up to 25% larger than
 * asked, and the caller frees with the size it asked for: without the header the
 * statistics would drift and the cache would lose track of the block's true size.
 * Blocks come from malloc aligned by hand (posix_memalign costs ~5x malloc for the small
 * blocks every op result needs). */

#define PTL_ALIGN 64
#define PTL_HEADER 16
#define PTL_CACHE_MIN_BYTES (256 * 1024)
#define PTL_CACHE_SLOTS 64
#define PTL_HUGEPAGE_MIN_BYTES (4 * 1024 * 1024)

typedef struct { void *ptr; int64_t size; } cached_block;

static cached_block cache[PTL_CACHE_SLOTS];
static int cache_count = 0;
static int64_t cache_bytes = 0;
static int64_t cache_limit = (int64_t)1 << 30;
static int64_t stat_allocated = 0, stat_peak = 0, stat_hits = 0, stat_misses = 0;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static int64_t round_size(int64_t nbytes) {
    if (nbytes < PTL_CACHE_MIN_BYTES) return nbytes <= 0 ? PTL_ALIGN : (nbytes + PTL_ALIGN - 1) & ~(int64_t)(PTL_ALIGN - 1);
    return (nbytes + 4095) & ~(int64_t)4095;
}

/* the header: [real size, malloc's address] in the 16 bytes below the user pointer */
static int64_t block_size(void *p) { return ((int64_t *)p)[-2]; }
static void block_release(void *p) { free((void *)(intptr_t)((int64_t *)p)[-1]); }

/* caller holds cache_lock */
static void count_allocated(int64_t size) {
    stat_allocated += size;
    if (stat_allocated > stat_peak) stat_peak = stat_allocated;
}

void *ptl_alloc(int64_t nbytes) {
    if (nbytes < 0 || nbytes > INT64_MAX / 2) return NULL;
    int64_t size = round_size(nbytes);
    if (size >= PTL_CACHE_MIN_BYTES) {
        void *p = NULL;
        pthread_mutex_lock(&cache_lock);
        /* best fit, but never hand out a block more than 25% larger than asked */
        int best = -1;
        for (int i = 0; i < cache_count; i++) {
            if (cache[i].size >= size && cache[i].size <= size + size / 4 &&
                (best < 0 || cache[i].size < cache[best].size))
                best = i;
        }
        if (best >= 0) {
            p = cache[best].ptr;
            cache_bytes -= cache[best].size;
            count_allocated(cache[best].size);
            cache[best] = cache[--cache_count];
            stat_hits++;
        } else {
            stat_misses++;
        }
        pthread_mutex_unlock(&cache_lock);
        if (p) return p;
    }
    char *base = malloc((size_t)(size + PTL_HEADER + PTL_ALIGN));
    if (!base) return NULL;
    char *p = (char *)(((uintptr_t)base + PTL_HEADER + PTL_ALIGN - 1) & ~(uintptr_t)(PTL_ALIGN - 1));
#ifdef MADV_HUGEPAGE
    /* Large blocks ask for transparent huge pages (NumPy does the same from 4 MiB): fewer
     * TLB misses and page faults when a kernel streams through them, and MPI's single-copy
     * transfer between processes (process_vm_readv) is about 30% faster on them. Advice
     * only: where THP is off, madvise fails and nothing changes. */
    if (size >= PTL_HUGEPAGE_MIN_BYTES) {
        uintptr_t lo = ((uintptr_t)p + 4095) & ~(uintptr_t)4095, hi = ((uintptr_t)p + size) & ~(uintptr_t)4095;
        if (hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
    }
#endif
    ((int64_t *)p)[-2] = size;
    ((int64_t *)p)[-1] = (int64_t)(intptr_t)base;
    pthread_mutex_lock(&cache_lock);
    count_allocated(size);
    pthread_mutex_unlock(&cache_lock);
    return p;
}

void ptl_free(void *p, int64_t nbytes) {
    (void)nbytes; /* the header knows the real size */
    if (!p) return;
    int64_t size = block_size(p);
    pthread_mutex_lock(&cache_lock);
    stat_allocated -= size;
    if (size >= PTL_CACHE_MIN_BYTES && cache_count < PTL_CACHE_SLOTS && cache_bytes + size <= cache_limit) {
        cache[cache_count].ptr = p;
        cache[cache_count].size = size;
        cache_count++;
        cache_bytes += size;
        p = NULL;
    }
    pthread_mutex_unlock(&cache_lock);
    if (p) block_release(p);
}

/* The same two entry points with addresses as integers: the Python side keeps storage
 * addresses as ints, and cffi converts those without building a pointer object, which
 * is a measurable part of a small op's cost. */
intptr_t ptl_alloc_addr(int64_t nbytes) { return (intptr_t)ptl_alloc(nbytes); }

void ptl_free_addr(intptr_t p, int64_t nbytes) { ptl_free((void *)p, nbytes); }

/* caller holds cache_lock; frees cached blocks until at most `keep` bytes stay cached */
static void trim_cache(int64_t keep) {
    while (cache_count > 0 && cache_bytes > keep) {
        cached_block b = cache[--cache_count];
        cache_bytes -= b.size;
        block_release(b.ptr);
    }
}

/* free() hands a block back to malloc, not always to the system: glibc returns heap memory
 * only from the top of the heap, so blocks freed below a live one (and blocks under its
 * dynamic mmap threshold, which rises to the largest freed mapping up to 32 MiB) stay
 * resident. malloc_trim(0) gives every free page of the heap back (madvise), which is
 * what a caller of empty_cache() wants: resident memory to drop. */
static void release_to_system(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

void ptl_empty_cache(void) {
    pthread_mutex_lock(&cache_lock);
    trim_cache(0);
    pthread_mutex_unlock(&cache_lock);
    release_to_system();
}

void ptl_set_cache_limit(int64_t bytes) {
    pthread_mutex_lock(&cache_lock);
    cache_limit = bytes < 0 ? 0 : bytes;
    int64_t before = cache_bytes;
    trim_cache(cache_limit);
    int trimmed = cache_bytes != before;
    pthread_mutex_unlock(&cache_lock);
    if (trimmed) release_to_system();
}

/* stats: allocated, peak, cached, cache hits, cache misses, cache limit */
void ptl_allocator_stats(int64_t *out) {
    pthread_mutex_lock(&cache_lock);
    out[0] = stat_allocated;
    out[1] = stat_peak;
    out[2] = cache_bytes;
    out[3] = stat_hits;
    out[4] = stat_misses;
    out[5] = cache_limit;
    pthread_mutex_unlock(&cache_lock);
}

void ptl_reset_peak(void) {
    pthread_mutex_lock(&cache_lock);
    stat_peak = stat_allocated;
    pthread_mutex_unlock(&cache_lock);
}

/* ---- the iterator ------------------------------------------------------------------- */

typedef struct {
    int nt, ndim;
    int64_t sizes[PTL_MAX_DIMS];              /* dim 0 is the innermost */
    int64_t strides[PTL_MAX_DIMS][8];         /* bytes, [dim][operand] */
    char *base[8];
    int64_t numel;
} iter_plan;

static void plan_build(iter_plan *p, int nt, const ptl_tensor *ts) {
    int nd = ts[0].ndim;
    int order[PTL_MAX_DIMS];
    int n = 0;
    p->nt = nt;
    p->numel = 1;
    for (int k = 0; k < nt; k++) p->base[k] = (char *)ts[k].data;
    for (int d = 0; d < nd; d++) p->numel *= ts[0].sizes[d];
    /* drop size-1 dims; order the rest by the output's stride, smallest first (stable,
     * with later dims first on ties so a contiguous layout keeps its natural order) */
    for (int d = nd - 1; d >= 0; d--) {
        if (ts[0].sizes[d] == 1) continue;
        order[n++] = d;
    }
    for (int i = 1; i < n; i++) {
        int d = order[i], j = i - 1;
        int64_t sd = llabs(ts[0].strides[d]);
        while (j >= 0) {
            int e = order[j];
            int64_t se = llabs(ts[0].strides[e]);
            /* the output decides; where it does not (stride 0, broadcast), the inputs do */
            int before = 0;
            if (sd != se) {
                before = sd < se && sd != 0;
                if (se == 0 && sd != 0) before = 1;
            } else {
                for (int k = 1; k < nt; k++) {
                    int64_t a = llabs(ts[k].strides[d]), b = llabs(ts[k].strides[e]);
                    if (a != b) { before = a < b && a != 0; break; }
                }
            }
            if (!before) break;
            order[j + 1] = e;
            j--;
        }
        order[j + 1] = d;
    }
    /* coalesce neighbours that are contiguous for every operand */
    int m = 0;
    for (int i = 0; i < n; i++) {
        int d = order[i];
        if (m > 0) {
            int ok = 1;
            for (int k = 0; k < nt && ok; k++)
                ok = (int64_t)ts[k].strides[d] * ptl_itemsize[ts[k].dtype] ==
                     p->strides[m - 1][k] * p->sizes[m - 1];
            if (ok) {
                p->sizes[m - 1] *= ts[0].sizes[d];
                continue;
            }
        }
        p->sizes[m] = ts[0].sizes[d];
        for (int k = 0; k < nt; k++) p->strides[m][k] = ts[k].strides[d] * ptl_itemsize[ts[k].dtype];
        m++;
    }
    if (m == 0) { /* a single element */
        p->sizes[0] = 1;
        for (int k = 0; k < nt; k++) p->strides[0][k] = ptl_itemsize[ts[k].dtype];
        m = 1;
    }
    p->ndim = m;
}

static void plan_run_range(const iter_plan *p, int64_t begin, int64_t end, ptl_loop_fn fn, const ptl_scalar *sc) {
    int64_t idx[PTL_MAX_DIMS];
    int64_t rem = begin;
    for (int d = 0; d < p->ndim; d++) {
        idx[d] = rem % p->sizes[d];
        rem /= p->sizes[d];
    }
    int64_t inner[8];
    for (int k = 0; k < p->nt; k++) inner[k] = p->strides[0][k];
    char *ptrs[8];
    while (begin < end) {
        for (int k = 0; k < p->nt; k++) {
            char *q = p->base[k];
            for (int d = 0; d < p->ndim; d++) q += idx[d] * p->strides[d][k];
            ptrs[k] = q;
        }
        int64_t n = p->sizes[0] - idx[0];
        if (n > end - begin) n = end - begin;
        fn(ptrs, inner, n, sc);
        begin += n;
        idx[0] += n;
        for (int d = 0; d < p->ndim - 1 && idx[d] >= p->sizes[d]; d++) {
            idx[d] = 0;
            idx[d + 1]++;
        }
    }
}

int ptl_run_pointwise(int ntensors, const ptl_tensor *ts, ptl_loop_fn fn, const ptl_scalar *sc) {
    if (ntensors < 1 || ntensors > 8) return PTL_ERR_ARG;
    if (ts[0].ndim < 0 || ts[0].ndim > PTL_MAX_DIMS) return PTL_ERR_NDIM;
    for (int k = 1; k < ntensors; k++)   /* every operand is described at the output's shape */
        if (ts[k].ndim != ts[0].ndim) return PTL_ERR_NDIM;
    iter_plan p;
    plan_build(&p, ntensors, ts);
    if (p.numel == 0) return PTL_OK;
#ifdef _OPENMP
    int nthreads = omp_get_max_threads();
    if (p.numel >= PTL_GRAIN && nthreads > 1) {
        int64_t chunks = p.numel / (PTL_GRAIN / 2);
        if (chunks > nthreads) chunks = nthreads;
#pragma omp parallel num_threads((int)chunks)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            int64_t b = p.numel * t / nt, e = p.numel * (t + 1) / nt;
            plan_run_range(&p, b, e, fn, sc);
        }
        return PTL_OK;
    }
#endif
    plan_run_range(&p, 0, p.numel, fn, sc);
    return PTL_OK;
}

int ptl_run_contiguous(int ntensors, char **data, const int64_t *itemsizes, int64_t n,
                       ptl_loop_fn fn, const ptl_scalar *sc) {
    if (n <= 0) return PTL_OK;
#ifdef _OPENMP
    int nthreads = omp_get_max_threads();
    if (n >= PTL_GRAIN && nthreads > 1) {
        int64_t chunks = n / (PTL_GRAIN / 2);
        if (chunks > nthreads) chunks = nthreads;
#pragma omp parallel num_threads((int)chunks)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            /* split on 64-element boundaries so each thread's rows stay aligned */
            int64_t b = (n * t / nt) & ~(int64_t)63, e = t == nt - 1 ? n : (n * (t + 1) / nt) & ~(int64_t)63;
            char *ptrs[8];
            for (int k = 0; k < ntensors; k++) ptrs[k] = data[k] + b * itemsizes[k];
            if (e > b) fn(ptrs, itemsizes, e - b, sc);
        }
        return PTL_OK;
    }
#endif
    fn(data, itemsizes, n, sc);
    return PTL_OK;
}

/* ---- copy with dtype conversion ----------------------------------------------------- */

typedef uint8_t ptl_bool_t;
typedef uint16_t ptl_half_t;
typedef uint16_t ptl_bf16_t;

/* load a value as its natural C type; store from any C arithmetic type */
#define LOAD_b8(p) (*(const ptl_bool_t *)(p) != 0)
#define LOAD_u8(p) (*(const uint8_t *)(p))
#define LOAD_i8(p) (*(const int8_t *)(p))
#define LOAD_i16(p) (*(const int16_t *)(p))
#define LOAD_i32(p) (*(const int32_t *)(p))
#define LOAD_i64(p) (*(const int64_t *)(p))
#define LOAD_f16(p) ptl_h2f(*(const ptl_half_t *)(p))
#define LOAD_bf16(p) ptl_bf2f(*(const ptl_bf16_t *)(p))
#define LOAD_f32(p) (*(const float *)(p))
#define LOAD_f64(p) (*(const double *)(p))

/* float -> integer as PyTorch's CPU casts come out on x86-64, written so that it is
 * defined behaviour in C (a float out of the integer's range, or NaN, is undefined, and
 * the sanitizer build aborts on it; other machines saturate instead). The conversion
 * instruction (cvtts?2si) gives the width's minimum ("integer indefinite") for NaN and
 * for out-of-range values: int8, int16 and int32 convert through int32, int64 through
 * int64, uint8 through int32 from float and through int64 from double; the result then
 * wraps to the width. Integer sources just wrap (implementation-defined, not undefined). */
static inline int32_t f2i32_f(float v) { return v >= -2147483648.0f && v < 2147483648.0f ? (int32_t)v : INT32_MIN; }
static inline int32_t f2i32_d(double v) { return v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v : INT32_MIN; }
static inline int64_t f2i64_f(float v) {
    return v >= -9223372036854775808.0f && v < 9223372036854775808.0f ? (int64_t)v : INT64_MIN;
}
static inline int64_t f2i64_d(double v) {
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}
#define TO_I32(v) _Generic((v), float: f2i32_f, double: f2i32_d, default: f2i32_d)(v)
#define TO_I64(v) _Generic((v), float: f2i64_f, double: f2i64_d, default: f2i64_d)(v)
#define IS_FLOAT(v) _Generic((v), float: 1, double: 1, default: 0)
#define IS_DOUBLE(v) _Generic((v), double: 1, default: 0)
/* (the integer branch converts an integer, never through double: int64 stays exact) */
#define TO_INT(T, v) (IS_FLOAT(v) ? (T)TO_I32(v) : (T)(v))
#define STORE_b8(p, v) (*(ptl_bool_t *)(p) = (ptl_bool_t)((v) != 0))
#define STORE_u8(p, v) (*(uint8_t *)(p) = IS_DOUBLE(v) ? (uint8_t)TO_I64(v) : TO_INT(uint8_t, v))
#define STORE_i8(p, v) (*(int8_t *)(p) = TO_INT(int8_t, v))
#define STORE_i16(p, v) (*(int16_t *)(p) = TO_INT(int16_t, v))
#define STORE_i32(p, v) (*(int32_t *)(p) = TO_INT(int32_t, v))
#define STORE_i64(p, v) (*(int64_t *)(p) = IS_FLOAT(v) ? TO_I64(v) : (int64_t)(v))
#define STORE_f16(p, v) (*(ptl_half_t *)(p) = ptl_f2h((float)(v)))
#define STORE_bf16(p, v) (*(ptl_bf16_t *)(p) = ptl_f2bf((float)(v)))
#define STORE_f32(p, v) (*(float *)(p) = (float)(v))
#define STORE_f64(p, v) (*(double *)(p) = (double)(v))

#define SIZE_b8 1
#define SIZE_u8 1
#define SIZE_i8 1
#define SIZE_i16 2
#define SIZE_i32 4
#define SIZE_i64 8
#define SIZE_f16 2
#define SIZE_bf16 2
#define SIZE_f32 4
#define SIZE_f64 8

/* (the contiguous loop has constant strides, so the compiler vectorises it, range checks
   of the float -> integer conversions included) */
#define DEF_COPY(D, S)                                                                          \
    static void copy_##D##_##S(char **data, const int64_t *st, int64_t n, const ptl_scalar *sc) { \
        (void)sc;                                                                               \
        char *o = data[0];                                                                      \
        const char *i = data[1];                                                                \
        if (st[0] == SIZE_##D && st[1] == SIZE_##S) {                                           \
            for (int64_t k = 0; k < n; k++) STORE_##D(o + k * SIZE_##D, LOAD_##S(i + k * SIZE_##S)); \
            return;                                                                             \
        }                                                                                       \
        for (int64_t k = 0; k < n; k++) STORE_##D(o + k * st[0], LOAD_##S(i + k * st[1]));     \
    }

#define DEF_COPY_ROW(D)                                                                          \
    DEF_COPY(D, b8) DEF_COPY(D, u8) DEF_COPY(D, i8) DEF_COPY(D, i16) DEF_COPY(D, i32)          \
    DEF_COPY(D, i64) DEF_COPY(D, f16) DEF_COPY(D, bf16) DEF_COPY(D, f32) DEF_COPY(D, f64)
DEF_COPY_ROW(b8) DEF_COPY_ROW(u8) DEF_COPY_ROW(i8) DEF_COPY_ROW(i16) DEF_COPY_ROW(i32)
DEF_COPY_ROW(i64) DEF_COPY_ROW(f16) DEF_COPY_ROW(bf16) DEF_COPY_ROW(f32) DEF_COPY_ROW(f64)

#define COPY_ROW(D) {copy_##D##_b8, copy_##D##_u8, copy_##D##_i8, copy_##D##_i16, copy_##D##_i32, \
                      copy_##D##_i64, copy_##D##_f16, copy_##D##_bf16, copy_##D##_f32, copy_##D##_f64}
static const ptl_loop_fn copy_table[PTL_NUM_DTYPES][PTL_NUM_DTYPES] = {
    COPY_ROW(b8), COPY_ROW(u8), COPY_ROW(i8), COPY_ROW(i16), COPY_ROW(i32),
    COPY_ROW(i64), COPY_ROW(f16), COPY_ROW(bf16), COPY_ROW(f32), COPY_ROW(f64)};

/* same dtype: move bytes; a contiguous row becomes one memcpy */
#define DEF_MOVE(W, T)                                                                          \
    static void move_##W(char **data, const int64_t *st, int64_t n, const ptl_scalar *sc) {     \
        (void)sc;                                                                               \
        if (st[0] == W && st[1] == W) { memcpy(data[0], data[1], (size_t)(n * W)); return; }    \
        if (st[0] == W && st[1] == -W) { /* a flipped row: a loop the compiler vectorises */    \
            T *o = (T *)data[0];                                                                \
            const T *i = (const T *)data[1];                                                    \
            for (int64_t k = 0; k < n; k++) o[k] = i[-k];                                       \
            return;                                                                             \
        }                                                                                       \
        char *o = data[0];                                                                      \
        const char *i = data[1];                                                                \
        for (int64_t k = 0; k < n; k++) *(T *)(o + k * st[0]) = *(const T *)(i + k * st[1]);    \
    }
DEF_MOVE(1, uint8_t)
DEF_MOVE(2, uint16_t)
DEF_MOVE(4, uint32_t)
DEF_MOVE(8, uint64_t)

/* ts[0] = destination, ts[1] = source, both with the destination's sizes (the source
 * already expanded to them by the caller). */
int ptl_copy(const ptl_tensor *ts) {
    int d = ts[0].dtype, s = ts[1].dtype;
    if (d < 0 || d >= PTL_NUM_DTYPES || s < 0 || s >= PTL_NUM_DTYPES) return PTL_ERR_DTYPE;
    ptl_loop_fn fn;
    if (d == s || (d == PTL_U8 && s == PTL_BOOL && 0)) {
        switch (ptl_itemsize[d]) {
            case 1: fn = move_1; break;
            case 2: fn = move_2; break;
            case 4: fn = move_4; break;
            default: fn = move_8; break;
        }
    } else {
        fn = copy_table[d][s];
    }
    return ptl_run_pointwise(2, ts, fn, NULL);
}

/* ---- fill ---------------------------------------------------------------------------- */

#define DEF_FILL(D, EXPR)                                                                      \
    static void fill_##D(char **data, const int64_t *st, int64_t n, const ptl_scalar *sc) {    \
        char *o = data[0];                                                                     \
        for (int64_t k = 0; k < n; k++) STORE_##D(o + k * st[0], EXPR);                        \
    }
DEF_FILL(b8, sc->d != 0 || sc->i != 0)
DEF_FILL(u8, sc->i)
DEF_FILL(i8, sc->i)
DEF_FILL(i16, sc->i)
DEF_FILL(i32, sc->i)
DEF_FILL(i64, sc->i)
DEF_FILL(f16, sc->d)
DEF_FILL(bf16, sc->d)
DEF_FILL(f32, sc->d)
DEF_FILL(f64, sc->d)

static const ptl_loop_fn fill_table[PTL_NUM_DTYPES] = {fill_b8, fill_u8, fill_i8, fill_i16, fill_i32,
                                                      fill_i64, fill_f16, fill_bf16, fill_f32, fill_f64};

int ptl_fill(const ptl_tensor *t, double d, int64_t i) {
    if (t->dtype < 0 || t->dtype >= PTL_NUM_DTYPES) return PTL_ERR_DTYPE;
    ptl_scalar sc = {d, i};
    return ptl_run_pointwise(1, t, fill_table[t->dtype], &sc);
}

/* ---- descriptors ---------------------------------------------------------------------
 * Filling a descriptor field by field from Python costs a cffi attribute write each (a
 * microsecond per tensor); one call with the sizes and strides as arrays is half that. */

int ptl_set_desc(ptl_tensor *ts, int k, intptr_t data, int dtype, int ndim, const int64_t *sizes,
                 const int64_t *strides) {
    ptl_tensor *d = ts + k;
    if (ndim < 0 || ndim > PTL_MAX_DIMS) {
        /* a caller that ignores the status still hands kernels a descriptor they refuse
         * (every kernel checks ndim), never a half-filled one */
        d->data = NULL;
        d->ndim = -1;
        return PTL_ERR_NDIM;
    }
    d->data = (void *)data;
    d->dtype = dtype;
    d->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        d->sizes[i] = sizes[i];
        d->strides[i] = strides[i];
    }
    return PTL_OK;
}
