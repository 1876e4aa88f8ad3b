/* ptl_common.h: what the C kernels (kernels/ptl.h) and the CUDA kernels
 * (kernels/cuda/ptl_cuda.cuh) share, written once: fixed-width types, bit casts, bfloat16
 * conversions, and the math functions of pointwise bodies, ptl_<name>_<suffix>, with the
 * same names and semantics on both sides.
 *
 * It compiles as C11 (gcc, through kernels/ptl.h) and as CUDA C++ under NVRTC (through
 * ptl_cuda.cuh; pytorchlite/cuda/_nvrtc.py puts kernels/ on the include path). PTL_FN is
 * the qualifier of every function here. Where the two sides really differ, the difference
 * is named once in the platform section below:
 *   - float32 exp / log / tanh: the CPU's branch-free ptl_vexpf / ptl_vlogf / ptl_vtanhf
 *     (so GCC vectorises the loops); the GPU's own expf / logf / tanhf;
 *   - isinf / isfinite / signbit: libm's macros on the CPU; on the GPU, comparisons that
 *     stay in float registers (CUDA's isinf goes through the integer bits);
 *   - NVRTC has no C library headers: the types, INFINITY and NAN are spelled out.
 * Written per side instead (kernels/ptl.h, ptl_cuda.cuh): float16 conversions (one PTX
 * instruction on the GPU, software on the CPU), erfinv (CUDA has its own) and digamma
 * (the CPU recurses for the reflection, the GPU folds it into the loop: the sums round
 * differently, so one shared version would change one side's numbers).
 */
#ifndef PTL_COMMON_H
#define PTL_COMMON_H

/* ---- platform -------------------------------------------------------------------------- */

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define PTL_CUDA_DEVICE 1
#endif

#ifdef PTL_CUDA_DEVICE

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;

#define PTL_FN static __device__ __forceinline__
#define PTL_INF_F __int_as_float(0x7f800000)
#define PTL_NAN_F __int_as_float(0x7fffffff)
#define PTL_INF_D __longlong_as_double(0x7ff0000000000000LL)
#define PTL_NAN_D __longlong_as_double(0x7fffffffffffffffLL)

PTL_FN float ptl_bits2f(uint32_t u) { return __uint_as_float(u); }
PTL_FN uint32_t ptl_f2bits(float f) { return __float_as_uint(f); }

#define PTL_EXPF expf
#define PTL_LOGF logf
#define PTL_TANHF tanhf

PTL_FN bool ptl_isinf(float x) { return fabsf(x) == PTL_INF_F; }
PTL_FN bool ptl_isinf(double x) { return fabs(x) == PTL_INF_D; }
PTL_FN bool ptl_isfinite(float x) { return fabsf(x) < PTL_INF_F; }
PTL_FN bool ptl_isfinite(double x) { return fabs(x) < PTL_INF_D; }
PTL_FN bool ptl_signbit(float x) { return __float_as_uint(x) >> 31; }
PTL_FN bool ptl_signbit(double x) { return (unsigned long long)__double_as_longlong(x) >> 63; }

/* x < 0 and x == -1, with no "pointless comparison" warning for unsigned types */
template <typename T> __device__ __forceinline__ bool ptl_neg(T x) { return x < 0; }
template <> __device__ __forceinline__ bool ptl_neg<uint8_t>(uint8_t) { return false; }
template <typename T> __device__ __forceinline__ bool ptl_minus1(T x) { return x == -1; }
template <> __device__ __forceinline__ bool ptl_minus1<uint8_t>(uint8_t) { return false; }

#else /* C */

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define PTL_FN static inline
#define PTL_INF_F INFINITY
#define PTL_NAN_F NAN
#define PTL_INF_D ((double)INFINITY)
#define PTL_NAN_D ((double)NAN)

PTL_FN float ptl_bits2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
PTL_FN uint32_t ptl_f2bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

#define PTL_EXPF ptl_vexpf
#define PTL_LOGF ptl_vlogf
#define PTL_TANHF ptl_vtanhf

#define ptl_isinf(x) isinf(x)
#define ptl_isfinite(x) isfinite(x)
#define ptl_signbit(x) signbit(x)

#define ptl_neg(x) ((x) < 0)
#define ptl_minus1(x) ((x) == -1)

#endif

/* dtype and status codes, PTL_MAX_DIMS, ptl_scalar and ptl_tensor: declared once in
 * codegen/abi.py, shared with Python */
#include "ptl_abi.h"

/* ---- bfloat16: stored as 16 bits, computed in float, rounded on store ------------------ */

PTL_FN float ptl_bf2f(uint16_t h) { return ptl_bits2f((uint32_t)h << 16); }

PTL_FN uint16_t ptl_f2bf(float f) {
    uint32_t x = ptl_f2bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* nan: keep it a quiet nan */
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1); /* round to nearest even */
    return (uint16_t)(x >> 16);
}

/* ---- vectorisable float32 exp / log / tanh -----------------------------------------
 * libm's expf/logf are scalar calls, which stop GCC from vectorising a loop; these are
 * branch-free (selects only) so the pointwise loops vectorise, at about 1 ulp. The CPU's
 * exp / log / tanh use them; on the GPU only the random streams do (ptl_philox.h), to
 * reproduce the CPU's numbers. */

PTL_FN float ptl_vexpf(float x) {
    /* e^x = 2^n * e^r with n = round(x / ln2), |r| <= ln2 / 2 */
    /* (written so that nan clamps too: n then stays finite, and its conversion to int is
     * defined; the result is x itself below) */
    float xc = x < 88.7228394f ? (x > -103.972084f ? x : -103.972084f) : 88.7228394f;
    float t = xc * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23: rounds to an integer */
    float n = t - 12582912.0f;
    float r = xc - n * 0.693359375f;          /* ln2, split in a high and a low part */
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;                /* Cephes expf polynomial */
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t ni = (int32_t)n;
    int32_t n1 = ni >> 1, n2 = ni - n1;        /* two factors keep subnormal results exact */
    float s1 = ptl_bits2f((uint32_t)(n1 + 127) << 23), s2 = ptl_bits2f((uint32_t)(n2 + 127) << 23);
    float y = p * s1 * s2;
    y = x > 88.7228394f ? PTL_INF_F : y;
    y = x < -103.972084f ? 0.0f : y;
    return x != x ? x : y;
}

PTL_FN float ptl_vlogf(float x) {
    /* log(x) = e * ln2 + log(m), m in [sqrt(1/2), sqrt(2)) */
    uint32_t u = ptl_f2bits(x);
    int sub = u < 0x00800000u;                  /* subnormal: scale up by 2^23 first */
    float xs = sub ? x * 8388608.0f : x;
    u = ptl_f2bits(xs);
    int32_t e = (int32_t)((u >> 23) & 0xff) - 127 - (sub ? 23 : 0);
    float m = ptl_bits2f((u & 0x007fffffu) | 0x3f800000u);   /* [1, 2) */
    int big = m > 1.41421356f;
    m = big ? m * 0.5f : m;
    e = big ? e + 1 : e;
    float f = m - 1.0f;
    float z = f * f;
    float p = 7.0376836292e-2f;                /* Cephes logf polynomial */
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
    y = x == 0.0f ? -PTL_INF_F : y;
    y = x < 0.0f ? PTL_NAN_F : y;
    y = x == PTL_INF_F ? PTL_INF_F : y;
    return x != x ? x : y;
}

PTL_FN float ptl_vtanhf(float x) {
    float a = fabsf(x);
    /* small |x|: odd polynomial (no cancellation); otherwise 1 - 2 / (e^{2|x|} + 1) */
    float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = x + x * z * p;
    float e = ptl_vexpf(2.0f * (a > 9.0f ? 9.0f : a));
    float big = 1.0f - 2.0f / (e + 1.0f);
    big = copysignf(a > 9.0f ? 1.0f : big, x);
    return a < 0.625f ? small : big;
}

/* ---- float math: ptl_<name>_f32 / ptl_<name>_f64 ------------------------------------ */

#define PTL_FLOAT_UNARY(name, f32expr, f64expr)                \
    PTL_FN float ptl_##name##_f32(float x) { return f32expr; } \
    PTL_FN double ptl_##name##_f64(double x) { return f64expr; }

PTL_FLOAT_UNARY(exp, PTL_EXPF(x), exp(x))
PTL_FLOAT_UNARY(exp2, exp2f(x), exp2(x))
PTL_FLOAT_UNARY(expm1, expm1f(x), expm1(x))
PTL_FLOAT_UNARY(log, PTL_LOGF(x), log(x))
PTL_FLOAT_UNARY(log2, log2f(x), log2(x))
PTL_FLOAT_UNARY(log10, log10f(x), log10(x))
PTL_FLOAT_UNARY(log1p, log1pf(x), log1p(x))
PTL_FLOAT_UNARY(sqrt, sqrtf(x), sqrt(x))
PTL_FLOAT_UNARY(rsqrt, 1.0f / sqrtf(x), 1.0 / sqrt(x))
PTL_FLOAT_UNARY(sin, sinf(x), sin(x))
PTL_FLOAT_UNARY(cos, cosf(x), cos(x))
PTL_FLOAT_UNARY(tan, tanf(x), tan(x))
PTL_FLOAT_UNARY(asin, asinf(x), asin(x))
PTL_FLOAT_UNARY(acos, acosf(x), acos(x))
PTL_FLOAT_UNARY(atan, atanf(x), atan(x))
PTL_FLOAT_UNARY(sinh, sinhf(x), sinh(x))
PTL_FLOAT_UNARY(cosh, coshf(x), cosh(x))
PTL_FLOAT_UNARY(tanh, PTL_TANHF(x), tanh(x))
PTL_FLOAT_UNARY(asinh, asinhf(x), asinh(x))
PTL_FLOAT_UNARY(acosh, acoshf(x), acosh(x))
PTL_FLOAT_UNARY(atanh, atanhf(x), atanh(x))
PTL_FLOAT_UNARY(erf, erff(x), erf(x))
PTL_FLOAT_UNARY(erfc, erfcf(x), erfc(x))
PTL_FLOAT_UNARY(lgamma, lgammaf(x), lgamma(x))
PTL_FLOAT_UNARY(sigmoid, 1.0f / (1.0f + PTL_EXPF(-x)), 1.0 / (1.0 + exp(-x)))
PTL_FLOAT_UNARY(floor, floorf(x), floor(x))
PTL_FLOAT_UNARY(ceil, ceilf(x), ceil(x))
PTL_FLOAT_UNARY(round, nearbyintf(x), nearbyint(x)) /* half to even, as PyTorch */
PTL_FLOAT_UNARY(trunc, truncf(x), trunc(x))
PTL_FLOAT_UNARY(frac, x - truncf(x), x - trunc(x))
PTL_FLOAT_UNARY(abs, fabsf(x), fabs(x))
PTL_FLOAT_UNARY(sign, (float)((x > 0) - (x < 0)) + (x - x), (double)((x > 0) - (x < 0)) + (x - x))
PTL_FLOAT_UNARY(isnan, (float)(x != x), (double)(x != x))
PTL_FLOAT_UNARY(isinf, (float)(ptl_isinf(x) != 0), (double)(ptl_isinf(x) != 0))
PTL_FLOAT_UNARY(isposinf, (float)(x == PTL_INF_F), (double)(x == PTL_INF_D))
PTL_FLOAT_UNARY(isneginf, (float)(x == -PTL_INF_F), (double)(x == -PTL_INF_D))
PTL_FLOAT_UNARY(isfinite, (float)(ptl_isfinite(x) != 0), (double)(ptl_isfinite(x) != 0))
PTL_FLOAT_UNARY(signbit, (float)(ptl_signbit(x) != 0), (double)(ptl_signbit(x) != 0))

/* Binary float functions. maximum/minimum propagate NaN (PyTorch); fmax/fmin ignore it. */
#define PTL_FLOAT_BINARY(name, e32, e64)                             \
    PTL_FN float ptl_##name##_f32(float a, float b) { return e32; } \
    PTL_FN double ptl_##name##_f64(double a, double b) { return e64; }

PTL_FLOAT_BINARY(atan2, atan2f(a, b), atan2(a, b))
PTL_FLOAT_BINARY(pow, powf(a, b), pow(a, b))
PTL_FLOAT_BINARY(fmod, fmodf(a, b), fmod(a, b))
PTL_FLOAT_BINARY(copysign, copysignf(a, b), copysign(a, b))
PTL_FLOAT_BINARY(hypot, hypotf(a, b), hypot(a, b))
PTL_FLOAT_BINARY(nextafter, nextafterf(a, b), nextafter(a, b))
PTL_FLOAT_BINARY(maximum, (a != a || b != b) ? (a + b) : (a > b ? a : b),
                 (a != a || b != b) ? (a + b) : (a > b ? a : b))
PTL_FLOAT_BINARY(minimum, (a != a || b != b) ? (a + b) : (a < b ? a : b),
                 (a != a || b != b) ? (a + b) : (a < b ? a : b))
PTL_FLOAT_BINARY(fmax, fmaxf(a, b), fmax(a, b))
PTL_FLOAT_BINARY(fmin, fminf(a, b), fmin(a, b))
PTL_FLOAT_BINARY(xlogy, (b != b) ? b : (a == 0 ? 0.0f : a * logf(b)),
                 (b != b) ? b : (a == 0 ? 0.0 : a * log(b)))
PTL_FLOAT_BINARY(logaddexp,
                 (ptl_isinf(a) && a == b) ? a : fmaxf(a, b) + log1pf(expf(-fabsf(a - b))),
                 (ptl_isinf(a) && a == b) ? a : fmax(a, b) + log1p(exp(-fabs(a - b))))
PTL_FLOAT_BINARY(logaddexp2,
                 (ptl_isinf(a) && a == b) ? a : fmaxf(a, b) + log1pf(exp2f(-fabsf(a - b))) / 0.69314718f,
                 (ptl_isinf(a) && a == b) ? a : fmax(a, b) + log1p(exp2(-fabs(a - b))) / 0.6931471805599453)
PTL_FLOAT_BINARY(truncdiv, truncf(a / b), trunc(a / b))
PTL_FLOAT_BINARY(clamp_min, (a != a) ? a : (a < b ? b : a), (a != a) ? a : (a < b ? b : a))
PTL_FLOAT_BINARY(clamp_max, (a != a) ? a : (a > b ? b : a), (a != a) ? a : (a > b ? b : a))

/* Python-style remainder: the sign follows the divisor. Floor division as PyTorch
 * computes it: (a - remainder) / b, corrected to the floor. */
#define PTL_FLOAT_DIVMOD(T, sfx, FMOD, FLOOR, COPYSIGN)                 \
    PTL_FN T ptl_remainder_##sfx(T a, T b) {                            \
        T m = FMOD(a, b);                                               \
        return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;            \
    }                                                                   \
    PTL_FN T ptl_floordiv_##sfx(T a, T b) {                             \
        if (b == 0) return a / b;                                       \
        T m = FMOD(a, b);                                               \
        T d = (a - m) / b;                                              \
        if (m != 0 && ((b < 0) != (m < 0))) d -= (T)1;                  \
        T fd = FLOOR(d);                                                \
        if (d - fd > (T)0.5) fd += (T)1;                                \
        return (d == 0) ? COPYSIGN((T)0, a / b) : fd;                   \
    }
PTL_FLOAT_DIVMOD(float, f32, fmodf, floorf, copysignf)
PTL_FLOAT_DIVMOD(double, f64, fmod, floor, copysign)

PTL_FN float ptl_round_decimals_f32(float x, float d) {
    float s = powf(10.0f, d);
    return nearbyintf(x * s) / s;
}
PTL_FN double ptl_round_decimals_f64(double x, double d) {
    double s = pow(10.0, d);
    return nearbyint(x * s) / s;
}
PTL_FN float ptl_clamp_f32(float x, float lo, float hi) {
    return (x != x) ? x : (x < lo ? lo : (x > hi ? hi : x));
}
PTL_FN double ptl_clamp_f64(double x, double lo, double hi) {
    return (x != x) ? x : (x < lo ? lo : (x > hi ? hi : x));
}
/* lerp as PyTorch: two formulas depending on |weight| for accuracy at the ends. */
PTL_FN float ptl_lerp_f32(float a, float b, float w) {
    return fabsf(w) < 0.5f ? a + w * (b - a) : b - (b - a) * (1.0f - w);
}
PTL_FN double ptl_lerp_f64(double a, double b, double w) {
    return fabs(w) < 0.5 ? a + w * (b - a) : b - (b - a) * (1.0 - w);
}

/* ---- integer and bool versions ---------------------------------------------------- */

/* (uint8 promotes to int in `ptl_minus1(b)`, which never holds) */
#define PTL_INT_FUNCS(T, sfx, UT)                                                              \
    PTL_FN T ptl_abs_##sfx(T x) { return ptl_neg(x) ? (T)(0 - (UT)x) : x; }                     \
    PTL_FN T ptl_sign_##sfx(T x) { return (T)((x > 0) - ptl_neg(x)); }                          \
    PTL_FN T ptl_floor_##sfx(T x) { return x; }                                                 \
    PTL_FN T ptl_ceil_##sfx(T x) { return x; }                                                  \
    PTL_FN T ptl_round_##sfx(T x) { return x; }                                                 \
    PTL_FN T ptl_trunc_##sfx(T x) { return x; }                                                 \
    PTL_FN T ptl_isnan_##sfx(T x) { (void)x; return 0; }                                        \
    PTL_FN T ptl_isinf_##sfx(T x) { (void)x; return 0; }                                        \
    PTL_FN T ptl_isposinf_##sfx(T x) { (void)x; return 0; }                                     \
    PTL_FN T ptl_isneginf_##sfx(T x) { (void)x; return 0; }                                     \
    PTL_FN T ptl_isfinite_##sfx(T x) { (void)x; return 1; }                                     \
    PTL_FN T ptl_signbit_##sfx(T x) { return (T)ptl_neg(x); }                                   \
    PTL_FN T ptl_maximum_##sfx(T a, T b) { return a > b ? a : b; }                              \
    PTL_FN T ptl_minimum_##sfx(T a, T b) { return a < b ? a : b; }                              \
    PTL_FN T ptl_fmax_##sfx(T a, T b) { return a > b ? a : b; }                                 \
    PTL_FN T ptl_fmin_##sfx(T a, T b) { return a < b ? a : b; }                                 \
    PTL_FN T ptl_clamp_min_##sfx(T a, T b) { return a < b ? b : a; }                           \
    PTL_FN T ptl_clamp_max_##sfx(T a, T b) { return a > b ? b : a; }                           \
    PTL_FN T ptl_clamp_##sfx(T x, T lo, T hi) { return x < lo ? lo : (x > hi ? hi : x); }        \
    /* division by zero is checked before the kernel runs (it raises on the CPU, as in    \
     * PyTorch; CUDA gives 0) */                                                               \
    PTL_FN T ptl_truncdiv_##sfx(T a, T b) {                                                     \
        if (b == 0) return 0;                                                                  \
        if (ptl_minus1(b)) return (T)(0 - (UT)a); /* INT_MIN / -1 wraps instead of trapping */ \
        return (T)(a / b);                                                                     \
    }                                                                                          \
    PTL_FN T ptl_fmod_##sfx(T a, T b) {                                                         \
        if (b == 0 || ptl_minus1(b)) return 0;                                                 \
        return (T)(a % b);                                                                     \
    }                                                                                          \
    PTL_FN T ptl_remainder_##sfx(T a, T b) {                                                    \
        if (b == 0 || ptl_minus1(b)) return 0;                                                 \
        T r = (T)(a % b);                                                                      \
        if (r != 0 && (ptl_neg(r) != ptl_neg(b))) r = (T)(r + b);                              \
        return r;                                                                              \
    }                                                                                          \
    PTL_FN T ptl_floordiv_##sfx(T a, T b) {                                                     \
        if (b == 0) return 0;                                                                  \
        if (ptl_minus1(b)) return (T)(0 - (UT)a);                                              \
        T q = (T)(a / b);                                                                      \
        if ((a % b != 0) && (ptl_neg(a) != ptl_neg(b))) q = (T)(q - 1);                        \
        return q;                                                                              \
    }                                                                                          \
    PTL_FN T ptl_pow_##sfx(T base, T e) {                                                       \
        if (ptl_neg(e)) {                                                                      \
            if (base == 1) return 1;                                                           \
            if (ptl_minus1(base)) return (e & 1) ? (T)-1 : (T)1;                               \
            return 0;                                                                          \
        }                                                                                      \
        UT result = 1, b = (UT)base;                                                           \
        while (e) {                                                                            \
            if (e & 1) result = (UT)(result * b);                                              \
            e = (T)(e >> 1);                                                                   \
            b = (UT)(b * b);                                                                   \
        }                                                                                      \
        return (T)result;                                                                      \
    }

/* UT is the unsigned type the arithmetic wraps in: at least as wide as int, since a
 * uint8_t or uint16_t promotes to (signed) int, where 65535 * 65535 overflows */
PTL_INT_FUNCS(int8_t, i8, uint32_t)
PTL_INT_FUNCS(int16_t, i16, uint32_t)
PTL_INT_FUNCS(int32_t, i32, uint32_t)
PTL_INT_FUNCS(int64_t, i64, uint64_t)
PTL_INT_FUNCS(uint8_t, u8, uint32_t)

PTL_FN bool ptl_sign_b8(bool x) { return x; }
PTL_FN bool ptl_isnan_b8(bool x) { (void)x; return 0; }
PTL_FN bool ptl_isinf_b8(bool x) { (void)x; return 0; }
PTL_FN bool ptl_isposinf_b8(bool x) { (void)x; return 0; }
PTL_FN bool ptl_isneginf_b8(bool x) { (void)x; return 0; }
PTL_FN bool ptl_isfinite_b8(bool x) { (void)x; return 1; }
PTL_FN bool ptl_signbit_b8(bool x) { (void)x; return 0; }
PTL_FN bool ptl_maximum_b8(bool a, bool b) { return a || b; }
PTL_FN bool ptl_minimum_b8(bool a, bool b) { return a && b; }
PTL_FN bool ptl_fmax_b8(bool a, bool b) { return a || b; }
PTL_FN bool ptl_fmin_b8(bool a, bool b) { return a && b; }

/* ---- bit shifts as PyTorch defines them ------------------------------------------------
 * C leaves shifts by a negative amount or by >= the bit width undefined; PyTorch gives
 * 0 for such left shifts, and for right shifts the sign fill (signed) or 0 (unsigned). */
#define PTL_SHIFT_FUNCS(T, sfx, UT, SIGNED)                                                    \
    PTL_FN T ptl_lshift_##sfx(T a, T b) {                                                      \
        if ((UT)b >= sizeof(T) * 8) return 0;                                                  \
        return (T)((UT)a << b);                                                                \
    }                                                                                          \
    PTL_FN T ptl_rshift_##sfx(T a, T b) {                                                      \
        const UT max_shift = (UT)(sizeof(T) * 8 - (SIGNED));                                   \
        if ((UT)b >= max_shift) return SIGNED ? (T)(a >> (sizeof(T) * 8 - 1)) : (T)0;          \
        return (T)(a >> b);                                                                    \
    }
/* (UT as above: (uint16_t)-1 << 15 would be an int overflow) */
PTL_SHIFT_FUNCS(int8_t, i8, uint32_t, 1)
PTL_SHIFT_FUNCS(int16_t, i16, uint32_t, 1)
PTL_SHIFT_FUNCS(int32_t, i32, uint32_t, 1)
PTL_SHIFT_FUNCS(int64_t, i64, uint64_t, 1)
PTL_SHIFT_FUNCS(uint8_t, u8, uint32_t, 0)

#endif
