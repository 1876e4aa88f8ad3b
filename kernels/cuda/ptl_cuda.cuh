/* ptl_cuda.cuh: what every pytorchlite CUDA kernel sees: the types and the math functions
 * of pointwise bodies shared with the CPU (kernels/ptl_common.h: ptl_<name>_<suffix>, the
 * same names and semantics as kernels/ptl.h), the device's own float16 conversions,
 * erfinv and digamma, and the strided-index descriptors the host fills in
 * (pytorchlite/cuda/_launch.py).
 *
 * Compiled with NVRTC, which has no C library headers: everything is defined here or in
 * ptl_common.h (pytorchlite/cuda/_nvrtc.py puts kernels/ on NVRTC's include path).
 * Dtype codes match kernels/ptl.h and pytorchlite/_dtype.py.
 */
#ifndef PTL_CUDA_CUH
#define PTL_CUDA_CUH

#include "ptl_common.h"

#define PTL_DEV PTL_FN
#define PTL_PI_D 3.14159265358979323846

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

/* ---- float16: stored as 16 bits, computed in float, rounded (to nearest even) on
 * store: one conversion instruction each (bfloat16 is in ptl_common.h) ----------------- */

#ifdef PTL_CUDA_EMULATED /* host build of the kernels (pytorchlite/cuda/_emulator.py) */
PTL_DEV float ptl_h2f(uint16_t h) { return ptl_emu_h2f(h); }
PTL_DEV uint16_t ptl_f2h(float f) { return ptl_emu_f2h(f); }
#else
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
#endif

/* ---- the device's own erfinv; digamma without recursion ------------------------------ */

PTL_FLOAT_UNARY(erfinv, erfinvf(x), erfinv(x))

PTL_DEV double ptl_digamma_f64(double x) {
    if (x == 0) return ptl_signbit(x) ? PTL_INF_D : -PTL_INF_D;
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

#endif
