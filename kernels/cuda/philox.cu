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
#else
#include "../ptl.h"
#endif
#include "ptl_philox.h"   /* the generator and the word -> number arithmetic, shared with random.c */

/* ---- the word stream, element by element ------------------------------------------------ */

/* word j of the request starting at `offset` (counter offset + j / 4, lane j % 4) */
PTL_FN uint32_t phx_word(uint64_t seed, uint64_t offset, uint64_t j) {
    uint64_t c = offset + (j >> 2);
    ptl_philox_block b = ptl_philox((uint32_t)c, (uint32_t)(c >> 32), 0, 0, (uint32_t)seed, (uint32_t)(seed >> 32));
    return b.w[j & 3];
}
PTL_FN uint64_t phx_pair(uint64_t seed, uint64_t offset, uint64_t j) {   /* words j, j + 1 (j even) */
    uint64_t c = offset + (j >> 2);
    ptl_philox_block b = ptl_philox((uint32_t)c, (uint32_t)(c >> 32), 0, 0, (uint32_t)seed, (uint32_t)(seed >> 32));
    int l = (int)(j & 3);
    return ((uint64_t)b.w[l + 1] << 32) | b.w[l];
}

/* ---- one element of each distribution ------------------------------------------------ */

/* uniform [from, from + range) before the dtype's upper-bound correction; wide = float64 */
PTL_FN double phx_uniform(uint64_t seed, uint64_t offset, uint64_t i, int wide, double from, double range) {
    if (wide) return from + ptl_u53(phx_pair(seed, offset, 2 * i)) * range;
    return from + ptl_u24(phx_word(seed, offset, i)) * range;
}

/* N(0, 1): element i is the cos (even) or sin (odd) half of Box-Muller pair i / 2 */
PTL_FN double phx_normal(uint64_t seed, uint64_t offset, uint64_t i, int wide) {
    uint64_t p = i >> 1;
    if (wide) {
        double u1 = 1.0 - ptl_u53(phx_pair(seed, offset, 4 * p)), u2 = ptl_u53(phx_pair(seed, offset, 4 * p + 2));
        double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
        return (i & 1) ? r * sin(th) : r * cos(th);
    }
    uint64_t w = phx_pair(seed, offset, 2 * p);
    float zc, zs;
    ptl_box_muller_f32((uint32_t)w, (uint32_t)(w >> 32), &zc, &zs);
    return (double)((i & 1) ? zs : zc);
}

/* mean + std * N(0, 1), skipping the transform for (0, 1) as random.c does (keeps -0.0) */
PTL_FN double phx_normal_scaled(uint64_t seed, uint64_t offset, uint64_t i, int wide, double mean, double std) {
    double z = phx_normal(seed, offset, i, wide);
    return (mean != 0.0 || std != 1.0) ? mean + std * z : z;
}

PTL_FN double phx_exponential(uint64_t seed, uint64_t offset, uint64_t i, int wide, double lambd) {
    if (wide) return -log(ptl_u53_open(phx_pair(seed, offset, 2 * i))) / lambd;
    return -log(ptl_u32_open(phx_word(seed, offset, i))) / lambd;
}

PTL_FN double phx_bernoulli(uint64_t seed, uint64_t offset, uint64_t i, double p) {
    double u = (double)phx_word(seed, offset, i) * (1.0 / 4294967296.0);
    return u < p;
}

/* from + a draw in [0, range); range 0 stands for 2^64 (every int64) */
PTL_FN int64_t phx_integer(uint64_t seed, uint64_t offset, uint64_t i, int64_t from, uint64_t range) {
    if (range != 0 && range <= 0x100000000ull)
        return (int64_t)((uint64_t)from + ptl_mulhi64(phx_pair(seed, offset, 2 * i), range));
    uint64_t lo = phx_pair(seed, offset, 4 * i), hi = phx_pair(seed, offset, 4 * i + 2);
    return (int64_t)((uint64_t)from + (range == 0 ? lo : ptl_mulhi128x64(lo, hi, range)));
}

/* ---- stores (random.c's store_chunk / store_chunk_i64) ------------------------------- */

/* uniform_'s upper bound (ptl_upper_bound) is filled in by the host as random.c's
 * make_upper_bound does */
PTL_FN float phx_store_f32(double v, const ptl_upper_bound *ub) {
    float f = (float)v;
    return (ub && (double)f >= ub->to) ? ub->hi_f : f;
}
PTL_FN double phx_store_f64(double v, const ptl_upper_bound *ub) { return (ub && v >= ub->to) ? ub->hi_d : v; }
PTL_FN uint16_t phx_store_f16(double v, const ptl_upper_bound *ub) {
    uint16_t h = ptl_f2h((float)v);
    return (ub && (double)ptl_h2f(h) >= ub->to) ? ub->hi_16 : h;
}
PTL_FN uint16_t phx_store_bf16(double v, const ptl_upper_bound *ub) {
    uint16_t h = ptl_f2bf((float)v);
    return (ub && (double)ptl_bf2f(h) >= ub->to) ? ub->hi_16 : h;
}

#ifdef __CUDACC__
/* ---- CUDA kernels ----------------------------------------------------------------------- */

#define PTL_BLOCK 256

/* double-valued results into each dtype */
#define PHX_STORE_D(N, S, EXPR)                                                            \
    static __device__ __forceinline__ S phx_put_##N(double v, const ptl_upper_bound *ub) { (void)ub; return EXPR; }
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

#define DEF_RANDOM(N, S, WIDE)                                                                                   \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_uniform_##N(                                  \
            int64_t n, S *o, const ptl_iter64<1> it, int contig, uint64_t seed, uint64_t offset, double from,    \
            double range, const ptl_upper_bound ub) {                                                            \
        PHX_LOOP(o[off[0]] = phx_put_##N(phx_uniform(seed, offset, (uint64_t)i, WIDE, from, range), &ub))        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_normal_##N(                                   \
            int64_t n, S *o, const ptl_iter64<1> it, int contig, uint64_t seed, uint64_t offset, double mean,    \
            double std) {                                                                                        \
        PHX_LOOP(o[off[0]] = phx_put_##N(phx_normal_scaled(seed, offset, (uint64_t)i, WIDE, mean, std), 0))      \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_exponential_##N(                              \
            int64_t n, S *o, const ptl_iter64<1> it, int contig, uint64_t seed, uint64_t offset, double lambd) { \
        PHX_LOOP(o[off[0]] = phx_put_##N(phx_exponential(seed, offset, (uint64_t)i, WIDE, lambd), 0))            \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_bernoulli_##N(                                \
            int64_t n, S *o, const ptl_iter64<1> it, int contig, uint64_t seed, uint64_t offset, double p) {     \
        PHX_LOOP(o[off[0]] = phx_put_##N(phx_bernoulli(seed, offset, (uint64_t)i, p), 0))                        \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_integers_##N(                                 \
            int64_t n, S *o, const ptl_iter64<1> it, int contig, uint64_t seed, uint64_t offset, int64_t from,   \
            uint64_t range) {                                                                                    \
        PHX_LOOP(o[off[0]] = phx_puti_##N(phx_integer(seed, offset, (uint64_t)i, from, range)))                  \
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
void phx_test_uniform_f32(uint64_t seed, uint64_t offset, int64_t n, double from, double range, const ptl_upper_bound *ub, float *out) {
    for (int64_t i = 0; i < n; i++) out[i] = phx_store_f32(phx_uniform(seed, offset, (uint64_t)i, 0, from, range), ub);
}
void phx_test_uniform_f64(uint64_t seed, uint64_t offset, int64_t n, double from, double range, const ptl_upper_bound *ub, double *out) {
    for (int64_t i = 0; i < n; i++) out[i] = phx_store_f64(phx_uniform(seed, offset, (uint64_t)i, 1, from, range), ub);
}
void phx_test_uniform_f16(uint64_t seed, uint64_t offset, int64_t n, double from, double range, const ptl_upper_bound *ub, uint16_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = phx_store_f16(phx_uniform(seed, offset, (uint64_t)i, 0, from, range), ub);
}
void phx_test_uniform_bf16(uint64_t seed, uint64_t offset, int64_t n, double from, double range, const ptl_upper_bound *ub, uint16_t *out) {
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
