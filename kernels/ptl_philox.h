/* ptl_philox.h: the Philox4x32-10 generator and the arithmetic that turns its words into
 * uniform and normal numbers, written once for kernels/random.c (CPU) and
 * kernels/cuda/philox.cu (GPU), so a CUDA tensor filled after manual_seed(s) holds the
 * values a CPU tensor gets, bit for bit. The stream (which words element i reads) is
 * described at the top of random.c.
 *
 * Compiles as C11 and as CUDA C++ (see ptl_common.h, included first by ptl.h or
 * ptl_cuda.cuh). The float arithmetic here must never be contracted into fused
 * multiply-adds: the CPU build targets x86-64 and AVX2 without FMA, and NVRTC compiles
 * philox.cu with --fmad=false.
 */
#ifndef PTL_PHILOX_H
#define PTL_PHILOX_H

#include "ptl_common.h"

/* ---- Philox4x32-10 (Salmon et al., SC'11; constants from Random123) ------------------ */

#define PTL_PHILOX_M0 0xD2511F53u
#define PTL_PHILOX_M1 0xCD9E8D57u
#define PTL_PHILOX_W0 0x9E3779B9u
#define PTL_PHILOX_W1 0xBB67AE85u

typedef struct {
    uint32_t w[4];
} ptl_philox_block;

PTL_FN ptl_philox_block ptl_philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
    for (int r = 0; r < 10; r++) {
        if (r) {
            k0 += PTL_PHILOX_W0;
            k1 += PTL_PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)PTL_PHILOX_M0 * c0, p1 = (uint64_t)PTL_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    }
    ptl_philox_block o = {{c0, c1, c2, c3}};
    return o;
}

/* uniform_'s exclusive upper bound: a value that rounds up to `to` in the output dtype is
 * replaced by the largest value of that dtype below `to` (hi_d, hi_f, or hi_16 for float16
 * and bfloat16). random.c's make_upper_bound fills it in; for the GPU the host packs the
 * same layout (pytorchlite/cuda/_philox.py). */
typedef struct {
    double to;
    double hi_d;
    float hi_f;
    uint16_t hi_16;
} ptl_upper_bound;

/* ---- words to numbers -------------------------------------------------------------------- */

/* uniforms from words: [0, 1) with 24 or 53 bits; (0, 1) open for logarithms */
PTL_FN double ptl_u24(uint32_t w) { return (double)(w >> 8) * (1.0 / 16777216.0); }
PTL_FN double ptl_u53(uint64_t w) { return (double)(w >> 11) * (1.0 / 9007199254740992.0); }
PTL_FN double ptl_u32_open(uint32_t w) { return ((double)w + 0.5) * (1.0 / 4294967296.0); }
PTL_FN double ptl_u53_open(uint64_t w) { return ((double)(w >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

/* the high 64 bits of a * b (random integers: multiply-shift instead of a biased modulo) */
PTL_FN uint64_t ptl_mulhi64(uint64_t a, uint64_t b) {
#ifdef PTL_CUDA_DEVICE
    return __umul64hi(a, b);
#else
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
#endif
}

/* the top 64 bits of (hi * 2^64 + lo) * m, in 64-bit pieces (random integers over ranges
 * above 2^32 draw 128 bits) */
PTL_FN uint64_t ptl_mulhi128x64(uint64_t lo, uint64_t hi, uint64_t m) {
    uint64_t x_lo = hi * m, x_hi = ptl_mulhi64(hi, m), y_hi = ptl_mulhi64(lo, m);
    uint64_t s = x_lo + y_hi;
    return x_hi + (s < x_lo);
}

/* sin and cos of 2*pi*t for t in [0, 1), branch-free so the loop vectorises: t has at
 * most 24 bits, so 4t splits exactly into a quadrant q and a remainder in [-1/2, 1/2],
 * i.e. an angle in [-pi/4, pi/4] where Cephes' sinf/cosf polynomials hold (about 1 ulp). */
PTL_FN void ptl_sincos2pi(float t, float *s_out, float *c_out) {
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

/* Box-Muller in float from two words as 24-bit uniforms: the cos and sin halves of one
 * pair of N(0, 1) draws. u1 = 1 - U lies in (0, 1], so the logarithm is finite. */
PTL_FN void ptl_box_muller_f32(uint32_t w0, uint32_t w1, float *z_cos, float *z_sin) {
    float u1 = 1.0f - (float)(w0 >> 8) * (1.0f / 16777216.0f);
    float u2 = (float)(w1 >> 8) * (1.0f / 16777216.0f);
    float r = sqrtf(-2.0f * ptl_vlogf(u1));
    float sn, cs;
    ptl_sincos2pi(u2, &sn, &cs);
    *z_cos = r * cs;
    *z_sin = r * sn;
}

#endif
