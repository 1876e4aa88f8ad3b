/* Entry points for the small-call fast paths of the Python layer: the same kernels as
 * the general entries, with the descriptors built here from a few integers instead of
 * being filled from Python (each cffi descriptor costs the caller about a microsecond
 * more than the work it describes on small tensors). */
#include "ptl.h"

int ptl_reduce(int op, const ptl_tensor *in, const ptl_tensor *out, const ptl_tensor *aux, double arg);

/* ptl_reduce over every element of a contiguous input of n elements into one output
 * element: what ptl_reduce computes for any contiguous shape with every dim reduced,
 * since it merges those dims into one of n elements first. */
int ptl_reduce_contiguous(int op, intptr_t in, int in_dtype, int64_t n, intptr_t out, int out_dtype, double arg) {
    if (n < 0) return PTL_ERR_ARG;
    ptl_tensor ts[2];
    memset(ts, 0, sizeof ts);
    ts[0].data = (void *)in;
    ts[0].dtype = in_dtype;
    ts[0].ndim = 1;
    ts[0].sizes[0] = n;
    ts[0].strides[0] = 1;
    ts[1].data = (void *)out;
    ts[1].dtype = out_dtype;
    ts[1].ndim = 1;
    ts[1].sizes[0] = 1;
    ts[1].strides[0] = 1;
    return ptl_reduce(op, &ts[0], &ts[1], 0, arg);
}
