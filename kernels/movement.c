/* movement.c: data-movement kernels on the CPU.
 *
 * cat      every piece copied into its slot of the output in one call (no per-piece
 *          Python round trip), so joining a thousand small tensors costs one C call.
 * gather   out[i] = src[i + index[i] * dim_stride]            (gather, take)
 * scatter  dst[i + index[i] * dim_stride] op= src[i]           (scatter, scatter_add,
 *          scatter_reduce, index_add/copy/fill, put_), op in assign/add/mul/max/min.
 *
 * Like index.c, the Python side hands every operand viewed at the shape of the index:
 * the indexed tensor is "restrided" (its stride along `dim` set to 0, the real size and
 * stride of `dim` passed apart), so an element's address is its coordinates times the
 * strides plus index * dim_stride. Every index is checked against dim_size before it is
 * used: gather stops at the first bad one, scatter checks all of them before writing, so
 * a failed scatter_ leaves its input untouched. Nothing is read or written out of bounds.
 */
#include "ptl.h"

#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- cat ------------------------------------------------------------------------------ */

/* out: contiguous, `outer` rows of out_row bytes. Piece k is contiguous, `outer` rows of
 * rows[k] bytes, and lands at byte column sum(rows[:k]) of each output row. */
int ptl_cat(intptr_t out, int64_t outer, int64_t out_row, int n, const intptr_t *ptrs, const int64_t *rows) {
    if (n < 0 || outer < 0 || out_row < 0) return PTL_ERR_ARG;
    if (n == 0 || outer == 0 || out_row == 0) return PTL_OK;
    int64_t *cols = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
    if (!cols) return PTL_ERR_ALLOC;
    int64_t c = 0;
    for (int k = 0; k < n; k++) {
        if (rows[k] < 0) {
            free(cols);
            return PTL_ERR_ARG;
        }
        cols[k] = c;
        c += rows[k];
    }
    if (c != out_row) {
        free(cols);
        return PTL_ERR_ARG;
    }
    char *o = (char *)out;
    int64_t total = outer * out_row;
#ifdef _OPENMP
    int nthreads = omp_get_max_threads();
    if (total >= (int64_t)1 << 20 && nthreads > 1) {
        if (outer == 1) {
            /* a few large pieces: split the whole output into equal byte ranges */
#pragma omp parallel num_threads(nthreads)
            {
                int t = omp_get_thread_num(), nt = omp_get_num_threads();
                int64_t b = total * t / nt, e = total * (t + 1) / nt;
                for (int k = 0; k < n; k++) {
                    int64_t lo = cols[k] > b ? cols[k] : b, hi = cols[k] + rows[k] < e ? cols[k] + rows[k] : e;
                    if (lo < hi) memcpy(o + lo, (const char *)ptrs[k] + (lo - cols[k]), (size_t)(hi - lo));
                }
            }
        } else {
#pragma omp parallel for num_threads(nthreads) schedule(static)
            for (int64_t r = 0; r < outer; r++)
                for (int k = 0; k < n; k++)
                    if (rows[k]) memcpy(o + r * out_row + cols[k], (const char *)ptrs[k] + r * rows[k], (size_t)rows[k]);
        }
        free(cols);
        return PTL_OK;
    }
#endif
    if (outer == 1) {
        for (int k = 0; k < n; k++)
            if (rows[k]) memcpy(o + cols[k], (const char *)ptrs[k], (size_t)rows[k]);
    } else {
        for (int64_t r = 0; r < outer; r++)
            for (int k = 0; k < n; k++)
                if (rows[k]) memcpy(o + r * out_row + cols[k], (const char *)ptrs[k] + r * rows[k], (size_t)rows[k]);
    }
    free(cols);
    return PTL_OK;
}

/* ---- the walk over the index's shape ----------------------------------------------------- */

typedef struct {
    int ndim;                     /* >= 1 */
    int64_t sizes[PTL_MAX_DIMS];
    int64_t a_st[PTL_MAX_DIMS];   /* bytes: out (gather) / src (scatter) */
    int64_t b_st[PTL_MAX_DIMS];   /* bytes: the restrided indexed tensor */
    int64_t i_st[PTL_MAX_DIMS];   /* elements of int64: the index */
    char *a, *b;
    const int64_t *idx;
    int64_t dim_size, dim_stride; /* dim_stride in bytes */
    int item, dtype;
} mwalk;

static int mwalk_init(mwalk *w, const ptl_tensor *a, const ptl_tensor *b, const ptl_tensor *idx, int64_t dim_size,
                      int64_t dim_stride) {
    int nd = idx->ndim;
    if (nd < 0 || nd > PTL_MAX_DIMS || a->ndim != nd || b->ndim != nd) return PTL_ERR_NDIM;
    if (a->dtype < 0 || a->dtype >= PTL_NUM_DTYPES || a->dtype != b->dtype) return PTL_ERR_DTYPE;
    if (idx->dtype != PTL_I64 || dim_size < 0) return PTL_ERR_ARG;
    w->dtype = a->dtype;
    w->item = ptl_itemsize[a->dtype];
    w->a = (char *)a->data;
    w->b = (char *)b->data;
    w->idx = (const int64_t *)idx->data;
    w->dim_size = dim_size;
    w->dim_stride = dim_stride * w->item;
    if (nd == 0) {
        w->ndim = 1;
        w->sizes[0] = 1;
        w->a_st[0] = w->b_st[0] = w->i_st[0] = 0;
        return PTL_OK;
    }
    w->ndim = nd;
    for (int d = 0; d < nd; d++) {
        if (idx->sizes[d] < 0 || a->sizes[d] != idx->sizes[d] || b->sizes[d] != idx->sizes[d]) return PTL_ERR_ARG;
        w->sizes[d] = idx->sizes[d];
        w->a_st[d] = a->strides[d] * w->item;
        w->b_st[d] = b->strides[d] * w->item;
        w->i_st[d] = idx->strides[d];
    }
    return PTL_OK;
}

static int64_t mwalk_rows(const mwalk *w) {
    int64_t r = 1;
    for (int d = 0; d < w->ndim; d++) r *= w->sizes[d];
    return w->sizes[w->ndim - 1] ? r / w->sizes[w->ndim - 1] : 0;
}

static void mwalk_row(const mwalk *w, int64_t r, char **pa, char **pb, const int64_t **pi) {
    char *a = w->a, *b = w->b;
    const int64_t *ip = w->idx;
    for (int d = w->ndim - 2; d >= 0; d--) {
        int64_t i = r % w->sizes[d];
        r /= w->sizes[d];
        a += i * w->a_st[d];
        b += i * w->b_st[d];
        ip += i * w->i_st[d];
    }
    *pa = a;
    *pb = b;
    *pi = ip;
}

/* min and max of n int64 values with stride ist (a loop that vectorises: one pass, no
 * early exit; the slow search for the first bad value runs only when this finds one). */
static PTL_HOT void index_minmax(const int64_t *ip, int64_t n, int64_t ist, int64_t *mn, int64_t *mx) {
    int64_t lo = *mn, hi = *mx;
    if (ist == 0 && n > 0) {      /* an index broadcast along the row: one value */
        n = 1;
        ist = 1;
    }
    if (ist == 1) {
        for (int64_t j = 0; j < n; j++) {
            int64_t v = ip[j];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    } else {
        for (int64_t j = 0; j < n; j++) {
            int64_t v = ip[j * ist];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    *mn = lo;
    *mx = hi;
}

/* The first out-of-range index over rows [r0, r1) of columns [c0, c1): 1 (value in *bad),
 * else 0. With `wrap`, negative indices count from the end (take, put_). */
static int check_range_serial(const mwalk *w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int wrap,
                              int64_t *bad) {
    int last = w->ndim - 1;
    int64_t lo = wrap ? -w->dim_size : 0, hi = w->dim_size, ist = w->i_st[last];
    for (int64_t r = r0; r < r1; r++) {
        char *a, *b;
        const int64_t *ip;
        mwalk_row(w, r, &a, &b, &ip);
        for (int64_t j = c0; j < c1; j++) {
            int64_t v = ip[j * ist];
            if (v < lo || v >= hi) {
                *bad = v;
                return 1;
            }
        }
    }
    return 0;
}

/* The same answer as check_range_serial, found by a min/max pass over the index (on all
 * threads when it is large); only a failing index pays for the ordered search. */
static int check_range(const mwalk *w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int wrap, int64_t *bad) {
    int last = w->ndim - 1;
    int64_t lo = wrap ? -w->dim_size : 0, hi = w->dim_size, ist = w->i_st[last];
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    int64_t rows = r1 - r0;
    (void)rows;
#ifdef _OPENMP
    if (rows * (c1 - c0) >= PTL_GRAIN && rows > 1 && omp_get_max_threads() > 1) {
#pragma omp parallel
        {
            int64_t tmn = INT64_MAX, tmx = INT64_MIN;
#pragma omp for schedule(static)
            for (int64_t r = r0; r < r1; r++) {
                char *a, *b;
                const int64_t *ip;
                mwalk_row(w, r, &a, &b, &ip);
                index_minmax(ip + c0 * ist, c1 - c0, ist, &tmn, &tmx);
            }
#pragma omp critical(ptl_movement_minmax)
            {
                mn = tmn < mn ? tmn : mn;
                mx = tmx > mx ? tmx : mx;
            }
        }
    } else
#endif
    {
        for (int64_t r = r0; r < r1; r++) {
            char *a, *b;
            const int64_t *ip;
            mwalk_row(w, r, &a, &b, &ip);
            index_minmax(ip + c0 * ist, c1 - c0, ist, &mn, &mx);
        }
    }
    if (r1 > r0 && c1 > c0 && (mn < lo || mx >= hi)) return check_range_serial(w, r0, r1, c0, c1, wrap, bad);
    return 0;
}

/* ---- gather ------------------------------------------------------------------------------- */

#define GATHER_LOOP(T)                                                                            \
    for (int64_t j = 0; j < n; j++) {                                                             \
        int64_t v = ip[j * ist];                                                                  \
        if (v < lo || v >= hi) {                                                                  \
            *bad = v;                                                                             \
            return 1;                                                                             \
        }                                                                                         \
        if (v < 0) v += hi;                                                                       \
        T x;                                                                                      \
        memcpy(&x, b + j * bs + v * ds, sizeof(T));                                               \
        memcpy(a + j * as, &x, sizeof(T));                                                        \
    }

/* One row without checks (its indices are known to lie in [0, dim_size)): typed loads
 * and stores in element strides, a loop GCC turns into vector gathers. */
#define GATHER_FAST(T)                                                                            \
    static PTL_HOT void gather_fast_##T(T *restrict a, const T *restrict b, const int64_t *restrict ip, \
                                        int64_t n, int64_t as, int64_t bs, int64_t ist, int64_t ds) { \
        if (as == 1 && ist == 1)                                                                  \
            for (int64_t j = 0; j < n; j++) a[j] = b[j * bs + ip[j] * ds];                        \
        else                                                                                      \
            for (int64_t j = 0; j < n; j++) a[j * as] = b[j * bs + ip[j * ist] * ds];             \
    }
GATHER_FAST(uint8_t)
GATHER_FAST(uint16_t)
GATHER_FAST(uint32_t)
GATHER_FAST(uint64_t)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
/* 4-byte elements with a contiguous output and index: GCC does not vectorise the gather
 * above (an int64 index times a stride), so AVX-512 gathers by hand, 8 at a time. Lanes
 * whose index is outside [0, hi) are not read; the return value says whether there were
 * any (the caller then redoes the row with the checking loop, which reports the error or
 * wraps negative indices). */
__attribute__((target("avx512f,avx512dq"))) static int gather32_avx512(uint32_t *a, const uint32_t *b,
                                                                         const int64_t *ip, int64_t n, int64_t bs,
                                                                         int64_t ds, int64_t hi) {
    __m512i vbs = _mm512_set1_epi64(bs), vds = _mm512_set1_epi64(ds), step = _mm512_set1_epi64(8);
    __m512i vhi = _mm512_set1_epi64(hi), zero = _mm512_setzero_si512();
    __m512i vj = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    __mmask8 ok = 0xff;
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m512i idx = _mm512_loadu_si512((const void *)(ip + j));
        __mmask8 in = _mm512_cmpge_epi64_mask(idx, zero) & _mm512_cmplt_epi64_mask(idx, vhi);
        ok &= in;
        __m512i off = _mm512_add_epi64(_mm512_mullo_epi64(vj, vbs), _mm512_mullo_epi64(idx, vds));
        __m256i v = _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), in, off, (const void *)b, 4);
        _mm256_storeu_si256((__m256i *)(a + j), v);
        vj = _mm512_add_epi64(vj, step);
    }
    int tail_ok = 1;
    for (; j < n; j++) {
        int64_t v = ip[j];
        if (v < 0 || v >= hi) {
            tail_ok = 0;
            continue;
        }
        a[j] = b[j * bs + v * ds];
    }
    return ok == 0xff && tail_ok;
}

static int use_avx512_gather(void) {
    static int v = -1;
    if (v < 0) v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    return v;
}
#define HAVE_GATHER32_AVX512 1
#endif

static int gather_rows(const mwalk *w, int64_t r0, int64_t r1, int wrap, int64_t *bad) {
    int last = w->ndim - 1;
    int64_t n = w->sizes[last], as = w->a_st[last], bs = w->b_st[last], ist = w->i_st[last], ds = w->dim_stride;
    int64_t lo = wrap ? -w->dim_size : 0, hi = w->dim_size;
    int item = w->item;
    /* element strides, when every byte stride is a whole number of elements (always, for
     * tensors of this dtype; checked so the typed path is never wrong) */
    int typed = as % item == 0 && bs % item == 0 && ds % item == 0;
    for (int64_t r = r0; r < r1; r++) {
        char *a, *b;
        const int64_t *ip;
        mwalk_row(w, r, &a, &b, &ip);
#ifdef HAVE_GATHER32_AVX512
        if (typed && item == 4 && as == 4 && ist == 1 && use_avx512_gather() &&
            gather32_avx512((uint32_t *)a, (const uint32_t *)b, ip, n, bs / 4, ds / 4, hi))
            continue;     /* else: some index is negative or out of range; the loops below decide */
#endif
        int64_t mn = INT64_MAX, mx = INT64_MIN;
        index_minmax(ip, n, ist, &mn, &mx);
        if (typed && n > 0 && mn >= 0 && mx < hi) {
            int64_t e_as = as / item, e_bs = bs / item, e_ds = ds / item;
            switch (item) {
                case 1: gather_fast_uint8_t((uint8_t *)a, (const uint8_t *)b, ip, n, e_as, e_bs, ist, e_ds); break;
                case 2: gather_fast_uint16_t((uint16_t *)a, (const uint16_t *)b, ip, n, e_as, e_bs, ist, e_ds); break;
                case 4: gather_fast_uint32_t((uint32_t *)a, (const uint32_t *)b, ip, n, e_as, e_bs, ist, e_ds); break;
                default: gather_fast_uint64_t((uint64_t *)a, (const uint64_t *)b, ip, n, e_as, e_bs, ist, e_ds); break;
            }
            continue;
        }
        switch (item) {
            case 1: GATHER_LOOP(uint8_t) break;
            case 2: GATHER_LOOP(uint16_t) break;
            case 4: GATHER_LOOP(uint32_t) break;
            default: GATHER_LOOP(uint64_t) break;
        }
    }
    return 0;
}

/* ts = [out, src restrided, index], all at the index's shape. */
int ptl_gather(const ptl_tensor *ts, int64_t dim_size, int64_t dim_stride, int wrap, int64_t *bad) {
    mwalk w;
    int st = mwalk_init(&w, &ts[0], &ts[1], &ts[2], dim_size, dim_stride);
    if (st != PTL_OK) return st;
    int64_t rows = mwalk_rows(&w), numel = rows * w.sizes[w.ndim - 1];
    int failed = 0;
#ifdef _OPENMP
    int nthreads = omp_get_max_threads();
    if (numel >= PTL_GRAIN && nthreads > 1 && rows > 1) {
        int64_t chunks = numel / (PTL_GRAIN / 2);
        if (chunks > nthreads) chunks = nthreads;
        if (chunks > rows) chunks = rows;
#pragma omp parallel num_threads((int)chunks)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            int64_t v = 0;
            if (gather_rows(&w, rows * t / nt, rows * (t + 1) / nt, wrap, &v)) {
#pragma omp critical(ptl_movement_failure)
                if (!failed) {
                    failed = 1;
                    *bad = v;
                }
            }
        }
        return failed ? PTL_ERR_INDEX : PTL_OK;
    }
#endif
    (void)numel;
    return gather_rows(&w, 0, rows, wrap, bad) ? PTL_ERR_INDEX : PTL_OK;
}

/* ---- scatter ------------------------------------------------------------------------------ */

enum { SC_ASSIGN = 0, SC_ADD = 1, SC_MUL = 2, SC_MAX = 3, SC_MIN = 4 };

/* x op= y for arithmetic type T (computed in C type CT). max/min propagate NaN. */
#define COMBINE(T, CT, LOAD, STORE)                                                              \
    {                                                                                            \
        T xr, yr;                                                                                \
        memcpy(&xr, d, sizeof(T));                                                               \
        memcpy(&yr, s, sizeof(T));                                                               \
        CT x = LOAD(xr), y = LOAD(yr), z;                                                        \
        switch (op) {                                                                            \
            case SC_ADD: z = x + y; break;                                                       \
            case SC_MUL: z = x * y; break;                                                       \
            case SC_MAX: z = (x != x || x > y) ? x : y; break;                                   \
            default: z = (x != x || x < y) ? x : y; break;                                       \
        }                                                                                        \
        xr = STORE(z);                                                                           \
        memcpy(d, &xr, sizeof(T));                                                               \
    }                                                                                            \
    break;

/* integer add/mul wrap around (two's complement), as PyTorch's do */
#define COMBINE_INT(T, UT)                                                                       \
    {                                                                                            \
        T x, y, z;                                                                               \
        memcpy(&x, d, sizeof(T));                                                                \
        memcpy(&y, s, sizeof(T));                                                                \
        switch (op) {                                                                            \
            case SC_ADD: z = (T)((UT)x + (UT)y); break;                                          \
            case SC_MUL: z = (T)((UT)x * (UT)y); break;                                          \
            case SC_MAX: z = x > y ? x : y; break;                                               \
            default: z = x < y ? x : y; break;                                                   \
        }                                                                                        \
        memcpy(d, &z, sizeof(T));                                                                \
    }                                                                                            \
    break;

#define ID(x) (x)
static inline void combine(char *d, const char *s, int dtype, int op) {
    switch (dtype) {
        case PTL_BOOL: {
            uint8_t x = *(uint8_t *)d != 0, y = *(const uint8_t *)s != 0;
            *(uint8_t *)d = (op == SC_ADD || op == SC_MAX) ? (x | y) : (x & y);
        } break;
        case PTL_U8: COMBINE_INT(uint8_t, uint8_t)
        case PTL_I8: COMBINE_INT(int8_t, uint8_t)
        case PTL_I16: COMBINE_INT(int16_t, uint16_t)
        case PTL_I32: COMBINE_INT(int32_t, uint32_t)
        case PTL_I64: COMBINE_INT(int64_t, uint64_t)
        case PTL_F16: COMBINE(uint16_t, float, ptl_h2f, ptl_f2h)
        case PTL_BF16: COMBINE(uint16_t, float, ptl_bf2f, ptl_f2bf)
        case PTL_F32: COMBINE(float, float, ID, ID)
        default: COMBINE(double, double, ID, ID)
    }
}

/* rows [r0, r1), columns [c0, c1) of the walk; a = src, b = dst (restrided). Every index is
 * checked as it is used: an out-of-range one stops the block and returns 1, having written
 * part of dst (the caller then finds the first bad index in order and reports it). */
#define SCATTER_INDEX(expr)                                                                      \
    int64_t v = (expr);                                                                          \
    if ((uint64_t)(v - lo) >= span) return 1;                                                    \
    v += v < 0 ? n : 0;

/* d[idx[j]] += src[j] over one row: the loop of scatter_add along a contiguous last dim,
 * kept in a function of its own so that its few values stay in registers */
static PTL_HOT int scatter_add_row_f32(float *restrict d, const float *restrict src, const int64_t *restrict ip,
                                       int64_t c0, int64_t c1, int64_t lo, uint64_t span, int64_t n) {
    for (int64_t j = c0; j < c1; j++) {
        int64_t v = ip[j];
        if ((uint64_t)(v - lo) >= span) return 1;
        v += v < 0 ? n : 0;
        d[v] += src[j];
    }
    return 0;
}

static PTL_HOT int scatter_block(const mwalk *w, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int op, int wrap) {
    int last = w->ndim - 1;
    int64_t as = w->a_st[last], bs = w->b_st[last], ist = w->i_st[last], ds = w->dim_stride, n = w->dim_size;
    int64_t lo = wrap ? -n : 0;
    uint64_t span = (uint64_t)(n - lo);
    int item = w->item;
    for (int64_t r = r0; r < r1; r++) {
        char *a, *b;
        const int64_t *ip;
        mwalk_row(w, r, &a, &b, &ip);
        if (op == SC_ASSIGN) {
            for (int64_t j = c0; j < c1; j++) {
                SCATTER_INDEX(ip[j * ist])
                memcpy(b + j * bs + v * ds, a + j * as, (size_t)item);
            }
        } else if (op == SC_ADD && w->dtype == PTL_F32 && as == 4 && ist == 0 && bs == 4 && ds % 4 == 0) {
            /* index_add along a leading dim: one index for the whole row, so the row is a
             * contiguous vector add (one destination row per index, as rows of the walk
             * run one after another on a thread) */
            SCATTER_INDEX(ip[0])
            float *d = (float *)(b + v * ds);
            const float *src = (const float *)a;
            for (int64_t j = c0; j < c1; j++) d[j] += src[j];
        } else if (op == SC_ADD && w->dtype == PTL_F32 && as == 4 && ist == 1 && bs % 4 == 0 && ds % 4 == 0) {
            /* the common scatter_add / index_add: typed, unit-stride source and index */
            float *d = (float *)b;
            const float *src = (const float *)a;
            int64_t ebs = bs / 4, eds = ds / 4;
            if (ebs == 0 && eds == 1) {   /* scatter_add along a contiguous last dim */
                if (scatter_add_row_f32(d, src, ip, c0, c1, lo, span, n)) return 1;
                continue;
            }
            for (int64_t j = c0; j < c1; j++) {
                SCATTER_INDEX(ip[j])
                d[j * ebs + v * eds] += src[j];
            }
        } else if (op == SC_ADD && w->dtype == PTL_F32) {
            for (int64_t j = c0; j < c1; j++) {
                SCATTER_INDEX(ip[j * ist])
                float x, y;
                memcpy(&x, b + j * bs + v * ds, 4);
                memcpy(&y, a + j * as, 4);
                x += y;
                memcpy(b + j * bs + v * ds, &x, 4);
            }
        } else {
            for (int64_t j = c0; j < c1; j++) {
                SCATTER_INDEX(ip[j * ist])
                combine(b + j * bs + v * ds, a + j * as, w->dtype, op);
            }
        }
    }
    return 0;
}

/* ts = [dst restrided, src, index], all at the index's shape; `dim` is the scattered dim
 * of that shape (-1 for a flat scatter). Different rows (or columns) of the walk write
 * disjoint parts of dst unless they differ along `dim`, which decides how work is split
 * over threads. Indices are checked as they are used, in the same pass; an out-of-range
 * one leaves dst partly written, so callers pass a fresh dst they drop on error, or set
 * `precheck` to have every index checked before anything is written. */
int ptl_scatter(const ptl_tensor *ts, int64_t dim_size, int64_t dim_stride, int dim, int op, int wrap, int precheck,
                int64_t *bad) {
    mwalk w;
    if (op < SC_ASSIGN || op > SC_MIN) return PTL_ERR_ARG;
    int st = mwalk_init(&w, &ts[1], &ts[0], &ts[2], dim_size, dim_stride);
    if (st != PTL_OK) return st;
    int64_t rows = mwalk_rows(&w), cols = w.sizes[w.ndim - 1], numel = rows * cols;
    if (precheck && check_range(&w, 0, rows, 0, cols, wrap, bad)) return PTL_ERR_INDEX;
    int failed = 0;
#ifdef _OPENMP
    int nthreads = omp_get_max_threads();
    int last = ts[2].ndim - 1;
    if (numel >= PTL_GRAIN && nthreads > 1 && dim >= 0 && last >= 0) {
        int64_t chunks = numel / (PTL_GRAIN / 2);
        if (chunks > nthreads) chunks = nthreads;
        if (dim == last && rows > 1) {
            /* rows differ outside `dim`: they never write the same element */
            if (chunks > rows) chunks = rows;
#pragma omp parallel num_threads((int)chunks) reduction(| : failed)
            {
                int t = omp_get_thread_num(), nt = omp_get_num_threads();
                failed |= scatter_block(&w, rows * t / nt, rows * (t + 1) / nt, 0, cols, op, wrap);
            }
            goto done;
        }
        if (dim == 0 && last == 1 && w.i_st[1] == 0 && w.b_st[0] == 0 && rows > 1 &&
            llabs(w.dim_stride) >= cols * llabs(w.b_st[1])) {
            /* index_add / index_copy of whole rows along dim 0: row r lands in destination
             * row idx[r], and rows with different destinations never overlap. Each thread
             * takes the walk rows whose destination is in its own range, so it streams whole
             * source rows (splitting the columns instead would halve every row's stream) */
            int64_t n = w.dim_size, vlo = wrap ? -n : 0;
            if (chunks > n) chunks = n;
#pragma omp parallel num_threads((int)chunks) reduction(| : failed)
            {
                int t = omp_get_thread_num(), nt = omp_get_num_threads();
                int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
                for (int64_t r = 0; r < rows; r++) {
                    int64_t v = w.idx[r * w.i_st[0]];
                    if ((uint64_t)(v - vlo) >= (uint64_t)(n - vlo)) {
                        failed = 1;     /* every thread sees it; none writes that row */
                        break;
                    }
                    v += v < 0 ? n : 0;
                    if (v >= lo && v < hi) failed |= scatter_block(&w, r, r + 1, 0, cols, op, wrap);
                }
            }
            goto done;
        }
        if (dim != last && cols > 1) {
            /* columns differ outside `dim`: split them */
            if (chunks > cols) chunks = cols;
#pragma omp parallel num_threads((int)chunks) reduction(| : failed)
            {
                int t = omp_get_thread_num(), nt = omp_get_num_threads();
                failed |= scatter_block(&w, 0, rows, cols * t / nt, cols * (t + 1) / nt, op, wrap);
            }
            goto done;
        }
    }
#endif
    (void)numel;
    (void)dim;
    failed = scatter_block(&w, 0, rows, 0, cols, op, wrap);
#ifdef _OPENMP
done:
#endif
    /* the first bad index in walk order, as a check before writing would have reported */
    if (failed && check_range_serial(&w, 0, rows, 0, cols, wrap, bad)) return PTL_ERR_INDEX;
    return failed ? PTL_ERR_ARG : PTL_OK;
}