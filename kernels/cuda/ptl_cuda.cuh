/* ptl_cuda.cuh: what every pytorchlite CUDA kernel sees: fixed-width types, float16 /
 * bfloat16 conversions, the math functions of pointwise bodies (ptl_<name>_<suffix>, the
 * same names and semantics as kernels/ptl.h on the CPU), and the strided-index
 * descriptors the host fills in (pytorchlite/cuda/_launch.py).
 *
 * Compiled with NVRTC, which has no C library headers: everything is defined here.
 * Dtype codes match kernels/ptl.h and pytorchlite/_dtype.py.
 */
#ifndef PTL_CUDA_CUH
#define PTL_CUDA_CUH

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;

#define PTL_MAX_DIMS 16
#define PTL_DEV static __device__ __forceinline__
#define PTL_INF_F __int_as_float(0x7f800000)
#define PTL_NAN_F __int_as_float(0x7fffffff)
#define PTL_INF_D __longlong_as_double(0x7ff0000000000000LL)
#define PTL_NAN_D __longlong_as_double(0x7fffffffffffffffLL)
#define PTL_PI_D 3.14159265358979323846

/* A Python scalar as a kernel argument: both views, as ptl_scalar on the CPU. */
typedef struct {
    double d;
    int64_t i;
} ptl_scalar;

/* Up to four scalar arguments, passed by value (kernel parameters are constant memory). */
typedef struct {
    ptl_scalar v[4];
} ptl_scalar_pack;

/* Strided iteration over a coalesced shape: dims innermost first, strides in elements per
 * operand (operand 0 is the output). The host uses the 32-bit form when the element count
 * and every operand's largest offset fit in int32, and the 64-bit form otherwise. */
template <int NT>
struct ptl_iter32 {
    int32_t ndim;
    uint32_t sizes[PTL_MAX_DIMS];
    int32_t strides[PTL_MAX_DIMS][NT];
};

template <int NT>
struct ptl_iter64 {
    int32_t ndim;
    int32_t pad_;
    int64_t sizes[PTL_MAX_DIMS];
    int64_t strides[PTL_MAX_DIMS][NT];
};

template <int NT, typename It, typename I, typename O>
PTL_DEV void ptl_offsets(const It &it, I linear, O *off) {
#pragma unroll
    for (int k = 0; k < NT; k++) off[k] = 0;
    for (int d = 0; d < it.ndim; d++) {
        const I size = (I)it.sizes[d];
        const I q = linear / size;
        const I r = linear - q * size;
        linear = q;
#pragma unroll
        for (int k = 0; k < NT; k++) off[k] += (O)r * (O)it.strides[d][k];
    }
}

/* grid-stride loop bounds */
#define PTL_GRID_LOOP(I, i, n) \
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)(n); i += (I)blockDim.x * (I)gridDim.x)

/* ---- float16 / bfloat16: stored as 16 bits, computed in float, rounded (to nearest
 * even) on store: one conversion instruction each ------------------------------------- */

PTL_DEV float ptl_h2f(uint16_t h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
PTL_DEV uint16_t ptl_f2h(float f) {
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
PTL_DEV float ptl_bf2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
PTL_DEV uint16_t ptl_f2bf(float f) {
    /* as kernels/ptl.h: round to nearest even, nan stays a quiet nan */
    uint32_t x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- float math: ptl_<name>_f32 / ptl_<name>_f64 ------------------------------------ */

#define PTL_FLOAT_UNARY(name, f32expr, f64expr)                 \
    PTL_DEV float ptl_##name##_f32(float x) { return f32expr; } \
    PTL_DEV double ptl_##name##_f64(double x) { return f64expr; }

PTL_FLOAT_UNARY(exp, expf(x), exp(x))
PTL_FLOAT_UNARY(exp2, exp2f(x), exp2(x))
PTL_FLOAT_UNARY(expm1, expm1f(x), expm1(x))
PTL_FLOAT_UNARY(log, logf(x), log(x))
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
PTL_FLOAT_UNARY(tanh, tanhf(x), tanh(x))
PTL_FLOAT_UNARY(asinh, asinhf(x), asinh(x))
PTL_FLOAT_UNARY(acosh, acoshf(x), acosh(x))
PTL_FLOAT_UNARY(atanh, atanhf(x), atanh(x))
PTL_FLOAT_UNARY(erf, erff(x), erf(x))
PTL_FLOAT_UNARY(erfc, erfcf(x), erfc(x))
PTL_FLOAT_UNARY(erfinv, erfinvf(x), erfinv(x))
PTL_FLOAT_UNARY(lgamma, lgammaf(x), lgamma(x))
PTL_FLOAT_UNARY(sigmoid, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + exp(-x)))
PTL_FLOAT_UNARY(floor, floorf(x), floor(x))
PTL_FLOAT_UNARY(ceil, ceilf(x), ceil(x))
PTL_FLOAT_UNARY(round, rintf(x), rint(x)) /* half to even, as PyTorch */
PTL_FLOAT_UNARY(trunc, truncf(x), trunc(x))
PTL_FLOAT_UNARY(frac, x - truncf(x), x - trunc(x))
PTL_FLOAT_UNARY(abs, fabsf(x), fabs(x))
PTL_FLOAT_UNARY(sign, (float)((x > 0) - (x < 0)) + (x - x), (double)((x > 0) - (x < 0)) + (x - x))
PTL_FLOAT_UNARY(isnan, (float)(x != x), (double)(x != x))
PTL_FLOAT_UNARY(isinf, (float)(fabsf(x) == PTL_INF_F), (double)(fabs(x) == PTL_INF_D))
PTL_FLOAT_UNARY(isposinf, (float)(x == PTL_INF_F), (double)(x == PTL_INF_D))
PTL_FLOAT_UNARY(isneginf, (float)(x == -PTL_INF_F), (double)(x == -PTL_INF_D))
PTL_FLOAT_UNARY(isfinite, (float)(fabsf(x) < PTL_INF_F), (double)(fabs(x) < PTL_INF_D))
PTL_FLOAT_UNARY(signbit, (float)(__float_as_uint(x) >> 31), (double)((unsigned long long)__double_as_longlong(x) >> 63))

PTL_DEV double ptl_digamma_f64(double x) {
    if (x == 0) return ((unsigned long long)__double_as_longlong(x) >> 63) ? PTL_INF_D : -PTL_INF_D;
    double r = 0;
    if (x < 0) {
        if (x == floor(x)) return PTL_NAN_D;
        /* reflection: psi(x) = psi(1 - x) - pi / tan(pi x) */
        r = -PTL_PI_D / tan(PTL_PI_D * x);
        x = 1.0 - x;
    }
    while (x < 6) { r -= 1 / x; x += 1; }
    double f = 1 / (x * x);
    return r + log(x) - 0.5 / x
           - f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))));
}
PTL_DEV float ptl_digamma_f32(float x) { return (float)ptl_digamma_f64((double)x); }

#define PTL_FLOAT_BINARY(name, e32, e64)                                  \
    PTL_DEV float ptl_##name##_f32(float a, float b) { return e32; }      \
    PTL_DEV double ptl_##name##_f64(double a, double b) { return e64; }

/* maximum/minimum propagate NaN (PyTorch); fmax/fmin ignore it */
PTL_FLOAT_BINARY(atan2, atan2f(a, b), atan2(a, b))
PTL_FLOAT_BINARY(pow, powf(a, b), pow(a, b))
PTL_FLOAT_BINARY(fmod, fmodf(a, b), fmod(a, b))
PTL_FLOAT_BINARY(copysign, copysignf(a, b), copysign(a, b))
PTL_FLOAT_BINARY(hypot, hypotf(a, b), hypot(a, b))
PTL_FLOAT_BINARY(nextafter, nextafterf(a, b), nextafter(a, b))
PTL_FLOAT_BINARY(maximum, (a != a || b != b) ? (a + b) : (a > b ? a : b), (a != a || b != b) ? (a + b) : (a > b ? a : b))
PTL_FLOAT_BINARY(minimum, (a != a || b != b) ? (a + b) : (a < b ? a : b), (a != a || b != b) ? (a + b) : (a < b ? a : b))
PTL_FLOAT_BINARY(fmax, fmaxf(a, b), fmax(a, b))
PTL_FLOAT_BINARY(fmin, fminf(a, b), fmin(a, b))
PTL_FLOAT_BINARY(xlogy, (b != b) ? b : (a == 0 ? 0.0f : a * logf(b)), (b != b) ? b : (a == 0 ? 0.0 : a * log(b)))
PTL_FLOAT_BINARY(logaddexp,
                 (fabsf(a) == PTL_INF_F && a == b) ? a : fmaxf(a, b) + log1pf(expf(-fabsf(a - b))),
                 (fabs(a) == PTL_INF_D && a == b) ? a : fmax(a, b) + log1p(exp(-fabs(a - b))))
PTL_FLOAT_BINARY(logaddexp2,
                 (fabsf(a) == PTL_INF_F && a == b) ? a : fmaxf(a, b) + log1pf(exp2f(-fabsf(a - b))) / 0.69314718f,
                 (fabs(a) == PTL_INF_D && a == b) ? a : fmax(a, b) + log1p(exp2(-fabs(a - b))) / 0.6931471805599453)
PTL_FLOAT_BINARY(truncdiv, truncf(a / b), trunc(a / b))
PTL_FLOAT_BINARY(clamp_min, (a != a) ? a : (a < b ? b : a), (a != a) ? a : (a < b ? b : a))
PTL_FLOAT_BINARY(clamp_max, (a != a) ? a : (a > b ? b : a), (a != a) ? a : (a > b ? b : a))

/* Python-style remainder: the sign follows the divisor; floor division as PyTorch
 * computes it, (a - remainder) / b corrected to the floor (kernels/ptl.h). */
template <typename T>
PTL_DEV T ptl_remainder_fp(T a, T b) {
    T m = fmod(a, b);
    return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}
template <typename T>
PTL_DEV T ptl_floordiv_fp(T a, T b) {
    if (b == 0) return a / b;
    T m = fmod(a, b);
    T d = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) d -= (T)1;
    T fd = floor(d);
    if (d - fd > (T)0.5) fd += (T)1;
    return (d == 0) ? copysign((T)0, a / b) : fd;
}
PTL_DEV float ptl_remainder_f32(float a, float b) { return ptl_remainder_fp<float>(a, b); }
PTL_DEV double ptl_remainder_f64(double a, double b) { return ptl_remainder_fp<double>(a, b); }
PTL_DEV float ptl_floordiv_f32(float a, float b) { return ptl_floordiv_fp<float>(a, b); }
PTL_DEV double ptl_floordiv_f64(double a, double b) { return ptl_floordiv_fp<double>(a, b); }

PTL_DEV float ptl_round_decimals_f32(float x, float d) {
    float s = powf(10.0f, d);
    return rintf(x * s) / s;
}
PTL_DEV double ptl_round_decimals_f64(double x, double d) {
    double s = pow(10.0, d);
    return rint(x * s) / s;
}
PTL_DEV float ptl_clamp_f32(float x, float lo, float hi) { return (x != x) ? x : (x < lo ? lo : (x > hi ? hi : x)); }
PTL_DEV double ptl_clamp_f64(double x, double lo, double hi) { return (x != x) ? x : (x < lo ? lo : (x > hi ? hi : x)); }
/* lerp as PyTorch: two formulas depending on |weight| for accuracy at the ends */
PTL_DEV float ptl_lerp_f32(float a, float b, float w) {
    return fabsf(w) < 0.5f ? a + w * (b - a) : b - (b - a) * (1.0f - w);
}
PTL_DEV double ptl_lerp_f64(double a, double b, double w) {
    return fabs(w) < 0.5 ? a + w * (b - a) : b - (b - a) * (1.0 - w);
}

/* ---- integer and bool versions (division by zero is checked on the host) ------------ */

/* x < 0 and x == -1, with no "pointless comparison" warning for unsigned types */
template <typename T> __device__ __forceinline__ bool ptl_neg(T x) { return x < 0; }
template <> __device__ __forceinline__ bool ptl_neg<uint8_t>(uint8_t) { return false; }
template <typename T> __device__ __forceinline__ bool ptl_minus1(T x) { return x == -1; }
template <> __device__ __forceinline__ bool ptl_minus1<uint8_t>(uint8_t) { return false; }

#define PTL_INT_FUNCS(T, sfx, UT)                                                                \
    PTL_DEV T ptl_abs_##sfx(T x) { return ptl_neg(x) ? (T)(0 - (UT)x) : x; }                        \
    PTL_DEV T ptl_sign_##sfx(T x) { return (T)((x > 0) - ptl_neg(x)); }                           \
    PTL_DEV T ptl_floor_##sfx(T x) { return x; }                                               \
    PTL_DEV T ptl_ceil_##sfx(T x) { return x; }                                                \
    PTL_DEV T ptl_round_##sfx(T x) { return x; }                                               \
    PTL_DEV T ptl_trunc_##sfx(T x) { return x; }                                               \
    PTL_DEV T ptl_isnan_##sfx(T) { return 0; }                                                 \
    PTL_DEV T ptl_isinf_##sfx(T) { return 0; }                                                 \
    PTL_DEV T ptl_isposinf_##sfx(T) { return 0; }                                              \
    PTL_DEV T ptl_isneginf_##sfx(T) { return 0; }                                              \
    PTL_DEV T ptl_isfinite_##sfx(T) { return 1; }                                              \
    PTL_DEV T ptl_signbit_##sfx(T x) { return (T)ptl_neg(x);}                                    \
    PTL_DEV T ptl_maximum_##sfx(T a, T b) { return a > b ? a : b; }                            \
    PTL_DEV T ptl_minimum_##sfx(T a, T b) { return a < b ? a : b; }                            \
    PTL_DEV T ptl_fmax_##sfx(T a, T b) { return a > b ? a : b; }                               \
    PTL_DEV T ptl_fmin_##sfx(T a, T b) { return a < b ? a : b; }                               \
    PTL_DEV T ptl_clamp_min_##sfx(T a, T b) { return a < b ? b : a; }                          \
    PTL_DEV T ptl_clamp_max_##sfx(T a, T b) { return a > b ? b : a; }                          \
    PTL_DEV T ptl_clamp_##sfx(T x, T lo, T hi) { return x < lo ? lo : (x > hi ? hi : x); }     \
    PTL_DEV T ptl_truncdiv_##sfx(T a, T b) {                                                   \
        if (b == 0) return 0;                                                                  \
        if (ptl_minus1(b)) return (T)(0 - (UT)a); /* INT_MIN / -1 wraps */                        \
        return (T)(a / b);                                                                     \
    }                                                                                          \
    PTL_DEV T ptl_fmod_##sfx(T a, T b) {                                                       \
        if (b == 0 || ptl_minus1(b)) return 0;                                                    \
        return (T)(a % b);                                                                     \
    }                                                                                          \
    PTL_DEV T ptl_remainder_##sfx(T a, T b) {                                                  \
        if (b == 0 || ptl_minus1(b)) return 0;                                                    \
        T r = (T)(a % b);                                                                      \
        if (r != 0 && (ptl_neg(r) != ptl_neg(b))) r = (T)(r + b);                                    \
        return r;                                                                              \
    }                                                                                          \
    PTL_DEV T ptl_floordiv_##sfx(T a, T b) {                                                   \
        if (b == 0) return 0;                                                                  \
        if (ptl_minus1(b)) return (T)(0 - (UT)a);                                                 \
        T q = (T)(a / b);                                                                      \
        if ((a % b != 0) && (ptl_neg(a) != ptl_neg(b))) q = (T)(q - 1);                              \
        return q;                                                                              \
    }                                                                                          \
    PTL_DEV T ptl_pow_##sfx(T base, T e) {                                                     \
        if (ptl_neg(e)) {                                                                           \
            if (base == 1) return 1;                                                           \
            if (ptl_minus1(base)) return (e & 1) ? (T)-1 : (T)1;                                  \
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

/* (uint8 promotes to int in `ptl_minus1(b)`, which never holds: as on the CPU) */
PTL_INT_FUNCS(int8_t, i8, uint8_t)
PTL_INT_FUNCS(int16_t, i16, uint16_t)
PTL_INT_FUNCS(int32_t, i32, uint32_t)
PTL_INT_FUNCS(int64_t, i64, uint64_t)
PTL_INT_FUNCS(uint8_t, u8, uint8_t)

PTL_DEV bool ptl_sign_b8(bool x) { return x; }
PTL_DEV bool ptl_isnan_b8(bool) { return 0; }
PTL_DEV bool ptl_isinf_b8(bool) { return 0; }
PTL_DEV bool ptl_isposinf_b8(bool) { return 0; }
PTL_DEV bool ptl_isneginf_b8(bool) { return 0; }
PTL_DEV bool ptl_isfinite_b8(bool) { return 1; }
PTL_DEV bool ptl_signbit_b8(bool) { return 0; }
PTL_DEV bool ptl_maximum_b8(bool a, bool b) { return a || b; }
PTL_DEV bool ptl_minimum_b8(bool a, bool b) { return a && b; }
PTL_DEV bool ptl_fmax_b8(bool a, bool b) { return a || b; }
PTL_DEV bool ptl_fmin_b8(bool a, bool b) { return a && b; }

/* bit shifts as PyTorch defines them: out-of-range shifts give 0 (left) or the sign fill */
#define PTL_SHIFT_FUNCS(T, sfx, UT, SIGNED)                                                   \
    PTL_DEV T ptl_lshift_##sfx(T a, T b) {                                                    \
        if ((UT)b >= sizeof(T) * 8) return 0;                                                 \
        return (T)((UT)a << b);                                                               \
    }                                                                                         \
    PTL_DEV T ptl_rshift_##sfx(T a, T b) {                                                    \
        const UT max_shift = (UT)(sizeof(T) * 8 - (SIGNED));                                  \
        if ((UT)b >= max_shift) return SIGNED ? (T)(a >> (sizeof(T) * 8 - 1)) : (T)0;         \
        return (T)(a >> b);                                                                   \
    }
PTL_SHIFT_FUNCS(int8_t, i8, uint8_t, 1)
PTL_SHIFT_FUNCS(int16_t, i16, uint16_t, 1)
PTL_SHIFT_FUNCS(int32_t, i32, uint32_t, 1)
PTL_SHIFT_FUNCS(int64_t, i64, uint64_t, 1)
PTL_SHIFT_FUNCS(uint8_t, u8, uint8_t, 0)

#endif
