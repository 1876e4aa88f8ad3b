/* nn.cu: the neural-network kernels the digits CNN needs on CUDA, hand-written because a
 * declaration cannot express them: softmax / log_softmax rows and their gradients,
 * nll_loss and its gradient, max_pool2d with indices and its gradient, and the im2col /
 * col2im halves of convolution (the GEMM between them is cuBLAS's:
 * pytorchlite/cuda/_conv.py). Launched by pytorchlite/cuda/_nn.py.
 *
 * Every kernel computes in float32 or float64 (`_f32` / `_f64`: the compute dtypes of the
 * meta functions; float16 / bfloat16 tensors are widened by the structured runtime before
 * and rounded after), takes contiguous operands and 64-bit sizes, and is a grid-stride
 * loop with one thread per independent result, so no kernel needs its block's threads
 * to cooperate and each result is summed in the CPU kernels' order (kernels/nn.c):
 *
 *   ptl_cu_softmax_fwd_<t>(outer, n, inner, x, y, is_log)       a thread per row (o, i)
 *   ptl_cu_softmax_bwd_<t>(outer, n, inner, g, y, gx, is_log)   a thread per row
 *   ptl_cu_nll_fwd_none_<t>(N, C, D, x, target, t_u8, w, ignore, out, bad)
 *   ptl_cu_nll_fwd_reduce_<t>(N, C, D, x, target, t_u8, w, ignore, mean, out, total, bad)
 *                                                               one thread: the CPU's order
 *   ptl_cu_nll_bwd_<t>(N, C, D, g, target, t_u8, w, ignore, reduction, total, gx)
 *                                                               a thread per element of gx
 *   ptl_cu_maxpool2d_fwd_<t>(nc, geometry..., x, y, idx)        a thread per output
 *   ptl_cu_maxpool2d_bwd_<t>(nc, geometry..., g, idx, gx)       a thread per input element
 *                                                               (gathers: no atomics)
 *   ptl_cu_im2col_<t>(N, C, H, W, geometry..., x, col)          col is (C*kh*kw, N, oh*ow)
 *   ptl_cu_col2im_<t>(N, C, H, W, geometry..., col, x)          a thread per input element
 *   ptl_cu_channel_bias_<t>(N, C, L, y, b)                      y[n, c, :] += b[c]
 *
 * A target outside [0, C) (and not ignore_index) is never used as an index: it makes
 * that loss NaN and is written to `bad` (the host reports it; kernels/nn.c raises
 * IndexError before computing).
 */
#include "ptl_cuda.cuh"

#define PTL_BLOCK 256

template <typename T> static __device__ __forceinline__ T nn_exp(T v);
template <> __device__ __forceinline__ float nn_exp<float>(float v) { return expf(v); }
template <> __device__ __forceinline__ double nn_exp<double>(double v) { return exp(v); }
template <typename T> static __device__ __forceinline__ T nn_log(T v);
template <> __device__ __forceinline__ float nn_log<float>(float v) { return logf(v); }
template <> __device__ __forceinline__ double nn_log<double>(double v) { return log(v); }
template <typename T> static __device__ __forceinline__ T nn_nan();
template <> __device__ __forceinline__ float nn_nan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double nn_nan<double>() { return __longlong_as_double(0x7ff8000000000000LL); }

template <typename T> static __device__ __forceinline__ T nn_neg_inf();
template <> __device__ __forceinline__ float nn_neg_inf<float>() { return __int_as_float((int)0xff800000u); }
template <> __device__ __forceinline__ double nn_neg_inf<double>() { return __longlong_as_double((long long)0xfff0000000000000ULL); }

/* ---- softmax rows: x viewed as (outer, n, inner), the row of (o, i) strided by inner ---- */

template <typename T>
static __device__ __forceinline__ void softmax_fwd(int64_t outer, int64_t n, int64_t inner, const T *x, T *y,
                                                   int is_log) {
    PTL_GRID_LOOP(int64_t, r, outer * inner) {
        const int64_t o = r / inner, i = r % inner;
        const T *xr = x + o * n * inner + i;
        T *yr = y + o * n * inner + i;
        T mx = xr[0];
        for (int64_t k = 1; k < n; k++) {
            const T v = xr[k * inner];
            if (v > mx || v != v) mx = v;        /* NaN propagates */
        }
        T s = 0;
        for (int64_t k = 0; k < n; k++) s += nn_exp<T>(xr[k * inner] - mx);
        if (is_log) {
            const T ls = nn_log<T>(s);
            for (int64_t k = 0; k < n; k++) yr[k * inner] = xr[k * inner] - mx - ls;
        } else {
            for (int64_t k = 0; k < n; k++) yr[k * inner] = nn_exp<T>(xr[k * inner] - mx) / s;
        }
    }
}

/* softmax: gx = y * (g - sum(g * y)); log_softmax: gx = g - exp(y) * sum(g) */
template <typename T>
static __device__ __forceinline__ void softmax_bwd(int64_t outer, int64_t n, int64_t inner, const T *g, const T *y,
                                                   T *gx, int is_log) {
    PTL_GRID_LOOP(int64_t, r, outer * inner) {
        const int64_t base = (r / inner) * n * inner + r % inner;
        T s = 0;
        for (int64_t k = 0; k < n; k++) {
            const int64_t j = base + k * inner;
            s += is_log ? g[j] : g[j] * y[j];
        }
        for (int64_t k = 0; k < n; k++) {
            const int64_t j = base + k * inner;
            gx[j] = is_log ? g[j] - nn_exp<T>(y[j]) * s : y[j] * (g[j] - s);
        }
    }
}

/* ---- nll_loss: self (N, C, D) -------------------------------------------------------------- */

static __device__ __forceinline__ int64_t nll_target(const void *t, int t_u8, int64_t i) {
    return t_u8 ? (int64_t)((const uint8_t *)t)[i] : ((const int64_t *)t)[i];
}

template <typename T>
static __device__ __forceinline__ void nll_fwd_none(int64_t N, int64_t C, int64_t D, const T *x, const void *t,
                                                    int t_u8, const T *w, int64_t ignore, T *out, int64_t *bad) {
    PTL_GRID_LOOP(int64_t, i, N * D) {
        const int64_t c = nll_target(t, t_u8, i), b = i / D, d = i % D;
        if (c == ignore) {
            out[i] = 0;
        } else if (c < 0 || c >= C) {
            out[i] = nn_nan<T>();
            *bad = c;
        } else {
            out[i] = -(w ? w[c] : (T)1) * x[(b * C + c) * D + d];
        }
    }
}

template <typename T>
static __device__ __forceinline__ void nll_fwd_reduce(int64_t N, int64_t C, int64_t D, const T *x, const void *t,
                                                      int t_u8, const T *w, int64_t ignore, int mean, T *out,
                                                      T *total, int64_t *bad) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double s = 0, tw = 0;
    for (int64_t i = 0; i < N * D; i++) {
        const int64_t c = nll_target(t, t_u8, i), b = i / D, d = i % D;
        if (c == ignore) continue;
        if (c < 0 || c >= C) {
            *bad = c;
            s = tw = nn_nan<double>();
            break;
        }
        const double wc = w ? (double)w[c] : 1.0;
        s -= wc * (double)x[(b * C + c) * D + d];
        tw += wc;
    }
    *out = (T)(mean ? s / tw : s);
    *total = (T)tw;
}

/* gx = 0 but at each counted target: -w[c] * g (g[i] for none, g / total for mean) */
template <typename T>
static __device__ __forceinline__ void nll_bwd(int64_t N, int64_t C, int64_t D, const T *g, const void *t, int t_u8,
                                               const T *w, int64_t ignore, int reduction, const T *total, T *gx) {
    PTL_GRID_LOOP(int64_t, j, N * C * D) {
        const int64_t d = j % D, c = (j / D) % C, b = j / (C * D), i = b * D + d;
        const int64_t tc = nll_target(t, t_u8, i);
        T v = 0;
        if (tc == c && tc != ignore) {
            const T scale = reduction == 0 ? g[i] : (reduction == 1 ? g[0] / total[0] : g[0]);
            v = -(w ? w[c] : (T)1) * scale;
        }
        gx[j] = v;
    }
}

/* ---- max_pool2d: planes of (h, w); padding reads as -inf; the index is h * w_in + w ---- */

struct pool_geom {
    int64_t nc, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
};

template <typename T>
static __device__ __forceinline__ void maxpool_fwd(pool_geom p, const T *x, T *y, int64_t *idx) {
    PTL_GRID_LOOP(int64_t, o, p.nc * p.oh * p.ow) {
        const int64_t ox = o % p.ow, oy = (o / p.ow) % p.oh, plane = o / (p.oh * p.ow);
        const T *xp = x + plane * p.h * p.w;
        int64_t best = -1;
        T bv = nn_neg_inf<T>();     /* a window entirely in the padding: -inf, index -1 */
        for (int64_t i = 0; i < p.kh; i++) {
            const int64_t hy = oy * p.sh - p.ph + i * p.dh;
            if (hy < 0 || hy >= p.h) continue;
            for (int64_t j = 0; j < p.kw; j++) {
                const int64_t wx = ox * p.sw - p.pw + j * p.dw;
                if (wx < 0 || wx >= p.w) continue;
                const T v = xp[hy * p.w + wx];
                if (best < 0 || v > bv || (v != v && bv == bv)) {
                    bv = v;
                    best = hy * p.w + wx;
                }
            }
        }
        y[o] = bv;
        idx[o] = best;
    }
}

/* each input element gathers the gradients of the windows that picked it, in output order */
template <typename T>
static __device__ __forceinline__ void maxpool_bwd(pool_geom p, const T *g, const int64_t *idx, T *gx) {
    PTL_GRID_LOOP(int64_t, e, p.nc * p.h * p.w) {
        const int64_t at = e % (p.h * p.w), plane = e / (p.h * p.w);
        const int64_t hy = at / p.w, wx = at % p.w;
        const int64_t *ip = idx + plane * p.oh * p.ow;
        const T *gp = g + plane * p.oh * p.ow;
        /* outputs whose window rows can cover hy: oy * sh - ph <= hy <= oy * sh - ph + (kh - 1) * dh */
        int64_t oy0 = hy + p.ph - (p.kh - 1) * p.dh;
        oy0 = oy0 <= 0 ? 0 : (oy0 + p.sh - 1) / p.sh;
        int64_t oy1 = (hy + p.ph) / p.sh;
        if (oy1 > p.oh - 1) oy1 = p.oh - 1;
        int64_t ox0 = wx + p.pw - (p.kw - 1) * p.dw;
        ox0 = ox0 <= 0 ? 0 : (ox0 + p.sw - 1) / p.sw;
        int64_t ox1 = (wx + p.pw) / p.sw;
        if (ox1 > p.ow - 1) ox1 = p.ow - 1;
        T s = 0;
        for (int64_t oy = oy0; oy <= oy1; oy++)
            for (int64_t ox = ox0; ox <= ox1; ox++)
                if (ip[oy * p.ow + ox] == at) s += gp[oy * p.ow + ox];
        gx[e] = s;
    }
}

/* ---- convolution's halves: col is (C * kh * kw, N, oh * ow) ------------------------------ */

struct conv_geom {
    int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
};

template <typename T>
static __device__ __forceinline__ void im2col(conv_geom q, const T *x, T *col) {
    const int64_t L = q.oh * q.ow;
    PTL_GRID_LOOP(int64_t, e, q.c * q.kh * q.kw * q.n * L) {
        const int64_t l = e % L, b = (e / L) % q.n, row = e / (L * q.n);
        const int64_t j = row % q.kw, i = (row / q.kw) % q.kh, c = row / (q.kw * q.kh);
        const int64_t hy = (l / q.ow) * q.sh - q.ph + i * q.dh, wx = (l % q.ow) * q.sw - q.pw + j * q.dw;
        col[e] = (hy >= 0 && hy < q.h && wx >= 0 && wx < q.w) ? x[((b * q.c + c) * q.h + hy) * q.w + wx] : (T)0;
    }
}

template <typename T>
static __device__ __forceinline__ void col2im(conv_geom q, const T *col, T *x) {
    const int64_t L = q.oh * q.ow;
    PTL_GRID_LOOP(int64_t, e, q.n * q.c * q.h * q.w) {
        const int64_t wx = e % q.w, hy = (e / q.w) % q.h, c = (e / (q.w * q.h)) % q.c, b = e / (q.w * q.h * q.c);
        T s = 0;
        for (int64_t i = 0; i < q.kh; i++) {
            const int64_t ty = hy + q.ph - i * q.dh;
            if (ty < 0 || ty % q.sh) continue;
            const int64_t oy = ty / q.sh;
            if (oy >= q.oh) continue;
            for (int64_t j = 0; j < q.kw; j++) {
                const int64_t tx = wx + q.pw - j * q.dw;
                if (tx < 0 || tx % q.sw) continue;
                const int64_t ox = tx / q.sw;
                if (ox >= q.ow) continue;
                s += col[(((c * q.kh + i) * q.kw + j) * q.n + b) * L + oy * q.ow + ox];
            }
        }
        x[e] = s;
    }
}

template <typename T>
static __device__ __forceinline__ void channel_bias(int64_t N, int64_t C, int64_t L, T *y, const T *b) {
    PTL_GRID_LOOP(int64_t, e, N * C * L) y[e] += b[(e / L) % C];
}

/* ---- the entry points, per compute dtype ---------------------------------------------------- */

#define PTL_NN_KERNELS(T, sfx)                                                                                  \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_softmax_fwd_##sfx(                         \
        int64_t outer, int64_t n, int64_t inner, const T *x, T *y, int is_log) {                                \
        softmax_fwd<T>(outer, n, inner, x, y, is_log);                                                          \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_softmax_bwd_##sfx(                         \
        int64_t outer, int64_t n, int64_t inner, const T *g, const T *y, T *gx, int is_log) {                   \
        softmax_bwd<T>(outer, n, inner, g, y, gx, is_log);                                                      \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_nll_fwd_none_##sfx(                        \
        int64_t N, int64_t C, int64_t D, const T *x, const void *t, int t_u8, const T *w, int64_t ignore,        \
        T *out, int64_t *bad) {                                                                                 \
        nll_fwd_none<T>(N, C, D, x, t, t_u8, w, ignore, out, bad);                                              \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_nll_fwd_reduce_##sfx(                      \
        int64_t N, int64_t C, int64_t D, const T *x, const void *t, int t_u8, const T *w, int64_t ignore,        \
        int mean, T *out, T *total, int64_t *bad) {                                                             \
        nll_fwd_reduce<T>(N, C, D, x, t, t_u8, w, ignore, mean, out, total, bad);                               \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_nll_bwd_##sfx(                             \
        int64_t N, int64_t C, int64_t D, const T *g, const void *t, int t_u8, const T *w, int64_t ignore,        \
        int reduction, const T *total, T *gx) {                                                                 \
        nll_bwd<T>(N, C, D, g, t, t_u8, w, ignore, reduction, total, gx);                                       \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_maxpool2d_fwd_##sfx(                       \
        const pool_geom p, const T *x, T *y, int64_t *idx) {                                                    \
        maxpool_fwd<T>(p, x, y, idx);                                                                           \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_maxpool2d_bwd_##sfx(                       \
        const pool_geom p, const T *g, const int64_t *idx, T *gx) {                                             \
        maxpool_bwd<T>(p, g, idx, gx);                                                                          \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_im2col_##sfx(const conv_geom q, const T *x, \
                                                                                 T *col) {                      \
        im2col<T>(q, x, col);                                                                                   \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_col2im_##sfx(const conv_geom q,            \
                                                                                 const T *col, T *x) {          \
        col2im<T>(q, col, x);                                                                                   \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(PTL_BLOCK) ptl_cu_channel_bias_##sfx(                        \
        int64_t N, int64_t C, int64_t L, T *y, const T *b) {                                                    \
        channel_bias<T>(N, C, L, y, b);                                                                         \
    }

PTL_NN_KERNELS(float, f32)
PTL_NN_KERNELS(double, f64)
