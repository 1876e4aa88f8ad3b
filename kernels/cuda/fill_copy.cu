/* fill_copy.cu: fill with a scalar, and strided copy across every pair of dtypes.
 *
 * Conversions follow kernels/runtime.c: float -> integer goes through int64 (on the GPU an
 * out-of-range or NaN value saturates / gives 0 where x86 gives INT64_MIN: undefined in C
 * either way), bool stores `v != 0`, float16 / bfloat16 round to nearest even from float.
 *
 * Kernels (operand 0 is the destination; strides in elements, dims innermost first):
 *   ptl_cu_fill_<d>_c32(n, out, value)            contiguous, 32-bit indices
 *   ptl_cu_fill_<d>_s32 / _s64(n, out, it, value)
 *   ptl_cu_copy_<d>_<s>_c32(n, out, in)           both contiguous
 *   ptl_cu_copy_<d>_<s>_s32 / _s64(n, out, in, it)
 * The host splits contiguous ranges above 2^31 elements into 32-bit chunks and never
 * launches an empty grid.
 */
#include "ptl_cuda.cuh"

#define PTL_BLOCK 256

/* per-dtype storage type, load (to the natural compute type) and store (from any) */
struct D_b8 {
    typedef uint8_t S;
    static __device__ __forceinline__ bool load(S x) { return x != 0; }
    template <typename X> static __device__ __forceinline__ S store(X v) { return (S)(v != 0); }
};
#define PTL_INT_DT(NAME, T)                                                                  \
    struct NAME {                                                                            \
        typedef T S;                                                                         \
        static __device__ __forceinline__ T load(S x) { return x; }                          \
        template <typename X> static __device__ __forceinline__ S store(X v) { return (S)(int64_t)v; } \
    };
PTL_INT_DT(D_u8, uint8_t)
PTL_INT_DT(D_i8, int8_t)
PTL_INT_DT(D_i16, int16_t)
PTL_INT_DT(D_i32, int32_t)
PTL_INT_DT(D_i64, int64_t)
struct D_f16 {
    typedef uint16_t S;
    static __device__ __forceinline__ float load(S x) { return ptl_h2f(x); }
    template <typename X> static __device__ __forceinline__ S store(X v) { return ptl_f2h((float)v); }
};
struct D_bf16 {
    typedef uint16_t S;
    static __device__ __forceinline__ float load(S x) { return ptl_bf2f(x); }
    template <typename X> static __device__ __forceinline__ S store(X v) { return ptl_f2bf((float)v); }
};
struct D_f32 {
    typedef float S;
    static __device__ __forceinline__ float load(S x) { return x; }
    template <typename X> static __device__ __forceinline__ S store(X v) { return (float)v; }
};
struct D_f64 {
    typedef double S;
    static __device__ __forceinline__ double load(S x) { return x; }
    template <typename X> static __device__ __forceinline__ S store(X v) { return (double)v; }
};

/* the value a fill writes, from the (double, int64) scalar as DEF_FILL in runtime.c */
template <typename DT> __device__ __forceinline__ typename DT::S fill_value(ptl_scalar v) { return DT::store(v.i); }
template <> __device__ __forceinline__ uint8_t fill_value<D_b8>(ptl_scalar v) { return (uint8_t)(v.d != 0 || v.i != 0); }
template <> __device__ __forceinline__ uint16_t fill_value<D_f16>(ptl_scalar v) { return D_f16::store(v.d); }
template <> __device__ __forceinline__ uint16_t fill_value<D_bf16>(ptl_scalar v) { return D_bf16::store(v.d); }
template <> __device__ __forceinline__ float fill_value<D_f32>(ptl_scalar v) { return D_f32::store(v.d); }
template <> __device__ __forceinline__ double fill_value<D_f64>(ptl_scalar v) { return D_f64::store(v.d); }

#define DEF_FILL(N)                                                                                   \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_fill_##N##_c32(uint32_t n, D_##N::S *o, ptl_scalar v) { \
        const D_##N::S x = fill_value<D_##N>(v);                                                      \
        PTL_GRID_LOOP(uint32_t, i, n) o[i] = x;                                                       \
    }                                                                                                 \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_fill_##N##_s32(uint32_t n, D_##N::S *o, const ptl_iter32<1> it, ptl_scalar v) { \
        const D_##N::S x = fill_value<D_##N>(v);                                                      \
        PTL_GRID_LOOP(uint32_t, i, n) {                                                               \
            int32_t off[1];                                                                           \
            ptl_offsets<1>(it, i, off);                                                               \
            o[off[0]] = x;                                                                            \
        }                                                                                             \
    }                                                                                                 \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_fill_##N##_s64(int64_t n, D_##N::S *o, const ptl_iter64<1> it, ptl_scalar v) { \
        const D_##N::S x = fill_value<D_##N>(v);                                                      \
        PTL_GRID_LOOP(int64_t, i, n) {                                                                \
            int64_t off[1];                                                                           \
            ptl_offsets<1>(it, i, off);                                                               \
            o[off[0]] = x;                                                                            \
        }                                                                                             \
    }
DEF_FILL(b8) DEF_FILL(u8) DEF_FILL(i8) DEF_FILL(i16) DEF_FILL(i32)
DEF_FILL(i64) DEF_FILL(f16) DEF_FILL(bf16) DEF_FILL(f32) DEF_FILL(f64)

/* same dtype: a plain move (the host uses cuMemcpyAsync when both sides are contiguous) */
template <typename DT, typename ST>
__device__ __forceinline__ typename DT::S convert(typename ST::S x) { return DT::store(ST::load(x)); }

#define DEF_COPY(DD, SS)                                                                                 \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_copy_##DD##_##SS##_c32(               \
            uint32_t n, D_##DD::S *o, const D_##SS::S *p) {                                              \
        PTL_GRID_LOOP(uint32_t, i, n) o[i] = convert<D_##DD, D_##SS>(p[i]);                              \
    }                                                                                                  \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_copy_##DD##_##SS##_s32(               \
            uint32_t n, D_##DD::S *o, const D_##SS::S *p, const ptl_iter32<2> it) {                      \
        PTL_GRID_LOOP(uint32_t, i, n) {                                                                \
            int32_t off[2];                                                                            \
            ptl_offsets<2>(it, i, off);                                                                \
            o[off[0]] = convert<D_##DD, D_##SS>(p[off[1]]);                                              \
        }                                                                                              \
    }                                                                                                  \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_copy_##DD##_##SS##_s64(               \
            int64_t n, D_##DD::S *o, const D_##SS::S *p, const ptl_iter64<2> it) {                       \
        PTL_GRID_LOOP(int64_t, i, n) {                                                                 \
            int64_t off[2];                                                                            \
            ptl_offsets<2>(it, i, off);                                                                \
            o[off[0]] = convert<D_##DD, D_##SS>(p[off[1]]);                                              \
        }                                                                                              \
    }
#define DEF_COPY_ROW(DD)                                                                 \
    DEF_COPY(DD, b8) DEF_COPY(DD, u8) DEF_COPY(DD, i8) DEF_COPY(DD, i16) DEF_COPY(DD, i32) \
    DEF_COPY(DD, i64) DEF_COPY(DD, f16) DEF_COPY(DD, bf16) DEF_COPY(DD, f32) DEF_COPY(DD, f64)
DEF_COPY_ROW(b8) DEF_COPY_ROW(u8) DEF_COPY_ROW(i8) DEF_COPY_ROW(i16) DEF_COPY_ROW(i32)
DEF_COPY_ROW(i64) DEF_COPY_ROW(f16) DEF_COPY_ROW(bf16) DEF_COPY_ROW(f32) DEF_COPY_ROW(f64)
