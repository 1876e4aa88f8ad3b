/* ptl.h: what every pytorchlite CPU kernel sees of a tensor, plus scalar helpers.
 *
 * A kernel receives descriptors (data pointer with the storage offset applied, dtype,
 * ndim, sizes, strides in elements) and plain scalars. It knows nothing of Python.
 * The dtype codes match pytorchlite/_dtype.py.
 */
#ifndef PTL_H
#define PTL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define PTL_MAX_DIMS 16

enum ptl_dtype {
    PTL_BOOL = 0, PTL_U8 = 1, PTL_I8 = 2, PTL_I16 = 3, PTL_I32 = 4, PTL_I64 = 5,
    PTL_F16 = 6, PTL_BF16 = 7, PTL_F32 = 8, PTL_F64 = 9, PTL_NUM_DTYPES = 10
};

/* Error codes returned by kernels; Python turns them into exceptions that name the op. */
enum ptl_status {
    PTL_OK = 0, PTL_ERR_DTYPE = 1, PTL_ERR_NDIM = 2, PTL_ERR_ZERO_DIV = 3, PTL_ERR_ALLOC = 4,
    PTL_ERR_INDEX = 5, PTL_ERR_ARG = 6
};

typedef struct {
    void *data;
    int32_t dtype;
    int32_t ndim;
    int64_t sizes[PTL_MAX_DIMS];
    int64_t strides[PTL_MAX_DIMS];
} ptl_tensor;

/* A Python scalar as a kernel argument: both views, so integer kernels never go
 * through double (int64 values above 2^53 stay exact). */
typedef struct {
    double d;
    int64_t i;
} ptl_scalar;

static const int ptl_itemsize[PTL_NUM_DTYPES] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};

/* ---- float16 / bfloat16: stored as 16 bits, computed in float, rounded on store ---- */

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

static inline float ptl_bf2f(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t ptl_f2bf(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* nan: keep it a quiet nan */
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1); /* round to nearest even */
    return (uint16_t)(x >> 16);
}

/* ---- math functions used by pointwise bodies: ptl_<name>_<suffix> ---------------- */

/* ---- vectorisable float32 exp / log / tanh -----------------------------------------
 * libm's expf/logf are scalar calls, which stop GCC from vectorising a loop; these are
 * branch-free (selects only) so the pointwise loops vectorise, at about 1 ulp. */

static inline float ptl_bits2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t ptl_f2bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static inline float ptl_vexpf(float x) {
    /* e^x = 2^n * e^r with n = round(x / ln2), |r| <= ln2 / 2 */
    float xc = x > 88.7228394f ? 88.7228394f : (x < -103.972084f ? -103.972084f : x);
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
    y = x > 88.7228394f ? INFINITY : y;
    y = x < -103.972084f ? 0.0f : y;
    return x != x ? x : y;
}

static inline float ptl_vlogf(float x) {
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
    y = x == 0.0f ? -INFINITY : y;
    y = x < 0.0f ? NAN : y;
    y = x == INFINITY ? INFINITY : y;
    return x != x ? x : y;
}

static inline float ptl_vtanhf(float x) {
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

#define PTL_FLOAT_UNARY(name, f32expr, f64expr)                                   \
    static inline float ptl_##name##_f32(float x) { return f32expr; }             \
    static inline double ptl_##name##_f64(double x) { return f64expr; }

PTL_FLOAT_UNARY(exp, ptl_vexpf(x), exp(x))
PTL_FLOAT_UNARY(exp2, exp2f(x), exp2(x))
PTL_FLOAT_UNARY(expm1, expm1f(x), expm1(x))
PTL_FLOAT_UNARY(log, ptl_vlogf(x), log(x))
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
PTL_FLOAT_UNARY(tanh, ptl_vtanhf(x), tanh(x))
PTL_FLOAT_UNARY(asinh, asinhf(x), asinh(x))
PTL_FLOAT_UNARY(acosh, acoshf(x), acosh(x))
PTL_FLOAT_UNARY(atanh, atanhf(x), atanh(x))
PTL_FLOAT_UNARY(erf, erff(x), erf(x))
PTL_FLOAT_UNARY(erfc, erfcf(x), erfc(x))
PTL_FLOAT_UNARY(lgamma, lgammaf(x), lgamma(x))
PTL_FLOAT_UNARY(sigmoid, 1.0f / (1.0f + ptl_vexpf(-x)), 1.0 / (1.0 + exp(-x)))
PTL_FLOAT_UNARY(floor, floorf(x), floor(x))
PTL_FLOAT_UNARY(ceil, ceilf(x), ceil(x))
PTL_FLOAT_UNARY(round, nearbyintf(x), nearbyint(x)) /* half to even, as PyTorch */
PTL_FLOAT_UNARY(trunc, truncf(x), trunc(x))
PTL_FLOAT_UNARY(frac, x - truncf(x), x - trunc(x))
PTL_FLOAT_UNARY(abs, fabsf(x), fabs(x))
PTL_FLOAT_UNARY(sign, (float)((x > 0) - (x < 0)) + (x - x), (double)((x > 0) - (x < 0)) + (x - x))
PTL_FLOAT_UNARY(isnan, (float)(x != x), (double)(x != x))
PTL_FLOAT_UNARY(isinf, (float)(isinf(x) != 0), (double)(isinf(x) != 0))
PTL_FLOAT_UNARY(isposinf, (float)(x == INFINITY), (double)(x == INFINITY))
PTL_FLOAT_UNARY(isneginf, (float)(x == -INFINITY), (double)(x == -INFINITY))
PTL_FLOAT_UNARY(isfinite, (float)(isfinite(x) != 0), (double)(isfinite(x) != 0))
PTL_FLOAT_UNARY(signbit, (float)(signbit(x) != 0), (double)(signbit(x) != 0))

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

/* Binary float functions. maximum/minimum propagate NaN (PyTorch); fmax/fmin ignore it. */
#define PTL_FLOAT_BINARY(name, T, sfx, expr) static inline T ptl_##name##_##sfx(T a, T b) { return expr; }
#define PTL_FLOAT_BINARY_BOTH(name, e32, e64) PTL_FLOAT_BINARY(name, float, f32, e32) PTL_FLOAT_BINARY(name, double, f64, e64)
PTL_FLOAT_BINARY_BOTH(atan2, atan2f(a, b), atan2(a, b))
PTL_FLOAT_BINARY_BOTH(pow, powf(a, b), pow(a, b))
PTL_FLOAT_BINARY_BOTH(fmod, fmodf(a, b), fmod(a, b))
PTL_FLOAT_BINARY_BOTH(copysign, copysignf(a, b), copysign(a, b))
PTL_FLOAT_BINARY_BOTH(hypot, hypotf(a, b), hypot(a, b))
PTL_FLOAT_BINARY_BOTH(nextafter, nextafterf(a, b), nextafter(a, b))
PTL_FLOAT_BINARY_BOTH(maximum, (a != a || b != b) ? (a + b) : (a > b ? a : b),
                      (a != a || b != b) ? (a + b) : (a > b ? a : b))
PTL_FLOAT_BINARY_BOTH(minimum, (a != a || b != b) ? (a + b) : (a < b ? a : b),
                      (a != a || b != b) ? (a + b) : (a < b ? a : b))
PTL_FLOAT_BINARY_BOTH(fmax, fmaxf(a, b), fmax(a, b))
PTL_FLOAT_BINARY_BOTH(fmin, fminf(a, b), fmin(a, b))
PTL_FLOAT_BINARY_BOTH(xlogy, (b != b) ? b : (a == 0 ? 0.0f : a * logf(b)),
                      (b != b) ? b : (a == 0 ? 0.0 : a * log(b)))
PTL_FLOAT_BINARY_BOTH(logaddexp,
                      (isinf(a) && a == b) ? a : fmaxf(a, b) + log1pf(expf(-fabsf(a - b))),
                      (isinf(a) && a == b) ? a : fmax(a, b) + log1p(exp(-fabs(a - b))))
PTL_FLOAT_BINARY_BOTH(logaddexp2,
                      (isinf(a) && a == b) ? a : fmaxf(a, b) + log1pf(exp2f(-fabsf(a - b))) / 0.69314718f,
                      (isinf(a) && a == b) ? a : fmax(a, b) + log1p(exp2(-fabs(a - b))) / 0.6931471805599453)
/* Python-style remainder: the sign follows the divisor. */
PTL_FLOAT_BINARY_BOTH(remainder,
                      ({ float m = fmodf(a, b); (m != 0 && ((m < 0) != (b < 0))) ? m + b : m; }),
                      ({ double m = fmod(a, b); (m != 0 && ((m < 0) != (b < 0))) ? m + b : m; }))
/* floor division as PyTorch computes it: (a - remainder) / b, corrected to the floor. */
PTL_FLOAT_BINARY_BOTH(floordiv,
                      ({ float r; if (b == 0) r = a / b; else { float m = fmodf(a, b); float d = (a - m) / b;
                         if (m != 0 && ((b < 0) != (m < 0))) d -= 1.0f;
                         float fd = floorf(d); if (d - fd > 0.5f) fd += 1.0f; r = (d == 0) ? copysignf(0.0f, a / b) : fd; } r; }),
                      ({ double r; if (b == 0) r = a / b; else { double m = fmod(a, b); double d = (a - m) / b;
                         if (m != 0 && ((b < 0) != (m < 0))) d -= 1.0;
                         double fd = floor(d); if (d - fd > 0.5) fd += 1.0; r = (d == 0) ? copysign(0.0, a / b) : fd; } r; }))
PTL_FLOAT_BINARY_BOTH(truncdiv, truncf(a / b), trunc(a / b))
PTL_FLOAT_BINARY_BOTH(clamp_min, (a != a) ? a : (a < b ? b : a), (a != a) ? a : (a < b ? b : a))
PTL_FLOAT_BINARY_BOTH(clamp_max, (a != a) ? a : (a > b ? b : a), (a != a) ? a : (a > b ? b : a))
static inline float ptl_round_decimals_f32(float x, float d) {
    float s = powf(10.0f, d);
    return nearbyintf(x * s) / s;
}
static inline double ptl_round_decimals_f64(double x, double d) {
    double s = pow(10.0, d);
    return nearbyint(x * s) / s;
}
static inline float ptl_clamp_f32(float x, float lo, float hi) {
    return (x != x) ? x : (x < lo ? lo : (x > hi ? hi : x));
}
static inline double ptl_clamp_f64(double x, double lo, double hi) {
    return (x != x) ? x : (x < lo ? lo : (x > hi ? hi : x));
}
/* lerp as PyTorch: two formulas depending on |weight| for accuracy at the ends. */
static inline float ptl_lerp_f32(float a, float b, float w) {
    return fabsf(w) < 0.5f ? a + w * (b - a) : b - (b - a) * (1.0f - w);
}
static inline double ptl_lerp_f64(double a, double b, double w) {
    return fabs(w) < 0.5 ? a + w * (b - a) : b - (b - a) * (1.0 - w);
}

/* ---- integer and bool versions ---------------------------------------------------- */

#define PTL_INT_FUNCS(T, sfx, UT)                                                              \
    static inline T ptl_abs_##sfx(T x) { return x < 0 ? (T)(0 - (UT)x) : x; }                   \
    static inline T ptl_sign_##sfx(T x) { return (T)((x > 0) - (x < 0)); }                      \
    static inline T ptl_floor_##sfx(T x) { return x; }                                          \
    static inline T ptl_ceil_##sfx(T x) { return x; }                                           \
    static inline T ptl_round_##sfx(T x) { return x; }                                          \
    static inline T ptl_trunc_##sfx(T x) { return x; }                                          \
    static inline T ptl_isnan_##sfx(T x) { (void)x; return 0; }                                 \
    static inline T ptl_isinf_##sfx(T x) { (void)x; return 0; }                                 \
    static inline T ptl_isposinf_##sfx(T x) { (void)x; return 0; }                              \
    static inline T ptl_isneginf_##sfx(T x) { (void)x; return 0; }                              \
    static inline T ptl_isfinite_##sfx(T x) { (void)x; return 1; }                              \
    static inline T ptl_signbit_##sfx(T x) { return x < 0; }                                    \
    static inline T ptl_maximum_##sfx(T a, T b) { return a > b ? a : b; }                       \
    static inline T ptl_minimum_##sfx(T a, T b) { return a < b ? a : b; }                       \
    static inline T ptl_fmax_##sfx(T a, T b) { return a > b ? a : b; }                          \
    static inline T ptl_fmin_##sfx(T a, T b) { return a < b ? a : b; }                          \
    static inline T ptl_clamp_min_##sfx(T a, T b) { return a < b ? b : a; }                    \
    static inline T ptl_clamp_max_##sfx(T a, T b) { return a > b ? b : a; }                    \
    static inline T ptl_clamp_##sfx(T x, T lo, T hi) { return x < lo ? lo : (x > hi ? hi : x); } \
    /* division by zero is checked before the kernel runs (it raises, as in PyTorch) */         \
    static inline T ptl_truncdiv_##sfx(T a, T b) {                                              \
        if (b == 0) return 0;                                                                   \
        if (b == -1) return (T)(0 - (UT)a); /* INT_MIN / -1 wraps instead of trapping */       \
        return (T)(a / b);                                                                      \
    }                                                                                           \
    static inline T ptl_fmod_##sfx(T a, T b) {                                                  \
        if (b == 0 || b == -1) return 0;                                                        \
        return (T)(a % b);                                                                      \
    }                                                                                           \
    static inline T ptl_remainder_##sfx(T a, T b) {                                             \
        if (b == 0 || b == -1) return 0;                                                        \
        T r = (T)(a % b);                                                                       \
        if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);                                     \
        return r;                                                                               \
    }                                                                                           \
    static inline T ptl_floordiv_##sfx(T a, T b) {                                              \
        if (b == 0) return 0;                                                                   \
        if (b == -1) return (T)(0 - (UT)a);                                                     \
        T q = (T)(a / b);                                                                       \
        if ((a % b != 0) && ((a < 0) != (b < 0))) q = (T)(q - 1);                               \
        return q;                                                                               \
    }                                                                                           \
    static inline T ptl_pow_##sfx(T base, T e) {                                                \
        if (e < 0) {                                                                            \
            if (base == 1) return 1;                                                            \
            if (base == -1) return (e & 1) ? (T)-1 : (T)1;                                      \
            return 0;                                                                           \
        }                                                                                       \
        UT result = 1, b = (UT)base;                                                            \
        while (e) {                                                                             \
            if (e & 1) result *= b;                                                             \
            e = (T)(e >> 1);                                                                    \
            b *= b;                                                                             \
        }                                                                                       \
        return (T)result;                                                                       \
    }

PTL_INT_FUNCS(int8_t, i8, uint8_t)
PTL_INT_FUNCS(int16_t, i16, uint16_t)
PTL_INT_FUNCS(int32_t, i32, uint32_t)
PTL_INT_FUNCS(int64_t, i64, uint64_t)
PTL_INT_FUNCS(uint8_t, u8, uint8_t)

static inline bool ptl_sign_b8(bool x) { return x; }
static inline bool ptl_isnan_b8(bool x) { (void)x; return 0; }
static inline bool ptl_isinf_b8(bool x) { (void)x; return 0; }
static inline bool ptl_isposinf_b8(bool x) { (void)x; return 0; }
static inline bool ptl_isneginf_b8(bool x) { (void)x; return 0; }
static inline bool ptl_isfinite_b8(bool x) { (void)x; return 1; }
static inline bool ptl_signbit_b8(bool x) { (void)x; return 0; }
static inline bool ptl_maximum_b8(bool a, bool b) { return a || b; }
static inline bool ptl_minimum_b8(bool a, bool b) { return a && b; }
static inline bool ptl_fmax_b8(bool a, bool b) { return a || b; }
static inline bool ptl_fmin_b8(bool a, bool b) { return a && b; }

/* ---- bit shifts as PyTorch defines them (pointwise section) --------------------------
 * C leaves shifts by a negative amount or by >= the bit width undefined; PyTorch gives
 * 0 for such left shifts, and for right shifts the sign fill (signed) or 0 (unsigned). */
#define PTL_SHIFT_FUNCS(T, sfx, UT, SIGNED)                                                    \
    static inline T ptl_lshift_##sfx(T a, T b) {                                               \
        if ((UT)b >= sizeof(T) * 8) return 0;                                                  \
        return (T)((UT)a << b);                                                                \
    }                                                                                          \
    static inline T ptl_rshift_##sfx(T a, T b) {                                               \
        const UT max_shift = (UT)(sizeof(T) * 8 - (SIGNED));                                   \
        if ((UT)b >= max_shift) return SIGNED ? (T)(a >> (sizeof(T) * 8 - 1)) : (T)0;          \
        return (T)(a >> b);                                                                    \
    }
PTL_SHIFT_FUNCS(int8_t, i8, uint8_t, 1)
PTL_SHIFT_FUNCS(int16_t, i16, uint16_t, 1)
PTL_SHIFT_FUNCS(int32_t, i32, uint32_t, 1)
PTL_SHIFT_FUNCS(int64_t, i64, uint64_t, 1)
PTL_SHIFT_FUNCS(uint8_t, u8, uint8_t, 0)

/* ---- the pointwise iterator (runtime.c) -------------------------------------------- */

/* One inner loop: n elements; data[k] and strides[k] (in bytes) for operand k, output first. */
typedef void (*ptl_loop_fn)(char **data, const int64_t *strides, int64_t n, const ptl_scalar *sc);

int ptl_run_pointwise(int ntensors, const ptl_tensor *ts, ptl_loop_fn fn, const ptl_scalar *sc);
int ptl_run_contiguous(int ntensors, char **data, const int64_t *itemsizes, int64_t n,
                       ptl_loop_fn fn, const ptl_scalar *sc);

/* Hot loops are compiled twice, for AVX2 and for baseline x86-64, and picked at load time
 * (GCC function multi-versioning): shipped builds never use -march=native. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(PTL_NO_CLONES)
#define PTL_HOT __attribute__((target_clones("avx2", "default")))
#else
#define PTL_HOT
#endif

/* Below this many elements a kernel runs on the calling thread alone. */
#define PTL_GRAIN 32768

#endif
