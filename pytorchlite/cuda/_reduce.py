"""Reductions on a CUDA device: the launch planner and the launch of the kernels that
codegen writes from ops.yaml's `- reduction:` declarations (generated/reduce.cu).

Every reduction operator of ops.yaml (sum, mean, prod, amax/amin, max/min, argmax/argmin,
aminmax, var/std and their _mean forms, all/any, count_nonzero, logsumexp, norm) reaches
`run` on CUDA tensors: its kernel entry (pytorchlite/_kernels/reduce.py) makes PyTorch's
checks and calls the device registry's `Backend.reduce`, which the CUDA backend answers
here. The planning is unit-tested without a GPU (tests/cuda/test_reduce_nogpu.py,
against a fake driver); on an H100 the kernels matched NumPy through `plan` and `launch`
at the driver level, and `run` matched the CPU kernels on pytorchlite's CUDA tensors
(tests/cuda/test_reduce_gpu.py).

NOT TUNED: correct, not fast. On the H100 a sum ran at about a quarter of PyTorch's
bandwidth over rows, a fiftieth over columns (a thread per column reads one element per
row), and a full reduction of 2^24 elements at 2 GB/s (one output is one block: a split
over blocks with a second merging pass is what it needs).

A plan views the input as kept dims x reduced dims, each group in logical order,
coalesced (neighbours contiguous for every operand merge; size-1 dims drop), innermost
first, and picks
  * the geometry: `row` (one block of 256 threads per output, merging through warp
    shuffles) when the reduced elements are the close ones in memory or there are few
    outputs, `col` (one thread per output, neighbouring threads on neighbouring kept
    elements) when a kept dim is the closer one or the reduced runs are short;
  * the index width: 32-bit when the output count, the reduced count and every
    operand's extreme offsets fit in int32, 64-bit otherwise;
  * the output layout: the output (and an aux output) are contiguous in the keepdim shape;
    a reduction without keepdim is a view of it.
An output's reduced elements are numbered in row-major order of the reduced dims (the
index argmax / max(dim) return).
"""

from pytorchlite.cuda import _launch
from pytorchlite.generated import reductions as _R

# fewer reduced elements than this per output: a thread per output beats a block
ROW_MIN_REDUCED = 32

(NAME, DTYPES, OUT, AUX, NO_IDENTITY, AUX_IN, AUX_OUT, SPECIAL) = range(8)


def resolve(code, arg):
    """The reduction that runs: code, or the one its declaration names for this argument
    value (norm's p = 0, 1, 2, inf, -inf), as ptl_red_lookup does on the CPU."""
    if not 0 <= code < _R.R_NUM_OPS:
        raise ValueError(f"unknown reduction code {code}")
    for value, target in _R.REDUCTIONS[code][SPECIAL]:
        if arg == value:
            return target
    return code


class ReducePlan:
    """Where each output and each reduced element is, and how the kernel walks them."""

    def __init__(self, n_out, n_red, kept, red, geometry, wide):
        self.n_out = n_out                  # outputs
        self.n_red = n_red                  # reduced elements per output
        self.kept = kept                    # (sizes, [[out, in, aux] strides per dim]), innermost first
        self.red = red                      # (sizes, [[in] strides per dim]), innermost first
        self.geometry = geometry            # "row" or "col"
        self.wide = wide                    # 64-bit indices

    @property
    def suffix(self):
        return f"{self.geometry}{64 if self.wide else 32}"

    def blobs(self):
        """The bytes of the kept ptl_iter<3> and reduced ptl_iter<1> descriptors."""
        return (_launch.pack_iter(*self.kept, self.wide), _launch.pack_iter(*self.red, self.wide))

    def __repr__(self):
        return (f"ReducePlan(n_out={self.n_out}, n_red={self.n_red}, kept={self.kept}, red={self.red}, "
                f"{self.suffix})")


def _prod(values):
    n = 1
    for v in values:
        n *= v
    return n


def plan(shape, in_strides, dims, out_strides=None, aux_strides=None, cooperative=True):
    """Plan the reduction of an input (shape, strides in elements) over `dims`. The output
    and aux strides are in the keepdim shape (size 1 on reduced dims); by default both are
    contiguous there. Returns None when there is no output element. `cooperative=False`
    (a device whose block threads cannot cooperate: the CPU emulator) always plans `col`."""
    nd = len(shape)
    if nd > _launch.MAX_DIMS:
        raise RuntimeError(f"only tensors with up to {_launch.MAX_DIMS} dims are supported")
    dims = sorted(set(dims))
    kshape = tuple(1 if d in dims else s for d, s in enumerate(shape))
    if out_strides is None:
        out_strides = _contiguous(kshape)
    if aux_strides is None:
        aux_strides = out_strides
    kept_dims = [d for d in range(nd) if d not in dims]
    n_out = _prod(shape[d] for d in kept_dims)
    n_red = _prod(shape[d] for d in dims)
    if n_out == 0:
        return None
    ksizes, kstrides = _launch.coalesce([shape[d] for d in kept_dims],
                                        [[out_strides[d] for d in kept_dims], [in_strides[d] for d in kept_dims],
                                         [aux_strides[d] for d in kept_dims]])
    if n_red == 0:
        rsizes, rstrides = [0], [[0]]
    else:
        rsizes, rstrides = _launch.coalesce([shape[d] for d in dims], [[in_strides[d] for d in dims]])
    if len(ksizes) > _launch.MAX_DIMS or len(rsizes) > _launch.MAX_DIMS:
        raise RuntimeError(f"only tensors with up to {_launch.MAX_DIMS} dims are supported")
    # the input's offsets span kept and reduced dims together
    in_span = (ksizes + rsizes, [[st[1]] for st in kstrides] + rstrides)
    wide = not (n_out <= _launch.INT32_MAX and n_red <= _launch.INT32_MAX
                and _launch.fits_32bit(ksizes, kstrides) and _launch.fits_32bit(*in_span))
    if not cooperative or (n_out > 1 and n_red < ROW_MIN_REDUCED):
        geometry = "col"
    elif n_out == 1 or ksizes == [1]:
        geometry = "row"
    else:
        geometry = "row" if abs(rstrides[0][0]) < abs(kstrides[0][1]) else "col"
    return ReducePlan(n_out, n_red, (ksizes, kstrides), (rsizes, rstrides), geometry, wide)


def _contiguous(shape):
    strides, n = [], 1
    for s in reversed(shape):
        strides.append(n)
        n *= max(s, 1)
    return tuple(reversed(strides))


def kernel_name(code, dtype_code, p):
    return f"ptl_cu_red_{_R.REDUCTIONS[code][NAME]}_{_launch.SUFFIX[dtype_code]}_{p.suffix}"


def launch(k, code, dtype_code, p, out_ptr, aux_ptr, in_ptr, arg, stream=0):
    """Launch the planned reduction `code` (already resolved) on DeviceKernels k."""
    kept, red = p.blobs()
    a = _launch.Args()
    if p.wide:
        a.i64(p.n_out).i64(p.n_red)
    else:
        a.u32(p.n_out).u32(p.n_red)
    a.ptr(out_ptr).ptr(aux_ptr or 0).ptr(in_ptr).blob(kept).blob(red).f64(float(arg))
    work = p.n_out * _launch.BLOCK if p.geometry == "row" else p.n_out
    return k.launch(_R.REDUCTIONS[code][NAME], "reduce", kernel_name(code, dtype_code, p), work, a, stream)


def _ptr(t):
    return t._storage.ptr + t._offset * t._dtype.itemsize


def run(code, x, dims, keepdim, out_dtype, arg=0.0, aux_dtype=None, aux_in=None, op=None):
    """Reduce CUDA tensor x over `dims` with reduction `code` (generated/reductions.py),
    as pytorchlite/_kernels/reduce.py's _launch does on the CPU: returns the result (of
    out_dtype; the kernel writes the declared output dtype, and another dtype is a copy),
    and the aux output too when aux_dtype is given (max/min's indices, var_mean's mean);
    aux_in is an aux input (logsumexp's shift) in the keepdim shape. PyTorch's argument
    checks are the caller's; `op` is the operator named in errors (the reduction's name by
    default)."""
    from pytorchlite import _dtype as D
    from pytorchlite._core import contiguous_strides, empty as _empty, make
    from pytorchlite.cuda import _pointwise, _runtime

    code = resolve(code, arg)
    row = _R.REDUCTIONS[code]
    op = op or row[NAME]
    dt = x._dtype.code
    if dt not in row[DTYPES]:
        raise RuntimeError(f"{op}(): no CUDA kernel for dtype {x._dtype._torch_name}")
    if len(x._shape) > _launch.MAX_DIMS:
        raise RuntimeError(f"{op}(): CUDA reductions support tensors of up to {_launch.MAX_DIMS} dims, "
                           f"got {len(x._shape)}")
    shape = x._shape
    dims = tuple(sorted(set(dims)))
    kshape = tuple(1 if d in dims else s for d, s in enumerate(shape))
    fshape = kshape if keepdim else tuple(s for d, s in enumerate(shape) if d not in dims)
    if row[NO_IDENTITY] and _prod(kshape) and not _prod(shape[d] for d in dims):
        raise RuntimeError(f"{op}(): Expected reduction dim to have non-zero size.")
    natural = D.BY_CODE[row[OUT][dt]]
    out = _empty(kshape, natural, x._device)
    aux = aux_strides = None
    if aux_dtype is not None:
        if not row[AUX_OUT]:
            raise RuntimeError(f"{op}(): has no aux output")
        want = dt if row[AUX] == -1 else row[AUX]
        if aux_dtype.code != want:
            raise RuntimeError(f"{op}(): the aux output is {D.BY_CODE[want]._torch_name}, "
                               f"not {aux_dtype._torch_name}")
        aux = _empty(kshape, aux_dtype, x._device)
    elif aux_in is not None:
        if not row[AUX_IN] or aux_in._dtype.code != dt or aux_in._shape != kshape or aux_in._device != x._device:
            raise RuntimeError(f"{op}(): aux input must be a {x._dtype._torch_name} tensor of shape "
                               f"{list(kshape)} on {x._device}")
        aux, aux_strides = aux_in, aux_in._stride
    elif row[AUX_IN] and _prod(shape[d] for d in dims):
        raise RuntimeError(f"{op}(): needs its aux input")
    if _prod(kshape):
        k = _launch.kernels_for(x._device.index or 0)
        p = plan(shape, x._stride, dims, out._stride, aux_strides, getattr(k.d, "COOPERATIVE_BLOCKS", True))
        launch(k, code, dt, p, _ptr(out), _ptr(aux) if aux is not None else 0, _ptr(x), arg,
               _runtime.current_stream_handle(k.index))
    result = make(out._storage, fshape, contiguous_strides(fshape), 0, natural, None, True)
    if out_dtype is not natural:
        cast = _empty(fshape, out_dtype, x._device)
        _pointwise.copy_device(cast, result)
        result = cast
    if aux_dtype is not None:
        return result, make(aux._storage, fshape, contiguous_strides(fshape), 0, aux_dtype, None, True)
    return result
