/* sort.c: sorting, selection, scans and counting on the CPU.
 *
 *   ptl_sort       sort / argsort / msort along one dim (always stable)
 *   ptl_topk       the k smallest or largest along one dim, in order
 *   ptl_select     kthvalue, median, nanmedian, mode along one dim
 *   ptl_scan       cumsum, cumprod, cummax, cummin, logcumsumexp
 *   ptl_unique_runs, ptl_searchsorted, ptl_bincount, ptl_histc
 *
 * Order keys. Every value is mapped to an unsigned integer whose unsigned order is
 * PyTorch's order of the values: integers flip their sign bit; floats flip every bit
 * when negative and only the sign bit otherwise; -0.0 maps to the key of +0.0 (they
 * compare equal, so a stable sort keeps their input order, as PyTorch does), and every
 * NaN maps to the largest key (NaN sorts as the largest value). Descending order inverts
 * the key, which keeps ties in input order. A key is 8, 16, 32 or 64 bits wide.
 *
 * Sorting a row: keys of up to 32 bits are packed with the element's index as
 * (key << 32 | index) and the packed words are sorted by their key bytes only, with an
 * LSD radix sort (one byte a pass; a pass whose byte is the same for all elements is
 * skipped), which is stable. 64-bit keys are radix sorted with a separate index array.
 * Short rows use insertion sort. Rows are spread over OpenMP threads, each with its own
 * buffers. Selection (topk, kthvalue, median) orders (key, index) pairs, so all pairs are
 * distinct: a bounded heap when k is small against the row, quickselect otherwise.
 */
#include "ptl.h"
#include "../generated/reductions.h"

#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- rows: all dims but one ---------------------------------------------------------- */

typedef struct {
    int nd;                       /* number of other dims */
    int64_t sizes[PTL_MAX_DIMS];
    int64_t st[4][PTL_MAX_DIMS];  /* byte strides of each tensor along the other dims */
    char *base[4];
    int64_t dst[4];               /* byte stride along the row dim */
    int64_t rows;
    int64_t n;                    /* row length in the first tensor */
} rowwalk;

static int rows_init(rowwalk *w, const ptl_tensor *const *ts, int nt, int dim) {
    const ptl_tensor *t0 = ts[0];
    if (t0->ndim < 0 || t0->ndim > PTL_MAX_DIMS) return PTL_ERR_NDIM;
    int nd = t0->ndim;
    if (nd == 0) { /* a 0-d tensor is one row of one element */
        w->nd = 0;
        w->rows = 1;
        w->n = 1;
        for (int k = 0; k < nt; k++) {
            w->base[k] = (char *)ts[k]->data;
            w->dst[k] = 0;
        }
        return PTL_OK;
    }
    if (dim < 0 || dim >= nd) return PTL_ERR_ARG;
    w->nd = 0;
    w->rows = 1;
    for (int k = 0; k < nt; k++) {
        if (ts[k]->ndim != nd) return PTL_ERR_NDIM;
        if (ts[k]->dtype < 0 || ts[k]->dtype >= PTL_NUM_DTYPES) return PTL_ERR_DTYPE;
        w->base[k] = (char *)ts[k]->data;
        w->dst[k] = ts[k]->strides[dim] * ptl_itemsize[ts[k]->dtype];
    }
    for (int d = 0; d < nd; d++) {
        if (d == dim) continue;
        for (int k = 1; k < nt; k++)
            if (ts[k]->sizes[d] != t0->sizes[d]) return PTL_ERR_ARG;
        w->sizes[w->nd] = t0->sizes[d];
        for (int k = 0; k < nt; k++) w->st[k][w->nd] = ts[k]->strides[d] * ptl_itemsize[ts[k]->dtype];
        w->rows *= t0->sizes[d];
        w->nd++;
    }
    w->n = t0->sizes[dim];
    return PTL_OK;
}

static void row_ptrs(const rowwalk *w, int nt, int64_t r, char **p) {
    for (int k = 0; k < nt; k++) p[k] = w->base[k];
    for (int d = w->nd - 1; d >= 0; d--) {
        int64_t i = r % w->sizes[d];
        r /= w->sizes[d];
        for (int k = 0; k < nt; k++) p[k] += i * w->st[k][d];
    }
}

static int key_bits(int dt) {
    switch (dt) {
        case PTL_BOOL: case PTL_U8: case PTL_I8: return 8;
        case PTL_I16: case PTL_F16: case PTL_BF16: return 16;
        case PTL_I32: case PTL_F32: return 32;
        default: return 64;
    }
}

/* ---- order keys ------------------------------------------------------------------------ */

static inline uint64_t load_raw(const char *p, int size) {
    switch (size) {
        case 1: return *(const uint8_t *)p;
        case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
        case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
        default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static inline void store_raw(char *p, int size, uint64_t v) {
    switch (size) {
        case 1: *(uint8_t *)p = (uint8_t)v; break;
        case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
        case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
        default: memcpy(p, &v, 8); break;
    }
}

/* Float keys of width W with sign bit S, exponent-all-ones mask E (the infinity bits).
 * *lossy is set when the key does not give back the stored bits (-0.0, or a NaN other
 * than the canonical quiet NaN). */
#define FLOAT_KEY(W, u, S, E, QNAN, lossy)                                                   \
    ({                                                                                      \
        uint64_t u_ = (u), k_;                                                              \
        uint64_t m_ = (W) == 64 ? ~(uint64_t)0 : (((uint64_t)1 << (W)) - 1);                \
        uint64_t mag_ = u_ & ((S) - 1);                                                     \
        if (__builtin_expect(mag_ > (E) || mag_ == 0, 0)) { /* NaN or a zero: rare */       \
            if (mag_ > (E)) {                                                               \
                k_ = m_;                                                                    \
                if (u_ != (QNAN)) *(lossy) = 1;                                             \
            } else {                                                                        \
                k_ = (S);                                                                   \
                if (u_) *(lossy) = 1;                                                       \
            }                                                                               \
        } else {                                                                            \
            /* branch-free: signs are random in typical data; negative values flip every */ \
            /* bit, positive ones only the sign bit */                                      \
            uint64_t neg_ = u_ >> ((W) - 1);                                                \
            k_ = u_ ^ ((S) | ((0 - neg_) & m_));                                            \
        }                                                                                   \
        k_;                                                                                 \
    })

static inline uint64_t to_key(int dt, uint64_t u, int *lossy) {
    switch (dt) {
        case PTL_BOOL: return u != 0;
        case PTL_U8: return u;
        case PTL_I8: return u ^ 0x80u;
        case PTL_I16: return u ^ 0x8000u;
        case PTL_I32: return u ^ 0x80000000u;
        case PTL_I64: return u ^ 0x8000000000000000ull;
        case PTL_F16: return FLOAT_KEY(16, u, 0x8000ull, 0x7c00ull, 0x7e00ull, lossy);
        case PTL_BF16: return FLOAT_KEY(16, u, 0x8000ull, 0x7f80ull, 0x7fc0ull, lossy);
        case PTL_F32: return FLOAT_KEY(32, u, 0x80000000ull, 0x7f800000ull, 0x7fc00000ull, lossy);
        default: return FLOAT_KEY(64, u, 0x8000000000000000ull, 0x7ff0000000000000ull, 0x7ff8000000000000ull, lossy);
    }
}

/* The stored bits of a key (the inverse of to_key up to -0.0 and NaN payloads). */
static inline uint64_t from_key(int dt, uint64_t k) {
    switch (dt) {
        case PTL_BOOL: case PTL_U8: return k;
        case PTL_I8: return k ^ 0x80u;
        case PTL_I16: return k ^ 0x8000u;
        case PTL_I32: return k ^ 0x80000000u;
        case PTL_I64: return k ^ 0x8000000000000000ull;
        case PTL_F16: return k == 0xffffu ? 0x7e00u : ((k & 0x8000u) ? k ^ 0x8000u : (~k & 0xffffu));
        case PTL_BF16: return k == 0xffffu ? 0x7fc0u : ((k & 0x8000u) ? k ^ 0x8000u : (~k & 0xffffu));
        case PTL_F32:
            return k == 0xffffffffu ? 0x7fc00000u : ((k & 0x80000000u) ? k ^ 0x80000000u : (~k & 0xffffffffu));
        default:
            return k == ~(uint64_t)0 ? 0x7ff8000000000000ull
                                     : ((k & 0x8000000000000000ull) ? k ^ 0x8000000000000000ull : ~k);
    }
}

static inline uint64_t key_mask(int bits) { return bits == 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1); }

static inline int key_isnan(int dt, uint64_t k) {
    return (dt >= PTL_F16) && k == key_mask(key_bits(dt));
}

/* ---- radix sort ------------------------------------------------------------------------- */

/* LSD radix sort of a[0..n) by bytes [blo, bhi) (tmp: scratch of n). Stable. Returns the
 * buffer holding the result (a or tmp). If idx is given it moves along with a. */
static uint64_t *radix_sort(uint64_t *a, uint64_t *tmp, uint32_t **idx, uint32_t **itmp, int64_t n,
                            int blo, int bhi) {
    int64_t cnt[8][256];
    memset(cnt, 0, sizeof(cnt[0]) * (size_t)(bhi - blo));
    uint32_t *ia = idx ? *idx : NULL, *ib = idx ? *itmp : NULL;
    for (int64_t i = 0; i < n; i++) {
        uint64_t v = a[i];
        for (int b = blo; b < bhi; b++) cnt[b - blo][(v >> (8 * b)) & 255]++;
    }
    for (int b = blo; b < bhi; b++) {
        int64_t *c = cnt[b - blo];
        int skip = 0;
        for (int j = 0; j < 256; j++)
            if (c[j] == n) { skip = 1; break; }
        if (skip) continue;
        int64_t s = 0;
        for (int j = 0; j < 256; j++) {
            int64_t t = c[j];
            c[j] = s;
            s += t;
        }
        int sh = 8 * b;
        if (ia) {
            for (int64_t i = 0; i < n; i++) {
                int64_t pos = c[(a[i] >> sh) & 255]++;
                tmp[pos] = a[i];
                ib[pos] = ia[i];
            }
            uint32_t *t = ia; ia = ib; ib = t;
        } else {
            for (int64_t i = 0; i < n; i++) tmp[c[(a[i] >> sh) & 255]++] = a[i];
        }
        uint64_t *t = a; a = tmp; tmp = t;
    }
    if (idx) { *idx = ia; *itmp = ib; }
    return a;
}

/* Quicksort for rows too short for radix passes to pay off. The elements are distinct
 * (an index rides in every one), so an unstable sort gives the stable order. */
#define DEF_QSORT(NAME, T, LESS)                                                              \
    static void NAME(T *a, int64_t n) {                                                       \
        while (n > 24) {                                                                      \
            int64_t mid = n / 2, hi = n - 1;                                                  \
            T t_;                                                                             \
            if (LESS(a[mid], a[0])) { t_ = a[mid]; a[mid] = a[0]; a[0] = t_; }               \
            if (LESS(a[hi], a[0])) { t_ = a[hi]; a[hi] = a[0]; a[0] = t_; }                  \
            if (LESS(a[hi], a[mid])) { t_ = a[hi]; a[hi] = a[mid]; a[mid] = t_; }            \
            T piv = a[mid];                                                                   \
            int64_t i = 0, j = hi;                                                            \
            while (i <= j) {                                                                  \
                while (LESS(a[i], piv)) i++;                                                  \
                while (LESS(piv, a[j])) j--;                                                  \
                if (i <= j) { t_ = a[i]; a[i] = a[j]; a[j] = t_; i++; j--; }                  \
            }                                                                                 \
            /* recurse into the smaller part, loop on the larger */                           \
            if (j + 1 < n - i) { NAME(a, j + 1); a += i; n -= i; }                            \
            else { NAME(a + i, n - i); n = j + 1; }                                           \
        }                                                                                     \
        for (int64_t i = 1; i < n; i++) {                                                     \
            T v_ = a[i];                                                                      \
            int64_t j = i - 1;                                                                \
            while (j >= 0 && LESS(v_, a[j])) { a[j + 1] = a[j]; j--; }                        \
            a[j + 1] = v_;                                                                    \
        }                                                                                     \
    }
#define U64_LESS(x, y) ((x) < (y))
DEF_QSORT(qsort_u64, uint64_t, U64_LESS)

/* Rearrange distinct a[0..n) so that the k smallest come first (in any order). */
static void select_u64(uint64_t *a, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1;
    while (hi - lo > 24) {
        int64_t mid = lo + (hi - lo) / 2;
        uint64_t t_;
        if (a[mid] < a[lo]) { t_ = a[mid]; a[mid] = a[lo]; a[lo] = t_; }
        if (a[hi] < a[lo]) { t_ = a[hi]; a[hi] = a[lo]; a[lo] = t_; }
        if (a[hi] < a[mid]) { t_ = a[hi]; a[hi] = a[mid]; a[mid] = t_; }
        uint64_t piv = a[mid];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < piv) i++;
            while (piv < a[j]) j--;
            if (i <= j) { t_ = a[i]; a[i] = a[j]; a[j] = t_; i++; j--; }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return;
    }
    qsort_u64(a + lo, hi - lo + 1);
}

/* per-thread scratch for one row */
typedef struct {
    uint64_t *a, *b;
    uint32_t *ia, *ib;
    int64_t cap;
} sbuf;

static int sbuf_reserve(sbuf *s, int64_t n, int wide) {
    if (n <= s->cap) return 0;
    free(s->a); free(s->b); free(s->ia); free(s->ib);
    s->a = malloc((size_t)n * 8);
    s->b = malloc((size_t)n * 8);
    s->ia = wide ? malloc((size_t)n * 4) : NULL;
    s->ib = wide ? malloc((size_t)n * 4) : NULL;
    s->cap = n;
    if (!s->a || !s->b || (wide && (!s->ia || !s->ib))) { s->cap = 0; return -1; }
    return 0;
}

static void sbuf_free(sbuf *s) { free(s->a); free(s->b); free(s->ia); free(s->ib); }

#define SMALL_SORT 48

/* Sort one row. Narrow keys (<= 32 bits): the result is packed (key << 32 | index) words
 * in *keys and *idx is NULL; wide keys: *keys holds the keys and *idx the indices.
 * Keys are already inverted for descending order. */
static int sort_row(int dt, const char *p, int64_t st, int64_t n, int desc, sbuf *B, uint64_t **keys,
                    uint32_t **idx, int *lossy) {
    int bits = key_bits(dt), size = ptl_itemsize[dt];
    uint64_t inv = desc ? key_mask(bits) : 0;
    int wide = bits == 64;
    if (sbuf_reserve(B, n, wide)) return PTL_ERR_ALLOC;
    uint64_t *a = B->a;
    if (!wide) {
        for (int64_t i = 0; i < n; i++) a[i] = ((to_key(dt, load_raw(p + i * st, size), lossy) ^ inv) << 32) | (uint64_t)i;
        if (n <= (bits == 32 ? 384 : 96)) {
            qsort_u64(a, n);
        } else {
            a = radix_sort(a, B->b, NULL, NULL, n, 4, 4 + bits / 8);
            if (!a) return PTL_ERR_ALLOC;
        }
        *keys = a;
        *idx = NULL;
        return PTL_OK;
    }
    uint32_t *ia = B->ia;
    for (int64_t i = 0; i < n; i++) {
        a[i] = to_key(dt, load_raw(p + i * st, size), lossy) ^ inv;
        ia[i] = (uint32_t)i;
    }
    if (n <= SMALL_SORT) {
        for (int64_t i = 1; i < n; i++) {
            uint64_t v = a[i];
            uint32_t vi = ia[i];
            int64_t j = i - 1;
            while (j >= 0 && a[j] > v) { a[j + 1] = a[j]; ia[j + 1] = ia[j]; j--; }
            a[j + 1] = v;
            ia[j + 1] = vi;
        }
    } else {
        uint32_t *ib = B->ib;
        a = radix_sort(a, B->b, &ia, &ib, n, 0, 8);
        if (!a) return PTL_ERR_ALLOC;
    }
    *keys = a;
    *idx = ia;
    return PTL_OK;
}

/* Threads for `rows` rows of `n` elements each. */
static int n_threads(int64_t rows, int64_t n) {
#ifdef _OPENMP
    int nt = omp_get_max_threads();
    if (rows < 2 || rows * (n > 0 ? n : 1) < PTL_GRAIN / 4) return 1;
    return rows < nt ? (int)rows : nt;
#else
    (void)rows; (void)n;
    return 1;
#endif
}

/* Write the first m sorted entries: values (vp may be NULL) and int64 indices. */
static void write_sorted(int dt, const uint64_t *keys, const uint32_t *idx, int64_t m, int desc, int lossy,
                         const char *src, int64_t sst, char *vp, int64_t vst, char *ip, int64_t ist) {
    int bits = key_bits(dt), size = ptl_itemsize[dt];
    uint64_t inv = desc ? key_mask(bits) : 0;
    for (int64_t j = 0; j < m; j++) {
        uint64_t k, i;
        if (idx) {
            k = keys[j];
            i = idx[j];
        } else {
            k = keys[j] >> 32;
            i = keys[j] & 0xffffffffu;
        }
        if (vp) {
            if (lossy)
                memcpy(vp + j * vst, src + (int64_t)i * sst, (size_t)size);
            else
                store_raw(vp + j * vst, size, from_key(dt, k ^ inv));
        }
        if (ip) *(int64_t *)(ip + j * ist) = (int64_t)i;
    }
}

int ptl_sort(const ptl_tensor *in, const ptl_tensor *values, const ptl_tensor *indices, int dim, int descending) {
    const ptl_tensor *ts[3] = {in, indices, values};
    int nt = values ? 3 : 2;
    rowwalk w;
    int rc = rows_init(&w, ts, nt, in->ndim ? dim : 0);
    if (rc) return rc;
    if (indices->dtype != PTL_I64 || (values && values->dtype != in->dtype)) return PTL_ERR_DTYPE;
    int64_t n = w.n;
    if (n > 0xffffffffll) return PTL_ERR_ARG;
    if (n == 0 || w.rows == 0) return PTL_OK;
    int dt = in->dtype;
    int status = PTL_OK;
    int nth = n_threads(w.rows, n);
#pragma omp parallel num_threads(nth) if (nth > 1)
    {
        sbuf B = {0};
#pragma omp for schedule(dynamic, 1)
        for (int64_t r = 0; r < w.rows; r++) {
            char *p[3];
            row_ptrs(&w, nt, r, p);
            uint64_t *keys;
            uint32_t *idx;
            int lossy = 0;
            int e = sort_row(dt, p[0], w.dst[0], n, descending, &B, &keys, &idx, &lossy);
            if (e) {
#pragma omp atomic write
                status = e;
                continue;
            }
            write_sorted(dt, keys, idx, n, descending, lossy, p[0], w.dst[0], values ? p[2] : NULL,
                         values ? w.dst[2] : 0, p[1], w.dst[1]);
        }
        sbuf_free(&B);
    }
    return status;
}

/* ---- selection ---------------------------------------------------------------------------- */

typedef struct {
    uint64_t k;
    int64_t i;
} kpair;

static inline int kp_less(kpair a, kpair b) { return a.k < b.k || (a.k == b.k && a.i < b.i); }

static void kp_insertion(kpair *a, int64_t lo, int64_t hi) {
    for (int64_t i = lo + 1; i <= hi; i++) {
        kpair v = a[i];
        int64_t j = i - 1;
        while (j >= lo && kp_less(v, a[j])) { a[j + 1] = a[j]; j--; }
        a[j + 1] = v;
    }
}

#define KP_SWAP(x, y) do { kpair t_ = (x); (x) = (y); (y) = t_; } while (0)

/* Rearrange a[0..n) so that a[k] is the k-th smallest, with smaller pairs before it. */
static void kp_select(kpair *a, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1;
    while (hi > lo) {
        if (hi - lo < 16) {
            kp_insertion(a, lo, hi);
            return;
        }
        int64_t mid = lo + (hi - lo) / 2;
        if (kp_less(a[mid], a[lo])) KP_SWAP(a[mid], a[lo]);
        if (kp_less(a[hi], a[lo])) KP_SWAP(a[hi], a[lo]);
        if (kp_less(a[hi], a[mid])) KP_SWAP(a[hi], a[mid]);
        kpair piv = a[mid];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (kp_less(a[i], piv)) i++;
            while (kp_less(piv, a[j])) j--;
            if (i <= j) {
                KP_SWAP(a[i], a[j]);
                i++;
                j--;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return;
    }
}

/* max-heap (by kp_less) of size m */
static void heap_down(kpair *h, int64_t m, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, big = i;
        if (l < m && kp_less(h[big], h[l])) big = l;
        if (l + 1 < m && kp_less(h[big], h[l + 1])) big = l + 1;
        if (big == i) return;
        KP_SWAP(h[i], h[big]);
        i = big;
    }
}

static void kp_sort(kpair *a, int64_t m) {
    /* heapsort: ascending */
    for (int64_t i = m / 2 - 1; i >= 0; i--) heap_down(a, m, i);
    for (int64_t e = m - 1; e > 0; e--) {
        KP_SWAP(a[0], a[e]);
        heap_down(a, e, 0);
    }
}

int ptl_topk(const ptl_tensor *in, const ptl_tensor *values, const ptl_tensor *indices, int dim, int64_t k,
             int largest) {
    const ptl_tensor *ts[3] = {in, indices, values};
    /* the outputs have k along dim: walk the other dims with the input's sizes */
    ptl_tensor iv = *indices, vv = *values;
    int d0 = in->ndim ? dim : 0;
    if (in->ndim) {
        if (dim < 0 || dim >= in->ndim || indices->ndim != in->ndim || values->ndim != in->ndim) return PTL_ERR_ARG;
        if (indices->sizes[dim] != k || values->sizes[dim] != k) return PTL_ERR_ARG;
        iv.sizes[dim] = in->sizes[dim];
        vv.sizes[dim] = in->sizes[dim];
    }
    ts[1] = &iv;
    ts[2] = &vv;
    rowwalk w;
    int rc = rows_init(&w, ts, 3, d0);
    if (rc) return rc;
    if (indices->dtype != PTL_I64 || values->dtype != in->dtype) return PTL_ERR_DTYPE;
    int64_t n = w.n;
    if (k < 0 || k > n || n > 0xffffffffll) return PTL_ERR_ARG;
    if (k == 0 || w.rows == 0) return PTL_OK;
    int dt = in->dtype, size = ptl_itemsize[dt], bits = key_bits(dt);
    uint64_t inv = largest ? key_mask(bits) : 0;
    int heap = k <= 1024 && k * 16 <= n;
    int status = PTL_OK;
    int nth = n_threads(w.rows, n);
#pragma omp parallel num_threads(nth) if (nth > 1)
    {
        sbuf B = {0};
        kpair *h = heap ? malloc((size_t)k * sizeof(kpair)) : NULL;
        if (heap && !h) {
#pragma omp atomic write
            status = PTL_ERR_ALLOC;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t r = 0; r < w.rows; r++) {
            if (heap && !h) continue;
            char *p[3];
            row_ptrs(&w, 3, r, p);
            const char *src = p[0];
            int64_t sst = w.dst[0];
            int lossy = 0;
            if (heap) {
                for (int64_t i = 0; i < k; i++) {
                    h[i].k = to_key(dt, load_raw(src + i * sst, size), &lossy) ^ inv;
                    h[i].i = i;
                }
                for (int64_t i = k / 2 - 1; i >= 0; i--) heap_down(h, k, i);
                uint64_t top = h[0].k;
                for (int64_t i = k; i < n; i++) {
                    uint64_t key = to_key(dt, load_raw(src + i * sst, size), &lossy) ^ inv;
                    /* a later element wins only with a strictly smaller key (its index is larger) */
                    if (key < top) {
                        h[0].k = key;
                        h[0].i = i;
                        heap_down(h, k, 0);
                        top = h[0].k;
                    }
                }
                kp_sort(h, k);
                for (int64_t j = 0; j < k; j++) {
                    memcpy(p[2] + j * w.dst[2], src + h[j].i * sst, (size_t)size);
                    *(int64_t *)(p[1] + j * w.dst[1]) = h[j].i;
                }
            } else if (bits <= 32 && k * 4 <= n) {
                /* select the k smallest packed keys, then order only those */
                if (sbuf_reserve(&B, n, 0)) {
#pragma omp atomic write
                    status = PTL_ERR_ALLOC;
                    continue;
                }
                uint64_t *a = B.a;
                for (int64_t i = 0; i < n; i++)
                    a[i] = ((to_key(dt, load_raw(src + i * sst, size), &lossy) ^ inv) << 32) | (uint64_t)i;
                select_u64(a, n, k - 1);
                qsort_u64(a, k);
                write_sorted(dt, a, NULL, k, largest, lossy, src, sst, p[2], w.dst[2], p[1], w.dst[1]);
            } else {
                uint64_t *keys;
                uint32_t *idx;
                int e = sort_row(dt, src, sst, n, largest, &B, &keys, &idx, &lossy);
                if (e) {
#pragma omp atomic write
                    status = e;
                    continue;
                }
                write_sorted(dt, keys, idx, k, largest, lossy, src, sst, p[2], w.dst[2], p[1], w.dst[1]);
            }
        }
        free(h);
        sbuf_free(&B);
    }
    return status;
}

/* Selection ops: values and indices have the input's shape with size 1 along dim. */
enum { SEL_KTH = 0, SEL_MEDIAN = 1, SEL_NANMEDIAN = 2, SEL_MODE = 3 };

int ptl_select(int op, const ptl_tensor *in, const ptl_tensor *values, const ptl_tensor *indices, int dim,
               int64_t k) {
    ptl_tensor iv = *indices, vv = *values;
    int d0 = in->ndim ? dim : 0;
    if (in->ndim) {
        if (dim < 0 || dim >= in->ndim || indices->ndim != in->ndim || values->ndim != in->ndim) return PTL_ERR_ARG;
        iv.sizes[dim] = in->sizes[dim];
        vv.sizes[dim] = in->sizes[dim];
        iv.strides[dim] = vv.strides[dim] = 0;
    }
    const ptl_tensor *ts[3] = {in, &iv, &vv};
    rowwalk w;
    int rc = rows_init(&w, ts, 3, d0);
    if (rc) return rc;
    if (indices->dtype != PTL_I64 || values->dtype != in->dtype) return PTL_ERR_DTYPE;
    if (op < 0 || op > SEL_MODE) return PTL_ERR_ARG;
    int64_t n = w.n;
    if (n == 0 || n > 0xffffffffll) return n == 0 && w.rows == 0 ? PTL_OK : PTL_ERR_ARG;
    if (op == SEL_KTH && (k < 0 || k >= n)) return PTL_ERR_ARG;
    int dt = in->dtype, size = ptl_itemsize[dt];
    int status = PTL_OK;
    int nth = n_threads(w.rows, n);
#pragma omp parallel num_threads(nth) if (nth > 1)
    {
        sbuf B = {0};
        kpair *a = op == SEL_MODE ? NULL : malloc((size_t)n * sizeof(kpair));
        if (op != SEL_MODE && !a) {
#pragma omp atomic write
            status = PTL_ERR_ALLOC;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t r = 0; r < w.rows; r++) {
            char *p[3];
            row_ptrs(&w, 3, r, p);
            const char *src = p[0];
            int64_t sst = w.dst[0];
            int lossy = 0;
            int64_t pick = -1;
            if (op == SEL_MODE) {
                uint64_t *keys;
                uint32_t *idx;
                int e = sort_row(dt, src, sst, n, 0, &B, &keys, &idx, &lossy);
                if (e) {
#pragma omp atomic write
                    status = e;
                    continue;
                }
                /* the longest run of equal keys (the smallest value among equally long
                 * runs: the first one met), and the last index in that run, as PyTorch */
                int64_t best = 0, run = 0;
                uint64_t prev = 0;
                for (int64_t j = 0; j < n; j++) {
                    uint64_t kk = idx ? keys[j] : keys[j] >> 32;
                    int64_t ii = idx ? (int64_t)idx[j] : (int64_t)(keys[j] & 0xffffffffu);
                    /* NaN never equals NaN: each one is a run of its own */
                    run = (j > 0 && kk == prev && !key_isnan(dt, kk)) ? run + 1 : 1;
                    prev = kk;
                    if (run > best) { /* a run extending past best: its later indices win */
                        best = run;
                        pick = ii;
                    }
                }
            } else {
                if (!a) continue;
                int64_t m = n, firstnan = -1;
                for (int64_t i = 0; i < n; i++) {
                    a[i].k = to_key(dt, load_raw(src + i * sst, size), &lossy);
                    a[i].i = i;
                    if (key_isnan(dt, a[i].k)) {
                        m--;
                        if (firstnan < 0) firstnan = i;
                    }
                }
                int64_t kk;
                if (op == SEL_KTH) kk = k;
                else if (op == SEL_MEDIAN) kk = (n - 1) / 2;
                else kk = m > 0 ? (m - 1) / 2 : -1;
                if (op == SEL_MEDIAN && firstnan >= 0) pick = firstnan;
                else if (kk < 0) pick = firstnan; /* nanmedian of all-NaN: NaN */
                else {
                    kp_select(a, n, kk);
                    pick = a[kk].i;
                }
            }
            memcpy(p[2], src + pick * sst, (size_t)size);
            *(int64_t *)p[1] = pick;
        }
        free(a);
        sbuf_free(&B);
    }
    return status;
}

/* ---- element access by dtype code --------------------------------------------------------- */

static inline double ld_d(const char *p, int dt) {
    switch (dt) {
        case PTL_BOOL: return *(const uint8_t *)p != 0;
        case PTL_U8: return *(const uint8_t *)p;
        case PTL_I8: return *(const int8_t *)p;
        case PTL_I16: { int16_t v; memcpy(&v, p, 2); return v; }
        case PTL_I32: { int32_t v; memcpy(&v, p, 4); return v; }
        case PTL_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
        case PTL_F16: { uint16_t v; memcpy(&v, p, 2); return ptl_h2f(v); }
        case PTL_BF16: { uint16_t v; memcpy(&v, p, 2); return ptl_bf2f(v); }
        case PTL_F32: { float v; memcpy(&v, p, 4); return v; }
        default: { double v; memcpy(&v, p, 8); return v; }
    }
}

static inline int64_t ld_i(const char *p, int dt) {
    switch (dt) {
        case PTL_BOOL: return *(const uint8_t *)p != 0;
        case PTL_U8: return *(const uint8_t *)p;
        case PTL_I8: return *(const int8_t *)p;
        case PTL_I16: { int16_t v; memcpy(&v, p, 2); return v; }
        case PTL_I32: { int32_t v; memcpy(&v, p, 4); return v; }
        default: { int64_t v; memcpy(&v, p, 8); return v; }
    }
}

/* ---- scans --------------------------------------------------------------------------------
 * What each scan computes is declared in ops.yaml (`- scan:` entries: cumsum, cumprod,
 * cummax, cummin, logcumsumexp); codegen writes the per-dtype row and lane loops
 * (generated/reductions.c). This part splits the work. */

/* in, out (and idx for scans that carry an index) are contiguous, of the same shape; out
 * has in's dtype. The scan runs along dim: the shape is seen as (outer, n, inner). */
int ptl_scan(int op, const ptl_tensor *in, const ptl_tensor *out, const ptl_tensor *idx, int dim) {
    if (op < 0 || op >= SCAN_NUM_OPS) return PTL_ERR_ARG;
    if (in->ndim < 0 || in->ndim > PTL_MAX_DIMS || out->ndim != in->ndim) return PTL_ERR_NDIM;
    if (in->dtype < 0 || in->dtype >= PTL_NUM_DTYPES || out->dtype != in->dtype) return PTL_ERR_DTYPE;
    const ptl_scan_instance *f = ptl_scan_lookup(op, in->dtype);
    if (!f) return PTL_ERR_DTYPE;
    if (f->index && (!idx || idx->dtype != PTL_I64 || idx->ndim != in->ndim)) return PTL_ERR_ARG;
    int nd = in->ndim;
    if (nd && (dim < 0 || dim >= nd)) return PTL_ERR_ARG;
    int64_t outer = 1, n = 1, inner = 1, expect = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (out->sizes[d] != in->sizes[d] || in->strides[d] != expect || out->strides[d] != expect) {
            if (in->sizes[d] != 1) return PTL_ERR_ARG;
        }
        if (f->index && idx->sizes[d] != in->sizes[d]) return PTL_ERR_ARG;
        expect *= in->sizes[d];
        if (d < dim) outer *= in->sizes[d];
        else if (d == dim) n = in->sizes[d];
        else inner *= in->sizes[d];
    }
    if (outer * n * inner == 0) return PTL_OK;
    const int64_t size = ptl_itemsize[in->dtype];
    const char *ip = (const char *)in->data;
    char *op_ = (char *)out->data;
    int64_t *xp = f->index ? (int64_t *)idx->data : NULL;
    int64_t lanes = outer * inner;
    int nth = 1;
#ifdef _OPENMP
    if (lanes * n >= PTL_GRAIN && lanes > 1) nth = omp_get_max_threads();
#endif
    if (inner == 1) {
        /* one row per lane: a sequential scan each */
#pragma omp parallel for num_threads(nth) if (nth > 1) schedule(static)
        for (int64_t o = 0; o < outer; o++)
            f->row(ip + o * n * size, op_ + o * n * size, xp ? xp + o * n : NULL, n);
        return PTL_OK;
    }
    /* inner > 1: step along n for a block of lanes at a time (reads rows front to back) */
    const int64_t BL = PTL_SCAN_LANES;
    int64_t nblk = (inner + BL - 1) / BL;
#pragma omp parallel for num_threads(nth) if (nth > 1) schedule(static)
    for (int64_t t = 0; t < outer * nblk; t++) {
        int64_t o = t / nblk, l0 = (t % nblk) * BL;
        int64_t L = inner - l0 < BL ? inner - l0 : BL;
        int64_t off = o * n * inner + l0;
        f->lanes(ip + off * size, op_ + off * size, xp ? xp + off : NULL, n, inner, L);
    }
    return PTL_OK;
}

/* ---- unique runs, searchsorted, bincount, histc -------------------------------------------- */

static inline int same_value(const char *a, const char *b, int dt) {
    if (dt >= PTL_F16) return ld_d(a, dt) == ld_d(b, dt); /* NaN != NaN: each NaN is its own group */
    return ld_i(a, dt) == ld_i(b, dt);
}

/* Groups of equal neighbours in a contiguous 1-d `vals` of n elements. Writes the first
 * value of each group to uvals (contiguous, capacity n), counts (int64, may be NULL) and
 * inverse (int64, may be NULL): inverse[perm ? perm[i] : i] = group of element i. */
int ptl_unique_runs(const ptl_tensor *vals, const int64_t *perm, const ptl_tensor *uvals, int64_t *inverse,
                    int64_t *counts, int64_t *ngroups) {
    int dt = vals->dtype;
    if (dt < 0 || dt >= PTL_NUM_DTYPES || uvals->dtype != dt) return PTL_ERR_DTYPE;
    if (vals->ndim != 1) return PTL_ERR_NDIM;
    int64_t n = vals->sizes[0], st = vals->strides[0], size = ptl_itemsize[dt];
    const char *v = (const char *)vals->data;
    char *u = (char *)uvals->data;
    int64_t g = -1;
    for (int64_t i = 0; i < n; i++) {
        const char *p = v + i * st * size;
        if (i == 0 || !same_value(p, v + (i - 1) * st * size, dt)) {
            g++;
            memcpy(u + g * size, p, (size_t)size);
            if (counts) counts[g] = 0;
        }
        if (counts) counts[g]++;
        if (inverse) {
            int64_t at = perm ? perm[i] : i;
            if (at < 0 || at >= n) return PTL_ERR_INDEX;
            inverse[at] = g;
        }
    }
    *ngroups = g + 1;
    return PTL_OK;
}

/* seq: (rows, m) contiguous or one shared row (seq_rows == 1); vals: (rows, k) contiguous;
 * sorter: int64 like seq or NULL; out: int64 or int32 (rows, k). Both in one dtype. */
#define SS_BODY(T, LOAD)                                                                       \
    for (int64_t r = 0; r < rows; r++) {                                                       \
        const char *s = (const char *)seq->data + (seq_rows == 1 ? 0 : r * m * size);          \
        const int64_t *so = sorter ? sorter + (seq_rows == 1 ? 0 : r * m) : NULL;              \
        for (int64_t j = 0; j < k; j++) {                                                      \
            T x = LOAD((const char *)vals->data + (r * k + j) * size);                         \
            int64_t lo = 0, hi = m;                                                            \
            while (lo < hi) {                                                                  \
                int64_t mid = lo + (hi - lo) / 2;                                              \
                int64_t pos = so ? so[mid] : mid;                                              \
                if (pos < 0 || pos >= m) return PTL_ERR_INDEX;                                 \
                T y = LOAD(s + pos * size);                                                    \
                int go_right = right ? !(y > x) : !(y >= x);                                     \
                if (go_right) lo = mid + 1; else hi = mid;                                     \
            }                                                                                  \
            if (out->dtype == PTL_I32) ((int32_t *)out->data)[r * k + j] = (int32_t)lo;        \
            else ((int64_t *)out->data)[r * k + j] = lo;                                       \
        }                                                                                      \
    }

#define LDD(p) ld_d((p), dt)
#define LDI(p) ld_i((p), dt)

int ptl_searchsorted(const ptl_tensor *seq, const ptl_tensor *vals, const int64_t *sorter, const ptl_tensor *out,
                     int64_t rows, int64_t seq_rows, int64_t m, int64_t k, int right) {
    int dt = seq->dtype;
    if (dt < 0 || dt >= PTL_NUM_DTYPES || vals->dtype != dt) return PTL_ERR_DTYPE;
    if (out->dtype != PTL_I64 && out->dtype != PTL_I32) return PTL_ERR_DTYPE;
    if (rows < 0 || m < 0 || k < 0 || (seq_rows != 1 && seq_rows != rows)) return PTL_ERR_ARG;
    int64_t size = ptl_itemsize[dt];
    /* the comparisons are PyTorch's (!(y >= x) / !(y > x)), so NaN behaves the same:
     * a NaN value, or a NaN in the sequence, sends the search right */
    if (dt >= PTL_F16) {
        SS_BODY(double, LDD)
    } else {
        SS_BODY(int64_t, LDI)
    }
    return PTL_OK;
}

/* x: contiguous int64 of n non-negative values (checked by the caller); weights: float64
 * contiguous or NULL; out: nbins of int64 (no weights) or float64. */
int ptl_bincount(const int64_t *x, int64_t n, const double *weights, void *out, int64_t nbins) {
    if (nbins < 0) return PTL_ERR_ARG;
    memset(out, 0, (size_t)nbins * 8); /* int64 and double counts alike */
    for (int64_t i = 0; i < n; i++) {
        int64_t b = x[i];
        if (b < 0 || b >= nbins) return PTL_ERR_INDEX;
        if (weights) ((double *)out)[b] += weights[i];
        else ((int64_t *)out)[b] += 1;
    }
    return PTL_OK;
}

/* x: contiguous float64 (n); out: float64 counts (bins). Values outside [lo, hi] (and
 * NaN) are not counted; hi falls in the last bin. */
int ptl_histc(const double *x, int64_t n, double *out, int64_t bins, double lo, double hi) {
    if (bins <= 0 || !(hi > lo)) return PTL_ERR_ARG;
    memset(out, 0, (size_t)bins * sizeof(double));
    double scale = (double)bins / (hi - lo);
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        if (!(v >= lo && v <= hi)) continue;
        int64_t b = (int64_t)((v - lo) * scale);
        if (b >= bins) b = bins - 1;
        if (b < 0) b = 0;
        out[b] += 1;
    }
    return PTL_OK;
}
