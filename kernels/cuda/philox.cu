/* philox.cu: the CPU's random streams (kernels/random.c) on the GPU, bit for bit.
 *
 * Element i of a fill reads the same Philox4x32-10 words as on the CPU (see the stream
 * description at the top of kernels/random.c), so a CUDA tensor filled after
 * manual_seed(s) holds the values a CPU tensor gets. The per-element functions below are
 * plain C as well as CUDA C++: compiled with gcc (-DPTL_PHILOX_HOST_TEST, see
 * tests/cuda/test_philox_host.py) they are checked against random.c on the CPU. NVRTC
 * compiles this file with --fmad=false so float arithmetic is not contracted into FMAs
 * (the CPU build never contracts: it targets baseline x86-64 and AVX2 without FMA).
 *
 * Bit-exact on the GPU: the words, uniform (every dtype), bernoulli, integers and float32
 * / float16 / bfloat16 normal (pure IEEE arithmetic: +, *, /, sqrt, floor). float64 normal
 * and exponential call log / sin / cos in double, where CUDA's libdevice and glibc can
 * differ in the last bit.
 *
 * Kernels, per output dtype <d> (destination walked in row-major element order through a
 * ptl_iter64<1>, or directly when contig != 0):
 *   ptl_cu_uniform_<d>(n, out, it, contig, seed, offset, from, range, ub)
 *   ptl_cu_normal_<d>(n, out, it, contig, seed, offset, mean, std)
 *   ptl_cu_exponential_<d>(n, out, it, contig, seed, offset, lambd)
 *   ptl_cu_bernoulli_<d>(n, out, it, contig, seed, offset, p)
 *   ptl_cu_integers_<d>(n, out, it, contig, seed, offset, from, range)
 */
#ifdef __CUDACC__
#include "ptl_cuda.cuh"
#define PHX_FN static __device__ __forceinline__
#define phx_bits2f(u) __uint_as_float(u)
#define phx_f2bits(f) __float_as_uint(f)
#define phx_mulhi64(a, b) __umul64hi(a, b)
#define PHX_INF_F PTL_INF_F
#define PHX_INF_D PTL_INF_D
#define PHX_NAN_F PTL_NAN_F
#else
#include "../ptl.h"
#define PHX_FN static inline
static inline float phx_bits2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t phx_f2bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline uint64_t phx_mulhi64(uint64_t a, uint64_t b) { return (uint64_t)(((unsigned __int128)a * b) >> 64); }
#define PHX_INF_F INFINITY
#define PHX_INF_D ((double)INFINITY)
#define PHX_NAN_F NAN
#endif

/* ---- Philox4x32-10 and the word stream --------------------------------------------- */

typedef struct {
    uint32_t w[4];
} phx_block;

PHX_FN phx_block phx_philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
    for (int r = 0; r < 10; r++) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    }
    phx_block o;
    o.w[0] = c0; o.w[1] = c1; o.w[2] = c2; o.w[3] = c3;
    return o;
}

/* word j of the request starting at `offset` (counter offset + j / 4, lane j % 4) */
PHX_FN uint32_t phx_word(uint64_t seed, uint64_t offset, uint64_t j) {
    uint64_t c = offset + (j >> 2);
    phx_block b = phx_philox((uint32_t)c, (uint32_t)(c >> 32), 0, 0, (uint32_t)seed, (uint32_t)(seed >> 32));
    return b.w[j & 3];
}
PHX_FN uint64_t phx_pair(uint64_t seed, uint64_t offset, uint64_t j) {   /* words j, j + 1 (j even) */
    uint64_t c = offset + (j >> 2);
    phx_block b = phx_philox((uint32_t)c, (uint32_t)(c >> 32), 0, 0, (uint32_t)seed, (uint32_t)(seed >> 32));
    int l = (int)(j & 3);
    return ((uint64_t)b.w[l + 1] << 32) | b.w[l];
}

PHX_FN double phx_u24(uint32_t w) { return (double)(w >> 8) * (1.0 / 16777216.0); }
PHX_FN double phx_u53(uint64_t w) { return (double)(w >> 11) * (1.0 / 9007199254740992.0); }
PHX_FN double phx_u32_open(uint32_t w) { return ((double)w + 0.5) * (1.0 / 4294967296.0); }
PHX_FN double phx_u53_open(uint64_t w) { return ((double)(w >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

/* ---- float helpers, the same operations as kernels/ptl.h and random.c ---------------- */

PHX_FN float phx_vlogf(float x) {   /* ptl_vlogf */
    uint32_t u = phx_f2bits(x);
    int sub = u < 0x00800000u;
    float xs = sub ? x * 8388608.0f : x;
    u = phx_f2bits(xs);
    int32_t e = (int32_t)((u >> 23) & 0xff) - 127 - (sub ? 23 : 0);
    float m = phx_bits2f((u & 0x007fffffu) | 0x3f800000u);
    int big = m > 1.41421356f;
    m = big ? m * 0.5f : m;
    e = big ? e + 1 : e;
    float f = m - 1.0f;
    float z = f * f;
    float p = 7.0376836292e-2f;
    p = p * f - 1.1514610310e-1f;
    p = p * f + 1.1676998740e-1f;
    p = p * f - 1.2420140846e-1f;
    p = p * f + 1.4249322787e-1f;
    p = p * f - 1.6668057665e-1f;
    p = p * f + 2.0000714765e-1f;
    p = p * f - 2.4999993993e-1f;
    p = p * f + 3.3333331174e-1f;
    float ef = (float)e;
    float y = f + (f * z * p - 0.5f * z) + ef * -2.12194440e-4f;
    y = y + ef * 0.693359375f;
    y = x == 0.0f ? -PHX_INF_F : y;
    y = x < 0.0f ? PHX_NAN_F : y;
    y = x == PHX_INF_F ? PHX_INF_F : y;
    return x != x ? x : y;
}

PHX_FN void phx_sincos2pi(float t, float *s_out, float *c_out) {   /* random.c: sincos2pi */
    float x4 = 4.0f * t;
    float qf = floorf(x4 + 0.5f);
    float a = (x4 - qf) * 1.57079632679489662f;
    int q = (int)qf & 3;
    float z = a * a;
    float s = a + a * z * (-1.6666654611e-1f + z * (8.3321608736e-3f + z * -1.9515295891e-4f));
    float c = 1.0f - 0.5f * z + z * z * (4.166664568298827e-2f + z * (-1.388731625493765e-3f + z * 2.443315711809948e-5f));
    *s_out = (q == 0) ? s : (q == 1) ? c : (q == 2) ? -s : -c;
    *c_out = (q == 0) ? c : (q == 1) ? -s : (q == 2) ? -c : s;
}

/* ---- one element of each distribution ------------------------------------------------ */

/* uniform [from, from + range) before the dtype's upper-bound correction; wide = float64 */
PHX_FN double phx_uniform(uint64_t seed, uint64_t offset, uint64_t i, int wide, double from, double range) {
    if (wide) return from + phx_u53(phx_pair(seed, offset, 2 * i)) * range;
    return from + phx_u24(phx_word(seed, offset, i)) * range;
}

/* N(0, 1): element i is the cos (even) or sin (odd) half of Box-Muller pair i / 2 */
PHX_FN double phx_normal(uint64_t seed, uint64_t offset, uint64_t i, int wide) {
    uint64_t p = i >> 1;
    if (wide) {
        double u1 = 1.0 - phx_u53(phx_pair(seed, offset, 4 * p)), u2 = phx_u53(phx_pair(seed, offset, 4 * p + 2));
        double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
        return (i & 1) ? r * sin(th) : r * cos(th);
    }
    uint64_t w = phx_pair(seed, offset, 2 * p);
    float u1 = 1.0f - (float)((uint32_t)w >> 8) * (1.0f / 16777216.0f);
    float u2 = (float)((uint32_t)(w >> 32) >> 8) * (1.0f / 16777216.0f);
    float r = sqrtf(-2.0f * phx_vlogf(u1));
    float sn, cs;
    phx_sincos2pi(u2, &sn, &cs);
    float z = (i & 1) ? r * sn : r * cs;
    return (double)z;
}

/* mean + std * N(0, 1), skipping the transform for (0, 1) as random.c does (keeps -0.0) */
PHX_FN double phx_normal_scaled(uint64_t seed, uint64_t offset, uint64_t i, int wide, double mean, double std) {
    double z = phx_normal(seed, offset, i, wide);
    return (mean != 0.0 || std != 1.0) ? mean + std * z : z;
}

PHX_FN double phx_exponential(uint64_t seed, uint64_t offset, uint64_t i, int wide, double lambd) {
    if (wide) return -log(phx_u53_open(phx_pair(seed, offset, 2 * i))) / lambd;
    return -log(phx_u32_open(phx_word(seed, offset, i))) / lambd;
}

PHX_FN double phx_bernoulli(uint64_t seed, uint64_t offset, uint64_t i, double p) {
    double u = (double)phx_word(seed, offset, i) * (1.0 / 4294967296.0);
    return u < p;
}

/* from + a draw in [0, range); range 0 stands for 2^64 (every int64) */
PHX_FN int64_t phx_integer(uint64_t seed, uint64_t offset, uint64_t i, int64_t from, uint64_t range) {
    if (range != 0 && range <= 0x100000000ull)
        return (int64_t)((uint64_t)from + phx_mulhi64(phx_pair(seed, offset, 2 * i), range));
    uint64_t lo = phx_pair(seed, offset, 4 * i), hi = phx_pair(seed, offset, 4 * i + 2), v;
    if (range == 0) {
        v = lo;
    } else {
        /* the top 64 bits of (hi * 2^64 + lo) * range, in 64-bit pieces */
        uint64_t x_lo = hi * range, x_hi = phx_mulhi64(hi, range), y_hi = phx_mulhi64(lo, range);
        uint64_t s = x_lo + y_hi;
        v = x_hi + (s < x_lo);
    }
    return (int64_t)((uint64_t)from + v);
}

/* ---- stores (random.c's store_chunk / store_chunk_i64) ------------------------------- */

/* uniform_'s exclusive upper bound: a value that rounds up to `to` in the dtype becomes
 * the largest value below it (computed by the host as random.c's make_upper_bound) */
typedef struct {
    double to;
    double hi_d;
    float hi_f;
    uint16_t hi_16;
} phx_ubound;

PHX_FN float phx_store_f32(double v, const phx_ubound *ub) {
    float f = (float)v;
    return (ub && (double)f >= ub->to) ? ub->hi_f : f;
}
PHX_FN double phx_store_f64(double v, const phx_ubound *ub) { return (ub && v >= ub->to) ? ub->hi_d : v; }
PHX_FN uint16_t phx_store_f16(double v, const phx_ubound *ub) {
    uint16_t h = ptl_f2h((float)v);
    return (ub && (double)ptl_h2f(h) >= ub->to) ? ub->hi_16 : h;
}
PHX_FN uint16_t phx_store_bf16(double v, const phx_ubound *ub) {
    uint16_t h = ptl_f2bf((float)v);
    return (ub && (double)ptl_bf2f(h) >= ub->to) ? ub->hi_16 : h;
}

#ifdef __CUDACC__
/* ---- CUDA kernels ----------------------------------------------------------------------- */

#define PTL_BLOCK 256

/* double-valued results into each dtype */
#define PHX_STORE_D(N, S, EXPR)                                                            \
    static __device__ __forceinline__ S phx_put_##N(double v, const phx_ubound *ub) { (void)ub; return EXPR; }
PHX_STORE_D(b8, uint8_t, (uint8_t)(v != 0))
PHX_STORE_D(u8, uint8_t, (uint8_t)(int64_t)v)
PHX_STORE_D(i8, int8_t, (int8_t)(int64_t)v)
PHX_STORE_D(i16, int16_t, (int16_t)(int64_t)v)
PHX_STORE_D(i32, int32_t, (int32_t)(int64_t)v)
PHX_STORE_D(i64, int64_t, (int64_t)v)
PHX_STORE_D(f16, uint16_t, phx_store_f16(v, ub))
PHX_STORE_D(bf16, uint16_t, phx_store_bf16(v, ub))
PHX_STORE_D(f32, float, phx_store_f32(v, ub))
PHX_STORE_D(f64, double, phx_store_f64(v, ub))

/* int64-valued results (random integers) into each dtype */
#define PHX_STORE_I(N, S, EXPR) static __device__ __forceinline__ S phx_puti_##N(int64_t v) { return EXPR; }
PHX_STORE_I(b8, uint8_t, (uint8_t)(v != 0))
PHX_STORE_I(u8, uint8_t, (uint8_t)v)
PHX_STORE_I(i8, int8_t, (int8_t)v)
PHX_STORE_I(i16, int16_t, (int16_t)v)
PHX_STORE_I(i32, int32_t, (int32_t)v)
PHX_STORE_I(i64, int64_t, v)
PHX_STORE_I(f16, uint16_t, ptl_f2h((float)v))
PHX_STORE_I(bf16, uint16_t, ptl_f2bf((float)v))
PHX_STORE_I(f32, float, (float)v)
PHX_STORE_I(f64, double, (double)v)

#define PHX_LOOP(BODY)                                                                     \
    PTL_GRID_LOOP(int64_t, i, n) {                                                         \
        int64_t off[1];                                                                    \
        if (contig) off[0] = i; else ptl_offsets<1>(it, i, off);                           \
        BODY;                                                                              \
    }

#define DEF_RANDOM(N, S, WIDE)                                                                                  \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_uniform_##N(                                \
            int64_t n, S *o, const ptl_iter64<1> it, int contig, uint64_t seed, uint64_t offset, double from, \
            double range, const phx_ubound ub) {                                                                \
        PHX_LOOP(o[off[0]] = phx_put_##N(phx_uniform(seed, offset, (uint64_t)i, WIDE, from, range), &ub))      \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_normal_##N(                                 \
            int64_t n, S *o, const ptl_iter64<1> it, int contig, uint64_t seed, uint64_t offset, double mean, \
            double std) {                                                                                       \
        PHX_LOOP(o[off[0]] = phx_put_##N(phx_normal_scaled(seed, offset, (uint64_t)i, WIDE, mean, std), 0))    \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_exponential_##N(                            \
            int64_t n, S *o, const ptl_iter64<1> it, int contig, uint64_t seed, uint64_t offset, double lambd) { \
        PHX_LOOP(o[off[0]] = phx_put_##N(phx_exponential(seed, offset, (uint64_t)i, WIDE, lambd), 0))          \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_bernoulli_##N(                              \
            int64_t n, S *o, const ptl_iter64<1> it, int contig, uint64_t seed, uint64_t offset, double p) {   \
        PHX_LOOP(o[off[0]] = phx_put_##N(phx_bernoulli(seed, offset, (uint64_t)i, p), 0))                      \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_integers_##N(                               \
            int64_t n, S *o, const ptl_iter64<1> it, int contig, uint64_t seed, uint64_t offset, int64_t from, \
            uint64_t range) {                                                                                   \
        PHX_LOOP(o[off[0]] = phx_puti_##N(phx_integer(seed, offset, (uint64_t)i, from, range)))                \
    }

DEF_RANDOM(b8, uint8_t, 0) DEF_RANDOM(u8, uint8_t, 0) DEF_RANDOM(i8, int8_t, 0) DEF_RANDOM(i16, int16_t, 0)
DEF_RANDOM(i32, int32_t, 0) DEF_RANDOM(i64, int64_t, 0) DEF_RANDOM(f16, uint16_t, 0) DEF_RANDOM(bf16, uint16_t, 0)
DEF_RANDOM(f32, float, 0) DEF_RANDOM(f64, double, 1)

#endif /* __CUDACC__ */

#ifdef PTL_PHILOX_HOST_TEST
/* ---- CPU drivers for the test: contiguous outputs, element by element ---------------- */

void phx_test_words(uint64_t seed, uint64_t offset, int64_t n, uint32_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = phx_word(seed, offset, (uint64_t)i);
}
void phx_test_uniform_f32(uint64_t seed, uint64_t offset, int64_t n, double from, double range, const phx_ubound *ub, float *out) {
    for (int64_t i = 0; i < n; i++) out[i] = phx_store_f32(phx_uniform(seed, offset, (uint64_t)i, 0, from, range), ub);
}
void phx_test_uniform_f64(uint64_t seed, uint64_t offset, int64_t n, double from, double range, const phx_ubound *ub, double *out) {
    for (int64_t i = 0; i < n; i++) out[i] = phx_store_f64(phx_uniform(seed, offset, (uint64_t)i, 1, from, range), ub);
}
void phx_test_uniform_f16(uint64_t seed, uint64_t offset, int64_t n, double from, double range, const phx_ubound *ub, uint16_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = phx_store_f16(phx_uniform(seed, offset, (uint64_t)i, 0, from, range), ub);
}
void phx_test_uniform_bf16(uint64_t seed, uint64_t offset, int64_t n, double from, double range, const phx_ubound *ub, uint16_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = phx_store_bf16(phx_uniform(seed, offset, (uint64_t)i, 0, from, range), ub);
}
void phx_test_normal_f32(uint64_t seed, uint64_t offset, int64_t n, double mean, double std, float *out) {
    for (int64_t i = 0; i < n; i++) out[i] = (float)phx_normal_scaled(seed, offset, (uint64_t)i, 0, mean, std);
}
void phx_test_normal_f64(uint64_t seed, uint64_t offset, int64_t n, double mean, double std, double *out) {
    for (int64_t i = 0; i < n; i++) out[i] = phx_normal_scaled(seed, offset, (uint64_t)i, 1, mean, std);
}
void phx_test_exponential_f64(uint64_t seed, uint64_t offset, int64_t n, int wide, double lambd, double *out) {
    for (int64_t i = 0; i < n; i++) out[i] = phx_exponential(seed, offset, (uint64_t)i, wide, lambd);
}
void phx_test_bernoulli(uint64_t seed, uint64_t offset, int64_t n, double p, double *out) {
    for (int64_t i = 0; i < n; i++) out[i] = phx_bernoulli(seed, offset, (uint64_t)i, p);
}
void phx_test_integers(uint64_t seed, uint64_t offset, int64_t n, int64_t from, uint64_t range, int64_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = phx_integer(seed, offset, (uint64_t)i, from, range);
}
#endif /* PTL_PHILOX_HOST_TEST */
