/* index.c: advanced indexing on the CPU.
 *
 * gather   out[i] = src[i + sum_k idx_k[i] * istride_k]       (x[idx], index_select)
 * scatter  dst[i + sum_k idx_k[i] * istride_k] (+)= src[i]     (x[idx] = v, index_put_)
 * nonzero, masked_fill.
 *
 * The Python side describes the operation the way PyTorch's index kernels do: every
 * descriptor is viewed at the shape of the indexing result. The tensor being indexed is
 * "restrided" (stride 0 along the broadcast index dims), each int64 index tensor is
 * expanded to the result shape, and for each indexed dim the kernel gets its size (for
 * the bounds check) and stride. Every index is checked before it is used: a bad index
 * makes the kernel return PTL_ERR_INDEX (with the value and which index it was), and
 * scatter checks all of them before it writes anything, so a failed x[idx] = v leaves x
 * unchanged. Nothing is ever read or written out of bounds.
 */
#include "ptl.h"

#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* A walk over the rows (last dim) of the result shape. Byte strides; index strides in
 * elements of int64. */
typedef struct {
    int ndim;            /* >= 1: a 0-d result is walked as one row of one element */
    int nidx;
    int64_t sizes[PTL_MAX_DIMS];
    int64_t a_st[PTL_MAX_DIMS]; /* operand a (out for gather, src for scatter), bytes */
    int64_t b_st[PTL_MAX_DIMS]; /* operand b (restrided tensor being indexed), bytes */
    int64_t i_st[PTL_MAX_DIMS][PTL_MAX_DIMS]; /* [index k][dim], elements */
    char *a, *b;
    const int64_t *idx[PTL_MAX_DIMS];
    int64_t isize[PTL_MAX_DIMS];
    int64_t istride[PTL_MAX_DIMS]; /* bytes */
    int64_t rows, row_len;
    int itemsize;
    int row_const; /* no index varies along the last dim: one offset per row */
} walk;

static int walk_init(walk *w, const ptl_tensor *a, const ptl_tensor *b, int nidx, const ptl_tensor *idx,
                     const int64_t *isize, const int64_t *istride) {
    if (a->ndim < 0 || a->ndim > PTL_MAX_DIMS || b->ndim != a->ndim) return PTL_ERR_NDIM;
    if (nidx < 1 || nidx > PTL_MAX_DIMS) return PTL_ERR_ARG;
    if (a->dtype < 0 || a->dtype >= PTL_NUM_DTYPES || a->dtype != b->dtype) return PTL_ERR_DTYPE;
    int nd = a->ndim;
    w->itemsize = ptl_itemsize[a->dtype];
    w->nidx = nidx;
    w->a = (char *)a->data;
    w->b = (char *)b->data;
    for (int k = 0; k < nidx; k++) {
        if (idx[k].dtype != PTL_I64 || idx[k].ndim != nd) return PTL_ERR_ARG;
        if (isize[k] < 0) return PTL_ERR_ARG;
        w->idx[k] = (const int64_t *)idx[k].data;
        w->isize[k] = isize[k];
        w->istride[k] = istride[k] * w->itemsize;
    }
    if (nd == 0) {
        w->ndim = 1;
        w->sizes[0] = 1;
        w->a_st[0] = w->b_st[0] = 0;
        for (int k = 0; k < nidx; k++) w->i_st[k][0] = 0;
    } else {
        w->ndim = nd;
        for (int d = 0; d < nd; d++) {
            if (a->sizes[d] < 0 || b->sizes[d] != a->sizes[d]) return PTL_ERR_ARG;
            w->sizes[d] = a->sizes[d];
            w->a_st[d] = a->strides[d] * w->itemsize;
            w->b_st[d] = b->strides[d] * w->itemsize;
            for (int k = 0; k < nidx; k++) {
                if (idx[k].sizes[d] != a->sizes[d]) return PTL_ERR_ARG;
                w->i_st[k][d] = idx[k].strides[d];
            }
        }
    }
    w->row_len = w->sizes[w->ndim - 1];
    w->row_const = 1;
    for (int k = 0; k < nidx; k++)
        if (w->i_st[k][w->ndim - 1] != 0 && w->row_len > 1) w->row_const = 0;
    w->rows = 1;
    for (int d = 0; d < w->ndim - 1; d++) w->rows *= w->sizes[d];
    if (w->row_len == 0) w->rows = 0;
    return PTL_OK;
}

/* Pointers to the start of row r (row-major over all dims but the last). */
static void walk_row(const walk *w, int64_t r, char **pa, char **pb, const int64_t **pi) {
    char *a = w->a, *b = w->b;
    const int64_t *ip[PTL_MAX_DIMS];
    for (int k = 0; k < w->nidx; k++) ip[k] = w->idx[k];
    for (int d = w->ndim - 2; d >= 0; d--) {
        int64_t i = r % w->sizes[d];
        r /= w->sizes[d];
        a += i * w->a_st[d];
        b += i * w->b_st[d];
        for (int k = 0; k < w->nidx; k++) ip[k] += i * w->i_st[k][d];
    }
    *pa = a;
    *pb = b;
    for (int k = 0; k < w->nidx; k++) pi[k] = ip[k];
}

/* The byte offset into the indexed tensor for element j of a row, in *off. Returns -1,
 * or k when index k is out of bounds (its value in *bad). */
static inline int index_offset(const walk *w, const int64_t **pi, int64_t j, int64_t *off, int64_t *bad) {
    int64_t o = 0;
    int last = w->ndim - 1;
    for (int k = 0; k < w->nidx; k++) {
        int64_t v = pi[k][j * w->i_st[k][last]];
        int64_t n = w->isize[k];
        if (v < -n || v >= n) {
            *bad = v;
            return k;
        }
        if (v < 0) v += n;
        o += v * w->istride[k];
    }
    *off = o;
    return -1;
}

/* n elements from s (byte stride ss) to d (byte stride ds); one memcpy when both are
 * contiguous. Fixed-size memcpy keeps unaligned (borrowed) memory safe. */
#define MOVE_LOOP(W) for (int64_t j = 0; j < n; j++) memcpy(d + j * ds, s + j * ss, W)
static void move_row(char *d, int64_t ds, const char *s, int64_t ss, int64_t n, int item) {
    if (ds == item && ss == item) {
        memcpy(d, s, (size_t)(n * item));
        return;
    }
    switch (item) {
        case 1: MOVE_LOOP(1); break;
        case 2: MOVE_LOOP(2); break;
        case 4: MOVE_LOOP(4); break;
        default: MOVE_LOOP(8); break;
    }
}

/* Record the first failure seen (by any thread). */
static void set_failure(int *failed, int64_t *bad, int64_t value, int k) {
#ifdef _OPENMP
#pragma omp critical(ptl_index_failure)
#endif
    {
        if (!*failed) {
            *failed = 1;
            bad[0] = value;
            bad[1] = k;
        }
    }
}

#define GATHER_ELEMENTS(W)                                                                     \
    for (int64_t j = 0; j < w->row_len; j++) {                                                 \
        int64_t v, off;                                                                        \
        int k = index_offset(w, pi, j, &off, &v);                                              \
        if (k >= 0) {                                                                          \
            set_failure(failed, bad, v, k);                                                    \
            return;                                                                            \
        }                                                                                      \
        memcpy(o + j * w->a_st[last], s + j * w->b_st[last] + off, W);                         \
    }

static void gather_rows(const walk *w, int64_t r0, int64_t r1, int *failed, int64_t *bad) {
    const int64_t *pi[PTL_MAX_DIMS];
    int last = w->ndim - 1;
    for (int64_t r = r0; r < r1; r++) {
        char *o, *s;
        walk_row(w, r, &o, &s, pi);
        if (w->row_const) {
            int64_t v, off;
            int k = index_offset(w, pi, 0, &off, &v);
            if (k >= 0) {
                set_failure(failed, bad, v, k);
                return;
            }
            move_row(o, w->a_st[last], s + off, w->b_st[last], w->row_len, w->itemsize);
            continue;
        }
        switch (w->itemsize) {
            case 1: GATHER_ELEMENTS(1) break;
            case 2: GATHER_ELEMENTS(2) break;
            case 4: GATHER_ELEMENTS(4) break;
            default: GATHER_ELEMENTS(8) break;
        }
    }
}

int ptl_index_gather(const ptl_tensor *out, const ptl_tensor *src, int nidx, const ptl_tensor *idx,
                     const int64_t *isize, const int64_t *istride, int64_t *bad) {
    walk w;
    int st = walk_init(&w, out, src, nidx, idx, isize, istride);
    if (st != PTL_OK) return st;
    int failed = 0;
    int64_t numel = w.rows * w.row_len;
#ifdef _OPENMP
    int nthreads = omp_get_max_threads();
    if (numel >= PTL_GRAIN && nthreads > 1 && w.rows > 1) {
        int64_t chunks = numel / (PTL_GRAIN / 2);
        if (chunks > nthreads) chunks = nthreads;
        if (chunks > w.rows) chunks = w.rows;
#pragma omp parallel num_threads((int)chunks)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            gather_rows(&w, w.rows * t / nt, w.rows * (t + 1) / nt, &failed, bad);
        }
        return failed ? PTL_ERR_INDEX : PTL_OK;
    }
#endif
    gather_rows(&w, 0, w.rows, &failed, bad);
    return failed ? PTL_ERR_INDEX : PTL_OK;
}

/* ---- scatter ------------------------------------------------------------------------ */

#define ADD_INT(T) { T x; T y; memcpy(&x, d, sizeof(T)); memcpy(&y, s, sizeof(T)); \
                     x = (T)((uint64_t)x + (uint64_t)y); memcpy(d, &x, sizeof(T)); } break;

static inline void add_item(char *d, const char *s, int dtype) {
    switch (dtype) {
        case PTL_BOOL: *(uint8_t *)d = (uint8_t)((*(uint8_t *)d != 0) || (*(const uint8_t *)s != 0)); break;
        case PTL_U8: ADD_INT(uint8_t)
        case PTL_I8: ADD_INT(int8_t)
        case PTL_I16: ADD_INT(int16_t)
        case PTL_I32: ADD_INT(int32_t)
        case PTL_I64: ADD_INT(int64_t)
        case PTL_F16: { uint16_t x, y; memcpy(&x, d, 2); memcpy(&y, s, 2);
                        x = ptl_f2h(ptl_h2f(x) + ptl_h2f(y)); memcpy(d, &x, 2); } break;
        case PTL_BF16: { uint16_t x, y; memcpy(&x, d, 2); memcpy(&y, s, 2);
                         x = ptl_f2bf(ptl_bf2f(x) + ptl_bf2f(y)); memcpy(d, &x, 2); } break;
        case PTL_F32: { float x, y; memcpy(&x, d, 4); memcpy(&y, s, 4); x += y; memcpy(d, &x, 4); } break;
        default: { double x, y; memcpy(&x, d, 8); memcpy(&y, s, 8); x += y; memcpy(d, &x, 8); } break;
    }
}

static void scatter_rows(const walk *w, int64_t r0, int64_t r1, int accumulate, int dtype) {
    const int64_t *pi[PTL_MAX_DIMS];
    int last = w->ndim - 1;
    for (int64_t r = r0; r < r1; r++) {
        char *s, *d;
        walk_row(w, r, &s, &d, pi);
        if (w->row_const && !accumulate) {
            int64_t v, off;
            if (index_offset(w, pi, 0, &off, &v) >= 0) continue; /* checked before: cannot happen */
            move_row(d + off, w->b_st[last], s, w->a_st[last], w->row_len, w->itemsize);
            continue;
        }
        for (int64_t j = 0; j < w->row_len; j++) {
            int64_t v, off;
            if (index_offset(w, pi, w->row_const ? 0 : j, &off, &v) >= 0) continue; /* checked before */
            char *dst = d + j * w->b_st[last] + off;
            const char *val = s + j * w->a_st[last];
            if (accumulate) add_item(dst, val, dtype);
            else memcpy(dst, val, (size_t)w->itemsize);
        }
    }
}

/* dst: the tensor written to, restrided to src's shape; src: the values, at the result
 * shape. accumulate adds (duplicates sum up, so it runs on one thread). */
int ptl_index_scatter(const ptl_tensor *dst, const ptl_tensor *src, int nidx, const ptl_tensor *idx,
                      const int64_t *isize, const int64_t *istride, int accumulate, int64_t *bad) {
    walk w;
    int st = walk_init(&w, src, dst, nidx, idx, isize, istride);
    if (st != PTL_OK) return st;
    /* pass 1: every index, before anything is written */
    const int64_t *pi[PTL_MAX_DIMS];
    for (int64_t r = 0; r < w.rows; r++) {
        char *a, *b;
        walk_row(&w, r, &a, &b, pi);
        for (int64_t j = 0; j < (w.row_const ? 1 : w.row_len); j++) {
            int64_t v, off;
            int k = index_offset(&w, pi, j, &off, &v);
            if (k >= 0) {
                bad[0] = v;
                bad[1] = k;
                return PTL_ERR_INDEX;
            }
        }
    }
    int64_t numel = w.rows * w.row_len;
#ifdef _OPENMP
    int nthreads = omp_get_max_threads();
    if (!accumulate && numel >= PTL_GRAIN && nthreads > 1 && w.rows > 1) {
        int64_t chunks = numel / (PTL_GRAIN / 2);
        if (chunks > nthreads) chunks = nthreads;
        if (chunks > w.rows) chunks = w.rows;
#pragma omp parallel num_threads((int)chunks)
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            scatter_rows(&w, w.rows * t / nt, w.rows * (t + 1) / nt, 0, src->dtype);
        }
        return PTL_OK;
    }
#endif
    (void)numel;
    scatter_rows(&w, 0, w.rows, accumulate, src->dtype);
    return PTL_OK;
}

/* ---- nonzero ------------------------------------------------------------------------ */

static inline int is_nonzero(const char *p, int dtype) {
    switch (dtype) {
        case PTL_BOOL: case PTL_U8: case PTL_I8: return *(const uint8_t *)p != 0;
        case PTL_I16: { int16_t v; memcpy(&v, p, 2); return v != 0; }
        case PTL_F16: case PTL_BF16: { uint16_t v; memcpy(&v, p, 2); return (v & 0x7fff) != 0; } /* -0 is zero */
        case PTL_I32: { int32_t v; memcpy(&v, p, 4); return v != 0; }
        case PTL_F32: { float v; memcpy(&v, p, 4); return v != 0; } /* NaN is nonzero */
        case PTL_I64: { int64_t v; memcpy(&v, p, 8); return v != 0; }
        default: { double v; memcpy(&v, p, 8); return v != 0; }
    }
}

/* Visit t's elements in row-major order. With out != NULL, record the n-th nonzero one:
 * flat: its row-major position at out[n]; else its coordinates at out[d * capacity + n]
 * (each dim's coordinates contiguous: the layout PyTorch gives nonzero's [n, ndim]
 * result, strides (1, n)). */
static int nonzero_walk(const ptl_tensor *t, int64_t *out, int64_t capacity, int flat, int64_t *count) {
    if (t->ndim < 0 || t->ndim > PTL_MAX_DIMS) return PTL_ERR_NDIM;
    if (t->dtype < 0 || t->dtype >= PTL_NUM_DTYPES) return PTL_ERR_DTYPE;
    int nd = t->ndim, item = ptl_itemsize[t->dtype];
    int64_t numel = 1, expected = 1;
    int contiguous = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (t->sizes[d] != 1 && t->strides[d] != expected) contiguous = 0;
        expected *= t->sizes[d];
    }
    numel = expected;
    const char *p = (const char *)t->data;
    int64_t n = 0;
    if (contiguous && (flat || out == NULL) && item == 1) {
        /* the mask case: bytes in a row */
        const uint8_t *b = (const uint8_t *)p;
        for (int64_t e = 0; e < numel; e++) {
            if (b[e]) {
                if (out) {
                    if (n >= capacity) return PTL_ERR_ARG;
                    out[n] = e;
                }
                n++;
            }
        }
        *count = n;
        return PTL_OK;
    }
    int64_t pos[PTL_MAX_DIMS] = {0};
    for (int64_t e = 0; e < numel; e++) {
        if (is_nonzero(p, t->dtype)) {
            if (out) {
                if (n >= capacity) return PTL_ERR_ARG;
                if (flat) out[n] = e;
                else for (int d = 0; d < nd; d++) out[d * capacity + n] = pos[d];
            }
            n++;
        }
        for (int d = nd - 1; d >= 0; d--) {
            p += t->strides[d] * item;
            if (++pos[d] < t->sizes[d]) break;
            p -= t->strides[d] * item * t->sizes[d];
            pos[d] = 0;
        }
    }
    *count = n;
    return PTL_OK;
}

int ptl_count_nonzero(const ptl_tensor *t, int64_t *count) {
    return nonzero_walk(t, NULL, 0, 0, count);
}

int ptl_nonzero(const ptl_tensor *t, int64_t *out, int64_t capacity, int64_t *count) {
    return nonzero_walk(t, out, capacity, 0, count);
}

/* The row-major positions of t's nonzero elements (what a mask over merged dims needs). */
int ptl_nonzero_flat(const ptl_tensor *t, int64_t *out, int64_t capacity, int64_t *count) {
    return nonzero_walk(t, out, capacity, 1, count);
}

/* ---- masked_fill -------------------------------------------------------------------- */

#define MF_STORE_INT(T) { T x = (T)sc->i; for (int64_t k = 0; k < n; k++) \
                            if (m[k * st[1]]) memcpy(o + k * st[0], &x, sizeof(T)); }
#define DEF_MASKED_FILL(name, BODY)                                                              \
    static void name(char **data, const int64_t *st, int64_t n, const ptl_scalar *sc) {          \
        char *o = data[0];                                                                       \
        const uint8_t *m = (const uint8_t *)data[1];                                              \
        BODY                                                                                     \
    }
DEF_MASKED_FILL(mf_b8, { uint8_t x = (uint8_t)(sc->d != 0 || sc->i != 0);
                         for (int64_t k = 0; k < n; k++) if (m[k * st[1]]) o[k * st[0]] = (char)x; })
DEF_MASKED_FILL(mf_u8, MF_STORE_INT(uint8_t))
DEF_MASKED_FILL(mf_i8, MF_STORE_INT(int8_t))
DEF_MASKED_FILL(mf_i16, MF_STORE_INT(int16_t))
DEF_MASKED_FILL(mf_i32, MF_STORE_INT(int32_t))
DEF_MASKED_FILL(mf_i64, MF_STORE_INT(int64_t))
DEF_MASKED_FILL(mf_f16, { uint16_t x = ptl_f2h((float)sc->d);
                          for (int64_t k = 0; k < n; k++) if (m[k * st[1]]) memcpy(o + k * st[0], &x, 2); })
DEF_MASKED_FILL(mf_bf16, { uint16_t x = ptl_f2bf((float)sc->d);
                           for (int64_t k = 0; k < n; k++) if (m[k * st[1]]) memcpy(o + k * st[0], &x, 2); })
DEF_MASKED_FILL(mf_f32, { float x = (float)sc->d;
                          for (int64_t k = 0; k < n; k++) if (m[k * st[1]]) memcpy(o + k * st[0], &x, 4); })
DEF_MASKED_FILL(mf_f64, { double x = sc->d;
                          for (int64_t k = 0; k < n; k++) if (m[k * st[1]]) memcpy(o + k * st[0], &x, 8); })

static const ptl_loop_fn masked_fill_table[PTL_NUM_DTYPES] = {
    mf_b8, mf_u8, mf_i8, mf_i16, mf_i32, mf_i64, mf_f16, mf_bf16, mf_f32, mf_f64};

/* ts[0]: the tensor filled in place; ts[1]: a bool mask viewed at its shape. */
int ptl_masked_fill(const ptl_tensor *ts, double d, int64_t i) {
    if (ts[0].dtype < 0 || ts[0].dtype >= PTL_NUM_DTYPES || ts[1].dtype != PTL_BOOL) return PTL_ERR_DTYPE;
    if (ts[0].ndim != ts[1].ndim) return PTL_ERR_ARG;
    ptl_scalar sc = {d, i};
    return ptl_run_pointwise(2, ts, masked_fill_table[ts[0].dtype], &sc);
}
