"""Export with pytorchlite.onnx and run in onnxruntime, comparing with pytorchlite.

(The directory is tests/onnx_export, not tests/onnx: a tests/onnx directory on sys.path would
import as a namespace package named `onnx` where the onnx package is not installed, and the
tests would fail instead of skipping.)"""

import numpy as np
import pytest

import pytorchlite

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def session(proto):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _flat(out):
    if isinstance(out, pytorchlite.Tensor):
        return [out]
    flat = []
    for o in out:
        flat.extend(_flat(o))
    return flat


def export_and_compare(model, make_inputs, names, batches=(1, 7), dynamic=None, rtol=1e-5, atol=1e-5,
                       example_batch=2, **kw):
    """Export `model` traced on make_inputs(example_batch) with a dynamic axis 0 on every input
    (or `dynamic`), check it, then run it in onnxruntime at each batch size against pytorchlite."""
    dynamic = {n: {0: "batch"} for n in names} if dynamic is None else dynamic
    proto = pytorchlite.onnx.export(model, make_inputs(example_batch), None, input_names=names,
                                    dynamic_axes=dynamic, **kw)
    onnx.checker.check_model(proto, full_check=True)
    sess = session(proto)
    for b in batches:
        xs = make_inputs(b)
        with pytorchlite.no_grad():
            want = _flat(model(*xs))
        got = sess.run(None, {n: x.numpy() for n, x in zip(names, xs)})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            w = w.numpy()
            assert g.shape == w.shape, (b, g.shape, w.shape)
            assert g.dtype == w.dtype, (b, g.dtype, w.dtype)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"batch {b}")
    return proto
