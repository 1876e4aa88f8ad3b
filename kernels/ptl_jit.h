/* ptl_jit.h: math the JIT's fused kernels (pytorchlite/jit/_fuser.py) use beyond ptl.h.
 *
 * float32 sin and cos that GCC vectorises: libm's sinf/cosf are calls, which keep a loop
 * scalar. Branch-free (selects only): Cody-Waite reduction by pi/2 in three parts, then
 * the Cephes minimax polynomials on [-pi/4, pi/4], about 1 ulp. The reduction is exact
 * while the quotient has at most 16 bits, so |x| <= PTL_VTRIG_MAX only: the fused loop
 * recomputes larger arguments, inf and nan with libm (the eager kernels' functions).
 */
#ifndef PTL_JIT_H
#define PTL_JIT_H

#include "ptl.h"

#define PTL_VTRIG_MAX 8192.0f

/* r = x - j * pi/2 with j the nearest integer, and j's low two bits (the quadrant) */
static inline float ptl_vtrig_reduce(float x, int32_t *quadrant) {
    float t = x * 0.636619772367581343f + 12582912.0f;   /* 1.5 * 2^23: rounds to an integer */
    float j = t - 12582912.0f;
    float r = x - j * 1.5703125f;                       /* pi/2 in three parts (Cephes) */
    r = r - j * 4.837512969970703125e-4f;
    r = r - j * 7.54978995489188216e-8f;
    *quadrant = (int32_t)j & 3;
    return r;
}

static inline float ptl_vtrig_sin_poly(float r, float z) {
    float p = -1.9515295891e-4f;
    p = p * z + 8.3321608736e-3f;
    p = p * z - 1.6666654611e-1f;
    return r + r * z * p;
}

static inline float ptl_vtrig_cos_poly(float z) {
    float p = 2.443315711809948e-5f;
    p = p * z - 1.388731625493765e-3f;
    p = p * z + 4.166664568298827e-2f;
    return 1.0f - 0.5f * z + z * z * p;
}

static inline float ptl_vsin_f32(float x) {
    int32_t q;
    float r = ptl_vtrig_reduce(x, &q), z = r * r;
    float s = ptl_vtrig_sin_poly(r, z), c = ptl_vtrig_cos_poly(z);
    float y = (q & 1) ? c : s;
    y = (q & 2) ? -y : y;
    return x == 0.0f ? x : y;   /* sin(-0) is -0 (the polynomial's r + r*z*p gives +0) */
}

static inline float ptl_vcos_f32(float x) {
    int32_t q;
    float r = ptl_vtrig_reduce(x, &q), z = r * r;
    float s = ptl_vtrig_sin_poly(r, z), c = ptl_vtrig_cos_poly(z);
    float y = (q & 1) ? s : c;
    return ((q + 1) & 2) ? -y : y;
}

#endif
