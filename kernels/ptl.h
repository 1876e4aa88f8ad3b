/* ptl.h: what every pytorchlite CPU kernel sees of a tensor, plus scalar helpers.
 *
 * A kernel receives descriptors (data pointer with the storage offset applied, dtype,
 * ndim, sizes, strides in elements) and plain scalars. It knows nothing of Python.
 * The dtype and status codes and the descriptor come from generated/ptl_abi.h
 * (codegen/abi.py), which Python reads too.
 */
#ifndef PTL_H
#define PTL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ptl_common.h"   /* the ABI (dtype and status codes, ptl_tensor, ptl_scalar), bfloat16,
                             the math of pointwise bodies */

/* ---- float16: stored as 16 bits, computed in float, rounded on store --------------- */

static inline float ptl_h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalise */
            exp = 127 - 15 + 1;
            while ((man & 0x400) == 0) { man <<= 1; exp--; }
            man &= 0x3ff;
            bits = sign | (exp << 23) | (man << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t ptl_f2h(float f) {
    /* round to nearest even, with overflow to inf and correct subnormals */
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
    if (ax >= 0x477ff000u) /* rounds to >= 65520: inf */
        return (uint16_t)(sign | 0x7c00);
    if (ax < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        float a;
        memcpy(&a, &ax, 4);
        /* scale so that the subnormal unit is 1.0, and let the FPU round to even */
        float scaled = a * 16777216.0f; /* 2^24 */
        uint32_t m = (uint32_t)nearbyintf(scaled);
        return (uint16_t)(sign | m);
    }
    uint32_t mant_odd = (ax >> 13) & 1;
    ax += 0xc8000fffu + mant_odd; /* rebias exponent (-112 << 23) and round */
    return (uint16_t)(sign | (ax >> 13));
}

/* ---- math functions of pointwise bodies: the rest are in ptl_common.h --------------- */

static inline double ptl_erfinv_f64(double y) {
    /* Giles' single-precision-style initial guess refined by two Newton steps */
    if (y <= -1.0) return y == -1.0 ? -INFINITY : NAN;
    if (y >= 1.0) return y == 1.0 ? INFINITY : NAN;
    double w = -log((1.0 - y) * (1.0 + y)), x;
    if (w < 6.25) {
        w -= 3.125;
        x = -3.6444120640178196996e-21; x = -1.685059138182016589e-19 + x * w;
        x = 1.2858480715256400167e-18 + x * w; x = 1.115787767802518096e-17 + x * w;
        x = -1.333171662854620906e-16 + x * w; x = 2.0972767875968561637e-17 + x * w;
        x = 6.6376381343583238325e-15 + x * w; x = -4.0545662729752068639e-14 + x * w;
        x = -8.1519341976054721522e-14 + x * w; x = 2.6335093153082322977e-12 + x * w;
        x = -1.2975133253453532498e-11 + x * w; x = -5.4154120542946279317e-11 + x * w;
        x = 1.051212273321532285e-09 + x * w; x = -4.1126339803469836976e-09 + x * w;
        x = -2.9070369957882005086e-08 + x * w; x = 4.2347877827932403518e-07 + x * w;
        x = -1.3654692000834678645e-06 + x * w; x = -1.3882523362786468719e-05 + x * w;
        x = 0.0001867342080340571352 + x * w; x = -0.00074070253416626697512 + x * w;
        x = -0.0060336708714301490533 + x * w; x = 0.24015818242558961693 + x * w;
        x = 1.6536545626831027356 + x * w;
    } else if (w < 16.0) {
        w = sqrt(w) - 3.25;
        x = 2.2137376921775787049e-09; x = 9.0756561938885390979e-08 + x * w;
        x = -2.7517406297064545428e-07 + x * w; x = 1.8239629214389227755e-08 + x * w;
        x = 1.5027403968909827627e-06 + x * w; x = -4.013867526981545969e-06 + x * w;
        x = 2.9234449089955446044e-06 + x * w; x = 1.2475304481671778723e-05 + x * w;
        x = -4.7318229009055733981e-05 + x * w; x = 6.8284851459573175448e-05 + x * w;
        x = 2.4031110387097893999e-05 + x * w; x = -0.0003550375203628474796 + x * w;
        x = 0.00095328937973738049703 + x * w; x = -0.0016882755560235047313 + x * w;
        x = 0.0024914420961078508066 + x * w; x = -0.0037512085075692412107 + x * w;
        x = 0.005370914553590063617 + x * w; x = 1.0052589676941592334 + x * w;
        x = 3.0838856104922207635 + x * w;
    } else {
        w = sqrt(w) - 5.0;
        x = -2.7109920616438573243e-11; x = -2.5556418169965252055e-10 + x * w;
        x = 1.5076572693500548083e-09 + x * w; x = -3.7894654401267369937e-09 + x * w;
        x = 7.6157012080783393804e-09 + x * w; x = -1.4960026627149240478e-08 + x * w;
        x = 2.9147953450901080826e-08 + x * w; x = -6.7711997758452339498e-08 + x * w;
        x = 2.2900482228026654717e-07 + x * w; x = -9.9298272942317002539e-07 + x * w;
        x = 4.5260625972231537039e-06 + x * w; x = -1.9681778105531670567e-05 + x * w;
        x = 7.5995277030017761139e-05 + x * w; x = -0.00021503011930044477347 + x * w;
        x = -0.00013871931833623122026 + x * w; x = 1.0103004648645343977 + x * w;
        x = 4.8499064014085844221 + x * w;
    }
    x *= y;
    for (int k = 0; k < 2; k++) /* Newton on erf(x) - y */
        x -= (erf(x) - y) / (1.1283791670955126 * exp(-x * x));
    return x;
}
static inline float ptl_erfinv_f32(float y) { return (float)ptl_erfinv_f64((double)y); }

static inline double ptl_digamma_f64(double x) {
    if (x == 0) return signbit(x) ? INFINITY : -INFINITY;
    if (x < 0) {
        if (x == floor(x)) return NAN;
        return ptl_digamma_f64(1.0 - x) - M_PI / tan(M_PI * x);
    }
    double r = 0;
    while (x < 6) { r -= 1 / x; x += 1; }
    double f = 1 / (x * x);
    return r + log(x) - 0.5 / x
           - f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))));
}
static inline float ptl_digamma_f32(float x) { return (float)ptl_digamma_f64((double)x); }

/* ---- the pointwise iterator (runtime.c) -------------------------------------------- */

/* One inner loop: n elements; data[k] and strides[k] (in bytes) for operand k, output first. */
typedef void (*ptl_loop_fn)(char **data, const int64_t *strides, int64_t n, const ptl_scalar *sc);

int ptl_run_pointwise(int ntensors, const ptl_tensor *ts, ptl_loop_fn fn, const ptl_scalar *sc);
int ptl_run_contiguous(int ntensors, char **data, const int64_t *itemsizes, int64_t n,
                       ptl_loop_fn fn, const ptl_scalar *sc);

/* Hot loops are compiled three times and picked at load time (GCC function
 * multi-versioning), so shipped builds never use -march=native: x86-64-v4 (AVX-512),
 * x86-64-v3 (AVX2 with FMA: plain "avx2" leaves FMA out, and the float32 exp/log/tanh
 * polynomials ran at half speed without it) and baseline x86-64. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(PTL_NO_CLONES) && __GNUC__ >= 11
#define PTL_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(PTL_NO_CLONES)
/* GCC before 11 does not know the x86-64-v* levels */
#define PTL_HOT __attribute__((target_clones("avx2", "default")))
#else
#define PTL_HOT
#endif

/* Below this many elements a kernel runs on the calling thread alone. */
#define PTL_GRAIN 32768

#endif
