/* reduce.cu: sum, mean and max along one dimension.
 *
 * The host views the input as [outer, R, inner] (strides in elements, any sign, so
 * transposed and sliced inputs need no copy when their dims collapse to three) and the
 * output as a contiguous [outer, inner]. Accumulation as PyTorch: integers and bool in
 * int64 (sum's result dtype), float16 / bfloat16 / float32 in float, float64 in double.
 * max propagates NaN; the host rejects R == 0 for max, as PyTorch does.
 *
 *   ptl_cu_reduce_<op>_<dtype>_row   inner == 1: one block per output, the block's
 *                                    threads stride over R and combine through warp
 *                                    shuffles and shared memory
 *   ptl_cu_reduce_<op>_<dtype>_col   inner > 1: one thread per output (consecutive
 *                                    threads read consecutive inner elements)
 * Grid-stride over outputs in both; the host never launches an empty grid (an empty
 * output launches nothing; R == 0 sums are a fill).
 */
#include "ptl_cuda.cuh"

#define PTL_BLOCK 256

/* dtype traits: storage, accumulator, load, store */
#define PTL_RED_DT(NAME, S_, ACC_, LOAD, STORE)                                              \
    struct NAME {                                                                            \
        typedef S_ S;                                                                        \
        typedef ACC_ Acc;                                                                    \
        static __device__ __forceinline__ Acc load(S x) { return (Acc)(LOAD); }              \
        static __device__ __forceinline__ S store(Acc v) { return STORE; }                   \
    };
PTL_RED_DT(R_b8, uint8_t, int64_t, x != 0, (uint8_t)(v != 0))
PTL_RED_DT(R_u8, uint8_t, int64_t, x, (uint8_t)v)
PTL_RED_DT(R_i8, int8_t, int64_t, x, (int8_t)v)
PTL_RED_DT(R_i16, int16_t, int64_t, x, (int16_t)v)
PTL_RED_DT(R_i32, int32_t, int64_t, x, (int32_t)v)
PTL_RED_DT(R_i64, int64_t, int64_t, x, v)
PTL_RED_DT(R_f16, uint16_t, float, ptl_h2f(x), ptl_f2h(v))
PTL_RED_DT(R_bf16, uint16_t, float, ptl_bf2f(x), ptl_f2bf(v))
PTL_RED_DT(R_f32, float, float, x, v)
PTL_RED_DT(R_f64, double, double, x, v)

/* the combining operations: identity, combine, finish (n = R) */
struct Sum {
    template <typename A> static __device__ __forceinline__ A identity() { return (A)0; }
    template <typename A> static __device__ __forceinline__ A combine(A a, A b) { return a + b; }
    template <typename A> static __device__ __forceinline__ A finish(A a, int64_t) { return a; }
};
struct Mean {
    template <typename A> static __device__ __forceinline__ A identity() { return (A)0; }
    template <typename A> static __device__ __forceinline__ A combine(A a, A b) { return a + b; }
    template <typename A> static __device__ __forceinline__ A finish(A a, int64_t n) { return a / (A)n; }
};
template <typename A> __device__ __forceinline__ A ptl_lowest();
template <> __device__ __forceinline__ int64_t ptl_lowest<int64_t>() { return (int64_t)(-0x7fffffffffffffffLL - 1); }
template <> __device__ __forceinline__ float ptl_lowest<float>() { return -PTL_INF_F; }
template <> __device__ __forceinline__ double ptl_lowest<double>() { return -PTL_INF_D; }
struct Max {
    template <typename A> static __device__ __forceinline__ A identity() { return ptl_lowest<A>(); }
    /* NaN wins (a != a is false for integers) */
    template <typename A> static __device__ __forceinline__ A combine(A a, A b) {
        return (a != a) ? a : ((b != b) ? b : (a > b ? a : b));
    }
    template <typename A> static __device__ __forceinline__ A finish(A a, int64_t) { return a; }
};

/* combine across a block of PTL_BLOCK threads; thread 0 gets the result */
template <typename Op, typename A>
__device__ __forceinline__ A block_reduce(A v, A *shared) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v = Op::template combine<A>(v, __shfl_down_sync(0xffffffffu, v, d));
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (PTL_BLOCK / 32) ? shared[lane] : Op::template identity<A>();
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) v = Op::template combine<A>(v, __shfl_down_sync(0xffffffffu, v, d));
    }
    __syncthreads();   /* shared is reused by the next row */
    return v;
}

template <typename Op, typename DT, typename OT>
__device__ __forceinline__ void reduce_row(int64_t outer, int64_t r, typename OT::S *o, const typename DT::S *p,
                                           int64_t s_outer, int64_t s_r) {
    typedef typename DT::Acc A;
    __shared__ A shared[PTL_BLOCK / 32];
    for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
        const typename DT::S *q = p + row * s_outer;
        A acc = Op::template identity<A>();
        for (int64_t k = threadIdx.x; k < r; k += PTL_BLOCK) acc = Op::template combine<A>(acc, DT::load(q[k * s_r]));
        acc = block_reduce<Op, A>(acc, shared);
        if (threadIdx.x == 0) o[row] = OT::store((typename OT::Acc)Op::template finish<A>(acc, r));
    }
}

template <typename Op, typename DT, typename OT>
__device__ __forceinline__ void reduce_col(int64_t outer, int64_t r, int64_t inner, typename OT::S *o,
                                           const typename DT::S *p, int64_t s_outer, int64_t s_r, int64_t s_inner) {
    typedef typename DT::Acc A;
    const int64_t total = outer * inner;
    PTL_GRID_LOOP(int64_t, idx, total) {
        const int64_t row = idx / inner, j = idx - row * inner;
        const typename DT::S *q = p + row * s_outer + j * s_inner;
        A acc = Op::template identity<A>();
        for (int64_t k = 0; k < r; k++) acc = Op::template combine<A>(acc, DT::load(q[k * s_r]));
        o[idx] = OT::store((typename OT::Acc)Op::template finish<A>(acc, r));
    }
}

/* OUT: the output dtype's traits (sum of integers and bool gives int64) */
#define DEF_REDUCE(OPNAME, OP, N, OUT)                                                                       \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_reduce_##OPNAME##_##N##_row(              \
            int64_t outer, int64_t r, OUT::S *o, const R_##N::S *p, int64_t s_outer, int64_t s_r) {          \
        reduce_row<OP, R_##N, OUT>(outer, r, o, p, s_outer, s_r);                                            \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_reduce_##OPNAME##_##N##_col(              \
            int64_t outer, int64_t r, int64_t inner, OUT::S *o, const R_##N::S *p, int64_t s_outer,          \
            int64_t s_r, int64_t s_inner) {                                                                  \
        reduce_col<OP, R_##N, OUT>(outer, r, inner, o, p, s_outer, s_r, s_inner);                            \
    }

DEF_REDUCE(sum, Sum, b8, R_i64) DEF_REDUCE(sum, Sum, u8, R_i64) DEF_REDUCE(sum, Sum, i8, R_i64)
DEF_REDUCE(sum, Sum, i16, R_i64) DEF_REDUCE(sum, Sum, i32, R_i64) DEF_REDUCE(sum, Sum, i64, R_i64)
DEF_REDUCE(sum, Sum, f16, R_f16) DEF_REDUCE(sum, Sum, bf16, R_bf16) DEF_REDUCE(sum, Sum, f32, R_f32)
DEF_REDUCE(sum, Sum, f64, R_f64)

/* mean is for floating dtypes only (PyTorch rejects integer inputs) */
DEF_REDUCE(mean, Mean, f16, R_f16) DEF_REDUCE(mean, Mean, bf16, R_bf16) DEF_REDUCE(mean, Mean, f32, R_f32)
DEF_REDUCE(mean, Mean, f64, R_f64)

DEF_REDUCE(max, Max, b8, R_b8) DEF_REDUCE(max, Max, u8, R_u8) DEF_REDUCE(max, Max, i8, R_i8)
DEF_REDUCE(max, Max, i16, R_i16) DEF_REDUCE(max, Max, i32, R_i32) DEF_REDUCE(max, Max, i64, R_i64)
DEF_REDUCE(max, Max, f16, R_f16) DEF_REDUCE(max, Max, bf16, R_bf16) DEF_REDUCE(max, Max, f32, R_f32)
DEF_REDUCE(max, Max, f64, R_f64)
