/* random.c: random number generation on a counter-based generator (Philox4x32-10).
 *
 * The stream. A generator is a 64-bit seed (the Philox key) and a 64-bit offset (where
 * the next request starts in counter space). One Philox call maps a 128-bit counter to
 * four 32-bit words; word j of a request is lane j % 4 of counter (offset + j / 4, 0, 0)
 * (low 32 bits of the 64-bit counter in c0, high in c1). Element i of a fill always reads
 * the same words (a fixed number per element, set by the distribution and dtype), so the
 * values depend only on (seed, offset, i): never on the thread count or on how the range
 * is split, and a CUDA kernel that computes the same words per element reproduces them.
 * The caller advances the offset by the number of counters a request used.
 *
 * Elements are numbered in row-major order of the destination's shape, whatever its
 * strides, so a transposed view gets the values a contiguous tensor of that shape would.
 *
 * Words per element:
 *   uniform, exponential         1 (float64: 2, for 53 bits)
 *   bernoulli                    1
 *   normal                       elements 2p, 2p+1 are the cos / sin halves of one
 *                                Box-Muller pair p: words 2p, 2p+1 (float64: 4p .. 4p+3)
 *   random integers              2 when the range is at most 2^32, else 4
 *   multinomial                  2 per draw (one 53-bit uniform)
 *   randperm                     2 per Fisher-Yates step
 *   poisson                      its own sub-stream: counter (offset + i, draw / 2, 0)
 *
 * Kernels never allocate Python objects; arguments are validated by the caller.
 */
#include <stdlib.h>

/* No fused multiply-adds in this file, whatever the clone's ISA (x86-64-v3 has FMA): the
 * numbers must be the same bits on every machine and on the GPU, where philox.cu is
 * compiled with --fmad=false for the same reason. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "ptl.h"
#include "ptl_philox.h"   /* the generator and the word -> number arithmetic, shared with CUDA */


#ifdef _OPENMP
#include <omp.h>
#endif

/* Exposed for known-answer tests (Random123's kat_vectors). */
void ptl_philox4x32_10(const uint32_t *ctr, const uint32_t *key, uint32_t *out) {
    ptl_philox_block o = ptl_philox(ctr[0], ctr[1], ctr[2], ctr[3], key[0], key[1]);
    memcpy(out, o.w, sizeof o.w);
}

/* A reader of one request's word stream that keeps the last block: consecutive words
 * cost one Philox call per four. */
typedef struct {
    uint32_t k0, k1;
    uint64_t offset;
    uint64_t block;     /* index of the cached block, relative to offset */
    int valid;
    ptl_philox_block out;
} stream;

static inline void stream_init(stream *s, uint64_t seed, uint64_t offset) {
    s->k0 = (uint32_t)seed;
    s->k1 = (uint32_t)(seed >> 32);
    s->offset = offset;
    s->valid = 0;
}

static inline uint32_t stream_word(stream *s, uint64_t j) {
    uint64_t b = j >> 2;
    if (!s->valid || b != s->block) {
        uint64_t c = s->offset + b;   /* wraps modulo 2^64, as the offset does */
        s->out = ptl_philox((uint32_t)c, (uint32_t)(c >> 32), 0, 0, s->k0, s->k1);
        s->block = b;
        s->valid = 1;
    }
    return s->out.w[j & 3];
}

static inline uint64_t stream_u64(stream *s, uint64_t j) { /* words j, j+1 */
    return ((uint64_t)stream_word(s, j + 1) << 32) | stream_word(s, j);
}

/* ---- walking a destination (or a parameter tensor) in row-major element order -------- */

#define CHUNK 256

static int is_contiguous(const ptl_tensor *t) {
    int64_t expected = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->sizes[d] == 1) continue;
        if (t->sizes[d] == 0) return 1;
        if (t->strides[d] != expected) return 0;
        expected *= t->sizes[d];
    }
    return 1;
}

static int64_t numel_of(const ptl_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->sizes[d];
    return n;
}

/* Element offsets (in elements) of logical indices [start, start + n) of t. */
static void walk(const ptl_tensor *t, int contig, int64_t start, int n, int64_t *offs) {
    if (contig) {
        for (int k = 0; k < n; k++) offs[k] = start + k;
        return;
    }
    int nd = t->ndim;
    int64_t idx[PTL_MAX_DIMS], off = 0, rem = start;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = rem % t->sizes[d];
        rem /= t->sizes[d];
        off += idx[d] * t->strides[d];
    }
    for (int k = 0; k < n; k++) {
        offs[k] = off;
        for (int d = nd - 1; d >= 0; d--) {
            off += t->strides[d];
            if (++idx[d] < t->sizes[d]) break;
            off -= idx[d] * t->strides[d];
            idx[d] = 0;
        }
    }
}

static double load_as_double(const char *base, int dtype, int64_t off) {
    switch (dtype) {
        case PTL_BOOL: return ((const uint8_t *)base)[off] != 0;
        case PTL_U8: return ((const uint8_t *)base)[off];
        case PTL_I8: return ((const int8_t *)base)[off];
        case PTL_I16: return ((const int16_t *)base)[off];
        case PTL_I32: return ((const int32_t *)base)[off];
        case PTL_I64: return (double)((const int64_t *)base)[off];
        case PTL_F16: return ptl_h2f(((const uint16_t *)base)[off]);
        case PTL_BF16: return ptl_bf2f(((const uint16_t *)base)[off]);
        case PTL_F32: return ((const float *)base)[off];
        default: return ((const double *)base)[off];
    }
}

static void load_chunk(const ptl_tensor *t, int contig, int64_t start, int n, double *vals) {
    int64_t offs[CHUNK];
    walk(t, contig, start, n, offs);
    for (int k = 0; k < n; k++) vals[k] = load_as_double((const char *)t->data, t->dtype, offs[k]);
}

/* ---- stores: doubles (continuous distributions, 0/1) and int64 (integers) ------------ */

/* Half and bfloat16 neighbours below a value, on the bit pattern (finite values only). */
static uint16_t bits16_nextdown(uint16_t h) {
    if (h == 0x0000) return 0x8001;          /* +0 -> the smallest negative subnormal */
    return (h & 0x8000) ? (uint16_t)(h + 1) : (uint16_t)(h - 1);
}

/* The largest value of the dtype strictly below `to` (uniform's upper bound, exclusive). */
static ptl_upper_bound make_upper_bound(int dtype, double to) {
    ptl_upper_bound u;
    u.to = to;
    u.hi_d = nextafter(to, -INFINITY);
    float f = (float)to;
    if ((double)f >= to) f = nextafterf(f, -INFINITY);
    u.hi_f = f;
    u.hi_16 = 0;
    if (dtype == PTL_F16) {
        uint16_t h = ptl_f2h((float)to);
        while ((double)ptl_h2f(h) >= to) h = bits16_nextdown(h);
        u.hi_16 = h;
    } else if (dtype == PTL_BF16) {
        uint16_t h = ptl_f2bf((float)to);
        while ((double)ptl_bf2f(h) >= to) h = bits16_nextdown(h);
        u.hi_16 = h;
    }
    return u;
}

/* Store doubles; with `ub`, a value that rounds up to `to` in the dtype is replaced by
 * the largest value below it, so uniform_ stays in [from, to) in every dtype. A
 * contiguous destination is written directly (O(k) = start + k), others through offsets. */
#define STORE_LOOPS(O)                                                                               \
    switch (t->dtype) {                                                                              \
        case PTL_BOOL: for (int k = 0; k < n; k++) ((uint8_t *)base)[O] = vals[k] != 0; break;       \
        case PTL_U8: for (int k = 0; k < n; k++) ((uint8_t *)base)[O] = (uint8_t)(int64_t)vals[k]; break; \
        case PTL_I8: for (int k = 0; k < n; k++) ((int8_t *)base)[O] = (int8_t)(int64_t)vals[k]; break; \
        case PTL_I16: for (int k = 0; k < n; k++) ((int16_t *)base)[O] = (int16_t)(int64_t)vals[k]; break; \
        case PTL_I32: for (int k = 0; k < n; k++) ((int32_t *)base)[O] = (int32_t)(int64_t)vals[k]; break; \
        case PTL_I64: for (int k = 0; k < n; k++) ((int64_t *)base)[O] = (int64_t)vals[k]; break;    \
        case PTL_F16:                                                                                \
            for (int k = 0; k < n; k++) {                                                            \
                uint16_t h = ptl_f2h((float)vals[k]);                                                \
                if (ub && (double)ptl_h2f(h) >= ub->to) h = ub->hi_16;                               \
                ((uint16_t *)base)[O] = h;                                                           \
            }                                                                                        \
            break;                                                                                   \
        case PTL_BF16:                                                                               \
            for (int k = 0; k < n; k++) {                                                            \
                uint16_t h = ptl_f2bf((float)vals[k]);                                               \
                if (ub && (double)ptl_bf2f(h) >= ub->to) h = ub->hi_16;                              \
                ((uint16_t *)base)[O] = h;                                                           \
            }                                                                                        \
            break;                                                                                   \
        case PTL_F32:                                                                                \
            if (ub) {                                                                                \
                for (int k = 0; k < n; k++) {                                                        \
                    float f = (float)vals[k];                                                        \
                    ((float *)base)[O] = (double)f >= ub->to ? ub->hi_f : f;                         \
                }                                                                                    \
            } else {                                                                                 \
                for (int k = 0; k < n; k++) ((float *)base)[O] = (float)vals[k];                    \
            }                                                                                        \
            break;                                                                                   \
        default:                                                                                     \
            for (int k = 0; k < n; k++) {                                                            \
                double v = vals[k];                                                                  \
                ((double *)base)[O] = (ub && v >= ub->to) ? ub->hi_d : v;                            \
            }                                                                                        \
            break;                                                                                   \
    }

static void store_chunk(const ptl_tensor *t, int contig, int64_t start, int n, const double *vals,
                        const ptl_upper_bound *ub) {
    if (contig) {
        char *base = (char *)t->data + start * ptl_itemsize[t->dtype];
        STORE_LOOPS(k)
    } else {
        int64_t offs[CHUNK];
        walk(t, 0, start, n, offs);
        char *base = (char *)t->data;
        STORE_LOOPS(offs[k])
    }
}
#undef STORE_LOOPS

static void store_chunk_i64(const ptl_tensor *t, int contig, int64_t start, int n, const int64_t *vals) {
    int64_t offs[CHUNK];
    walk(t, contig, start, n, offs);
    char *base = (char *)t->data;
    for (int k = 0; k < n; k++) {
        int64_t v = vals[k], o = offs[k];
        switch (t->dtype) {
            case PTL_BOOL: ((uint8_t *)base)[o] = v != 0; break;
            case PTL_U8: ((uint8_t *)base)[o] = (uint8_t)v; break;
            case PTL_I8: ((int8_t *)base)[o] = (int8_t)v; break;
            case PTL_I16: ((int16_t *)base)[o] = (int16_t)v; break;
            case PTL_I32: ((int32_t *)base)[o] = (int32_t)v; break;
            case PTL_I64: ((int64_t *)base)[o] = v; break;
            case PTL_F16: ((uint16_t *)base)[o] = ptl_f2h((float)v); break;
            case PTL_BF16: ((uint16_t *)base)[o] = ptl_f2bf((float)v); break;
            case PTL_F32: ((float *)base)[o] = (float)v; break;
            default: ((double *)base)[o] = (double)v; break;
        }
    }
}

/* ---- the fill driver ------------------------------------------------------------------ */

/* What one fill computes: `kind` picks the distribution; the destination and up to two
 * parameter tensors (already expanded to the destination's shape) are walked in
 * row-major order, CHUNK elements at a time. */
enum { K_UNIFORM, K_NORMAL, K_EXPONENTIAL, K_INTEGER, K_BERNOULLI, K_POISSON };

typedef struct {
    int kind;
    uint64_t seed, offset;
    const ptl_tensor *out;
    const ptl_tensor *p0, *p1;    /* normal: mean, std; bernoulli: p; poisson: rate */
    int c_out, c_p0, c_p1;        /* contiguity of each */
    int wide;                      /* float64 output: 53-bit uniforms */
    double a, b;                   /* uniform: from, range; normal: mean, std; exponential: lambd; bernoulli: p */
    int64_t from;                  /* integers: from */
    uint64_t range;                /* integers: to - from (0 means 2^64) */
    ptl_upper_bound ub;
} fill_args;

/* Words j0 .. j0 + count - 1 of the stream, one Philox call per block of four. */
static void stream_words(const stream *s, uint64_t j0, int count, uint32_t *buf) {
    uint64_t j = j0, end = j0 + (uint64_t)count;
    int k = 0;
    while (j < end) {
        uint64_t c = s->offset + (j >> 2);
        ptl_philox_block o = ptl_philox((uint32_t)c, (uint32_t)(c >> 32), 0, 0, s->k0, s->k1);
        if ((j & 3) == 0 && end - j >= 4) {
            memcpy(buf + k, o.w, sizeof o.w);
            k += 4;
            j += 4;
            continue;
        }
        for (int l = (int)(j & 3); l < 4 && j < end; l++, j++) buf[k++] = o.w[l];
    }
}

static inline uint64_t pair64(const uint32_t *w) { return ((uint64_t)w[1] << 32) | w[0]; }

/* Box-Muller for pairs [p0, p0 + np): z0 (cos) and z1 (sin) per pair. Float dtypes use
 * words (2p, 2p+1) as 24-bit uniforms, in float (ptl_box_muller_f32, shared with CUDA);
 * float64 uses words 4p .. 4p+3 as two 53-bit uniforms, in double. u1 = 1 - U lies in
 * (0, 1], so the logarithm is finite. */
/* (kept out of line: inlined into fill_range, GCC stops vectorising the float loop) */
__attribute__((noinline)) PTL_HOT static void normal_pairs(const stream *s, uint64_t p0, int np, int wide, double *z0, double *z1, uint32_t *w) {
    if (wide) {
        stream_words(s, 4 * p0, 4 * np, w);
        for (int k = 0; k < np; k++) {
            double u1 = 1.0 - ptl_u53(pair64(w + 4 * k)), u2 = ptl_u53(pair64(w + 4 * k + 2));
            double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
            z0[k] = r * cos(th);
            z1[k] = r * sin(th);
        }
        return;
    }
    stream_words(s, 2 * p0, 2 * np, w);
    float zs[CHUNK / 2 + 2], zc[CHUNK / 2 + 2];
    for (int k = 0; k < np; k++) ptl_box_muller_f32(w[2 * k], w[2 * k + 1], &zc[k], &zs[k]);
    for (int k = 0; k < np; k++) {
        z0[k] = zc[k];
        z1[k] = zs[k];
    }
}

/* PyTorch's sample_poisson (transformed rejection for rate >= 10, Hoermann 1993; products
 * of uniforms below), drawing from element i's own sub-stream so a variable number of
 * draws never shifts another element's numbers. */
static double poisson_one(uint32_t k0, uint32_t k1, uint64_t c, double lambda) {
    if (lambda == 0 || lambda != lambda) return lambda;   /* nan is rejected by the caller */
    if (isinf(lambda)) return INFINITY;
    uint64_t draw = 0;
    ptl_philox_block blk = {{0, 0, 0, 0}};
#define NEXT_U(var)                                                                                      \
    do {                                                                                                 \
        if ((draw & 1) == 0) blk = ptl_philox((uint32_t)c, (uint32_t)(c >> 32), (uint32_t)(draw >> 1),   \
                                               (uint32_t)(draw >> 33), k0, k1);                          \
        int lane = (int)(draw & 1) * 2;                                                                  \
        var = ptl_u53(((uint64_t)blk.w[lane + 1] << 32) | blk.w[lane]);                                  \
        draw++;                                                                                          \
    } while (0)
    if (lambda >= 10) {
        double slam = sqrt(lambda), loglam = log(lambda);
        double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
        double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
        for (;;) {
            double U, V;
            NEXT_U(U);
            NEXT_U(V);
            U -= 0.5;
            double us = 0.5 - fabs(U);
            double k = floor((2 * a / us + b) * U + lambda + 0.43);
            if (us >= 0.07 && V <= vr) return k;
            if (k < 0 || (us < 0.013 && V > us)) continue;
            if (log(V) + log(invalpha) - log(a / (us * us) + b) <= -lambda + k * loglam - lgamma(k + 1))
                return k;
        }
    }
    double enlam = exp(-lambda), prod = 1.0, x = 0;
    for (;;) {
        double U;
        NEXT_U(U);
        prod *= U;
        if (prod > enlam) x += 1;
        else return x;
    }
#undef NEXT_U
}

static void fill_range(const fill_args *a, int64_t begin, int64_t end) {
    stream s;
    stream_init(&s, a->seed, a->offset);
    double vals[CHUNK], p0[CHUNK], p1[CHUNK], z0[CHUNK / 2 + 2], z1[CHUNK / 2 + 2];
    int64_t ivals[CHUNK];
    uint32_t w[4 * CHUNK + 8];
    for (int64_t start = begin; start < end; start += CHUNK) {
        int n = (int)(end - start < CHUNK ? end - start : CHUNK);
        uint64_t i0 = (uint64_t)start;
        switch (a->kind) {
            case K_UNIFORM:
                if (a->wide) {
                    stream_words(&s, 2 * i0, 2 * n, w);
                    for (int k = 0; k < n; k++) vals[k] = a->a + ptl_u53(pair64(w + 2 * k)) * a->b;
                } else {
                    stream_words(&s, i0, n, w);
                    for (int k = 0; k < n; k++) vals[k] = a->a + ptl_u24(w[k]) * a->b;
                }
                store_chunk(a->out, a->c_out, start, n, vals, &a->ub);
                break;
            case K_NORMAL: {
                /* element i is the cos (even i) or sin (odd i) half of pair i / 2 */
                uint64_t pfirst = i0 >> 1, plast = (i0 + (uint64_t)n - 1) >> 1;
                normal_pairs(&s, pfirst, (int)(plast - pfirst + 1), a->wide, z0, z1, w);
                for (int k = 0; k < n; k++) {
                    uint64_t i = i0 + (uint64_t)k;
                    vals[k] = (i & 1) ? z1[(i >> 1) - pfirst] : z0[(i >> 1) - pfirst];
                }
                if (a->p0) load_chunk(a->p0, a->c_p0, start, n, p0);
                if (a->p1) load_chunk(a->p1, a->c_p1, start, n, p1);
                if (a->p0 || a->p1) {
                    for (int k = 0; k < n; k++)
                        vals[k] = (a->p0 ? p0[k] : a->a) + (a->p1 ? p1[k] : a->b) * vals[k];
                } else if (a->a != 0.0 || a->b != 1.0) {
                    for (int k = 0; k < n; k++) vals[k] = a->a + a->b * vals[k];
                }
                store_chunk(a->out, a->c_out, start, n, vals, NULL);
                break;
            }
            case K_EXPONENTIAL:
                if (a->wide) {
                    stream_words(&s, 2 * i0, 2 * n, w);
                    for (int k = 0; k < n; k++) vals[k] = -log(ptl_u53_open(pair64(w + 2 * k))) / a->a;
                } else {
                    stream_words(&s, i0, n, w);
                    for (int k = 0; k < n; k++) vals[k] = -log(ptl_u32_open(w[k])) / a->a;
                }
                store_chunk(a->out, a->c_out, start, n, vals, NULL);
                break;
            case K_INTEGER:
                if (a->range != 0 && a->range <= 0x100000000ull) {
                    /* multiply-shift on 64 random bits: no modulo bias (at most range / 2^64) */
                    stream_words(&s, 2 * i0, 2 * n, w);
                    for (int k = 0; k < n; k++)
                        ivals[k] = (int64_t)((uint64_t)a->from + ptl_mulhi64(pair64(w + 2 * k), a->range));
                } else {
                    /* 128 random bits; range 0 stands for 2^64 (every int64) */
                    stream_words(&s, 4 * i0, 4 * n, w);
                    for (int k = 0; k < n; k++) {
                        uint64_t lo = pair64(w + 4 * k), hi = pair64(w + 4 * k + 2);
                        ivals[k] = (int64_t)((uint64_t)a->from + (a->range == 0 ? lo : ptl_mulhi128x64(lo, hi, a->range)));
                    }
                }
                store_chunk_i64(a->out, a->c_out, start, n, ivals);
                break;
            case K_BERNOULLI:
                if (a->p0) load_chunk(a->p0, a->c_p0, start, n, p0);
                stream_words(&s, i0, n, w);
                for (int k = 0; k < n; k++) {
                    /* u in [0, 1) on a 2^-32 grid: p = 0 never fires, p = 1 always does */
                    double u = (double)w[k] * (1.0 / 4294967296.0);
                    vals[k] = u < (a->p0 ? p0[k] : a->a);
                }
                store_chunk(a->out, a->c_out, start, n, vals, NULL);
                break;
            case K_POISSON:
                load_chunk(a->p0, a->c_p0, start, n, p0);
                for (int k = 0; k < n; k++) vals[k] = poisson_one(s.k0, s.k1, a->offset + i0 + (uint64_t)k, p0[k]);
                store_chunk(a->out, a->c_out, start, n, vals, NULL);
                break;
        }
    }
}

static int run_fill(fill_args *a) {
    const ptl_tensor *t = a->out;
    if (t->ndim < 0 || t->ndim > PTL_MAX_DIMS) return PTL_ERR_NDIM;
    if (t->dtype < 0 || t->dtype >= PTL_NUM_DTYPES) return PTL_ERR_DTYPE;
    a->c_out = is_contiguous(t);
    a->c_p0 = a->p0 ? is_contiguous(a->p0) : 1;
    a->c_p1 = a->p1 ? is_contiguous(a->p1) : 1;
    int64_t n = numel_of(t);
    if (n <= 0) return PTL_OK;
#ifdef _OPENMP
    int nthreads = omp_get_max_threads();
    if (n >= PTL_GRAIN && nthreads > 1) {
        int64_t chunks = n / (PTL_GRAIN / 2);
        if (chunks > nthreads) chunks = nthreads;
#pragma omp parallel num_threads((int)chunks)
        {
            int th = omp_get_thread_num(), nt = omp_get_num_threads();
            fill_range(a, n * th / nt, n * (th + 1) / nt);
        }
        return PTL_OK;
    }
#endif
    fill_range(a, 0, n);
    return PTL_OK;
}

static fill_args new_args(int kind, const ptl_tensor *out, uint64_t seed, uint64_t offset) {
    fill_args a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.out = out;
    a.seed = seed;
    a.offset = offset;
    a.wide = out->dtype == PTL_F64;
    return a;
}

/* ---- entry points --------------------------------------------------------------------- */

int ptl_random_uniform(const ptl_tensor *out, uint64_t seed, uint64_t offset, double from, double to) {
    fill_args a = new_args(K_UNIFORM, out, seed, offset);
    a.a = from;
    a.b = to - from;
    a.ub = make_upper_bound(out->dtype, to);
    if (!(from < to)) a.ub.to = INFINITY;   /* from == to: every value is `from` */
    return run_fill(&a);
}

/* mean + std * N(0, 1); mean and std are tensors (expanded to out's shape) or NULL for
 * the scalars mean_d / std_d. */
int ptl_random_normal(const ptl_tensor *out, const ptl_tensor *mean, const ptl_tensor *std, uint64_t seed,
                      uint64_t offset, double mean_d, double std_d) {
    fill_args a = new_args(K_NORMAL, out, seed, offset);
    a.p0 = mean;
    a.p1 = std;
    a.a = mean_d;
    a.b = std_d;
    return run_fill(&a);
}

int ptl_random_exponential(const ptl_tensor *out, uint64_t seed, uint64_t offset, double lambd) {
    fill_args a = new_args(K_EXPONENTIAL, out, seed, offset);
    a.a = lambd;
    return run_fill(&a);
}

/* Integers from + [0, range), range = 0 meaning 2^64 (the whole int64 line). */
int ptl_random_integers(const ptl_tensor *out, uint64_t seed, uint64_t offset, int64_t from, uint64_t range) {
    fill_args a = new_args(K_INTEGER, out, seed, offset);
    a.from = from;
    a.range = range;
    return run_fill(&a);
}

/* 1 with probability p (the tensor p, expanded to out's shape, or the scalar p_d). */
int ptl_random_bernoulli(const ptl_tensor *out, const ptl_tensor *p, uint64_t seed, uint64_t offset, double p_d) {
    fill_args a = new_args(K_BERNOULLI, out, seed, offset);
    a.p0 = p;
    a.a = p_d;
    return run_fill(&a);
}

int ptl_random_poisson(const ptl_tensor *out, const ptl_tensor *rate, uint64_t seed, uint64_t offset) {
    if (!rate) return PTL_ERR_ARG;
    fill_args a = new_args(K_POISSON, out, seed, offset);
    a.p0 = rate;
    return run_fill(&a);
}

/* How many counters (blocks of four words) a request uses: the caller advances the
 * generator's offset by this, so consecutive requests never share a word. `n` is the
 * element count (randperm: its n; multinomial: the number of draws). */
enum { K_RANDPERM = 6, K_MULTINOMIAL = 7 };

int64_t ptl_random_counters(int kind, int dtype, int64_t n, uint64_t range) {
    int wide = dtype == PTL_F64;
    uint64_t words;
    if (n <= 0) return 0;
    switch (kind) {
        case K_UNIFORM: case K_EXPONENTIAL: words = (uint64_t)n * (wide ? 2 : 1); break;
        case K_NORMAL: words = (((uint64_t)n + 1) / 2) * (wide ? 4 : 2); break;
        case K_INTEGER: words = (uint64_t)n * ((range != 0 && range <= 0x100000000ull) ? 2 : 4); break;
        case K_BERNOULLI: words = (uint64_t)n; break;
        case K_POISSON: return n;
        case K_RANDPERM: words = 2 * (uint64_t)(n - 1); break;
        case K_MULTINOMIAL: words = 2 * (uint64_t)n; break;
        default: return -1;
    }
    return (int64_t)((words + 3) / 4);
}

/* Whether every element of t lies in [lo, hi] (nan never does): parameter validation. */
int ptl_random_all_in_range(const ptl_tensor *t, double lo, double hi, int *ok) {
    if (t->ndim < 0 || t->ndim > PTL_MAX_DIMS) return PTL_ERR_NDIM;
    int contig = is_contiguous(t);
    int64_t n = numel_of(t);
    double vals[CHUNK];
    *ok = 1;
    for (int64_t start = 0; start < n; start += CHUNK) {
        int m = (int)(n - start < CHUNK ? n - start : CHUNK);
        load_chunk(t, contig, start, m, vals);
        for (int k = 0; k < m; k++)
            if (!(vals[k] >= lo && vals[k] <= hi)) {
                *ok = 0;
                return PTL_OK;
            }
    }
    return PTL_OK;
}

/* ---- randperm: Fisher-Yates, step k (swap position n-1-k) drawing words 2k, 2k+1 ------ */

int ptl_randperm(int64_t *out, int64_t n, uint64_t seed, uint64_t offset) {
    if (n < 0) return PTL_ERR_ARG;
    for (int64_t i = 0; i < n; i++) out[i] = i;
    stream s;
    stream_init(&s, seed, offset);
    for (int64_t i = n - 1, k = 0; i > 0; i--, k++) {
        uint64_t r = stream_u64(&s, 2 * (uint64_t)k);
        int64_t j = (int64_t)ptl_mulhi64(r, (uint64_t)(i + 1));
        int64_t tmp = out[i];
        out[i] = out[j];
        out[j] = tmp;
    }
    return PTL_OK;
}

/* ---- multinomial ------------------------------------------------------------------------ */

/* Validation as PyTorch does it, before any sampling. `err` receives:
 *   1 "probability tensor contains either `inf`, `nan` or element < 0" (whole tensor first)
 *   2 "invalid multinomial distribution (sum of probabilities <= 0)"
 *   3 "... (encountering probability entry < 0)"       (with replacement, row by row)
 *   4 "... (encountering probability entry = infinity or NaN)"
 * prob is 2-D (rows, categories); `fast` is PyTorch's path without replacement or for a
 * single sample, whose checks differ from the cumulative-sum path's. */
static int multinomial_validate(const ptl_tensor *prob, int fast) {
    int64_t rows = prob->sizes[0], ncat = prob->sizes[1];
    const char *base = (const char *)prob->data;
    if (fast) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < ncat; j++) {
                double v = load_as_double(base, prob->dtype, r * prob->strides[0] + j * prob->strides[1]);
                if (!(v >= 0 && v < INFINITY)) return 1;
            }
        for (int64_t r = 0; r < rows; r++) {
            double sum = 0;
            for (int64_t j = 0; j < ncat; j++)
                sum += load_as_double(base, prob->dtype, r * prob->strides[0] + j * prob->strides[1]);
            if (!(sum > 0)) return 2;
        }
        return 0;
    }
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0;
        for (int64_t j = 0; j < ncat; j++) {
            double v = load_as_double(base, prob->dtype, r * prob->strides[0] + j * prob->strides[1]);
            if (!(v >= 0)) return 3;
            if (!isfinite(v)) return 4;
            sum += v;
        }
        if (!(sum > 0)) return 2;
    }
    return 0;
}

typedef struct {
    double key;
    int64_t idx;
} keyed;

static int keyed_desc(const void *x, const void *y) {
    const keyed *a = (const keyed *)x, *b = (const keyed *)y;
    if (a->key > b->key) return -1;
    if (a->key < b->key) return 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* One row. Without replacement (or one sample): the n largest p_j / E_j, E_j ~ Exp(1)
 * (the exponential form of the Gumbel-top-k trick PyTorch uses), draw (row, j) from
 * words 2(row*ncat + j). With replacement: draw (row, s) from words 2(row*n + s), found
 * in the cumulative distribution by binary search. */
static int multinomial_row(const ptl_tensor *prob, int64_t r, int64_t nsample, int fast, stream *s, int64_t *out,
                           double *cum, keyed *keys) {
    int64_t ncat = prob->sizes[1];
    const char *base = (const char *)prob->data;
    if (fast) {
        for (int64_t j = 0; j < ncat; j++) {
            double p = load_as_double(base, prob->dtype, r * prob->strides[0] + j * prob->strides[1]);
            double e = -log(ptl_u53_open(stream_u64(s, 2 * (uint64_t)(r * ncat + j))));
            keys[j].key = p / e;
            keys[j].idx = j;
        }
        if (nsample == 1) {
            int64_t best = 0;
            for (int64_t j = 1; j < ncat; j++)
                if (keys[j].key > keys[best].key) best = j;
            out[0] = best;
        } else {
            qsort(keys, (size_t)ncat, sizeof(keyed), keyed_desc);
            for (int64_t k = 0; k < nsample; k++) out[k] = keys[k].idx;
        }
        return PTL_OK;
    }
    double sum = 0;
    int64_t last = 0;   /* the last category with positive probability */
    for (int64_t j = 0; j < ncat; j++) {
        double p = load_as_double(base, prob->dtype, r * prob->strides[0] + j * prob->strides[1]);
        sum += p;
        cum[j] = sum;
        if (p > 0) last = j;
    }
    for (int64_t k = 0; k < nsample; k++) {
        double target = ptl_u53(stream_u64(s, 2 * (uint64_t)(r * nsample + k))) * sum;
        /* the first category whose cumulative mass exceeds target: zero-probability
         * categories (equal neighbours) can never be chosen */
        int64_t lo = 0, hi = ncat;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (cum[mid] > target) hi = mid;
            else lo = mid + 1;
        }
        out[k] = lo < ncat ? lo : last;   /* target rounded up to sum: the top category */
    }
    return PTL_OK;
}

/* prob: 2-D (rows, ncat), any float dtype and strides. out: rows * nsample int64,
 * contiguous. `with_replacement` selects the path as PyTorch does (one sample always
 * uses the exponential path). *err receives a validation code (see above), 0 if valid. */
int ptl_multinomial(const ptl_tensor *prob, int64_t nsample, int with_replacement, uint64_t seed, uint64_t offset,
                    int64_t *out, int *err) {
    if (prob->ndim != 2) return PTL_ERR_NDIM;
    int fast = !with_replacement || nsample == 1;
    *err = multinomial_validate(prob, fast);
    if (*err) return PTL_ERR_ARG;
    int64_t rows = prob->sizes[0], ncat = prob->sizes[1];
    int status = PTL_OK;
    int64_t work = rows * (fast ? ncat : nsample);
    int parallel = work >= PTL_GRAIN && rows > 1;
#pragma omp parallel if (parallel)
    {
        double *cum = fast ? NULL : (double *)malloc(sizeof(double) * (size_t)(ncat ? ncat : 1));
        keyed *keys = fast ? (keyed *)malloc(sizeof(keyed) * (size_t)(ncat ? ncat : 1)) : NULL;
        int have = fast ? keys != NULL : cum != NULL;
        if (!have) {
#pragma omp atomic write
            status = PTL_ERR_ALLOC;
        }
        stream s;
        stream_init(&s, seed, offset);
        /* every thread reaches the worksharing loop, even one whose scratch failed */
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++)
            if (have) multinomial_row(prob, r, nsample, fast, &s, out + r * nsample, cum, keys);
        free(cum);
        free(keys);
    }
    return status;
}
