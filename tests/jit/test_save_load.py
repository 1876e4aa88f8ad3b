"""jit.save / jit.load: a graph plus its weights in one safetensors file (no pickle),
loaded and run in a fresh process that has none of the traced source."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pytorchlite as P
from pytorchlite import jit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _Net(P.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = P.nn.Linear(4, 3)
        self.register_buffer("shift", P.tensor([0.5, -0.5, 1.0]))

    def forward(self, x):
        h = self.fc(x).relu() + self.shift
        return h.max(dim=1), h[:, 1:] * 2


def test_roundtrip_in_a_fresh_process(tmp_path):
    P.manual_seed(0)
    net = _Net()
    x = P.randn(5, 4)
    path = str(tmp_path / "net.ptl")
    jit.save(jit.trace(net, x), path)
    want = net(x)
    P.save({"x": x, "values": want[0].values, "indices": want[0].indices, "sliced": want[1]},
           str(tmp_path / "ref.ptl"))
    # the file is a safetensors file: an 8-byte header length, then JSON (no pickle)
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    assert any(k.startswith("tensors") for k in header)
    script = textwrap.dedent(f"""
        import pytorchlite as P
        m = P.jit.load({path!r})
        r = P.load({str(tmp_path / "ref.ptl")!r})
        first, sliced = m(r["x"])
        assert type(first) is P.return_types.max, type(first)
        values, indices = first
        assert (values - r["values"]).abs().max().item() == 0, "values"
        assert indices.tolist() == r["indices"].tolist(), "indices"
        assert (sliced - r["sliced"]).abs().max().item() == 0, "sliced"
        assert sorted(m.state_dict()) == ["fc.bias", "fc.weight", "shift"]
        print(m.graph)
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", script], cwd=str(tmp_path), env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "aten::max(" in out.stdout and "%fc.weight : Float(3, 4" in out.stdout


def test_function_with_constants_and_special_literals(tmp_path):
    c = P.tensor([1.0, 2.0, 3.0], dtype=P.float64)

    def f(x):
        y = x.to(P.float64) * c
        return P.nan_to_num(y / 0.0, posinf=float("inf")), y[..., ::2], y.sum(dim=(0,))
    x = P.tensor([1.0, -1.0, 0.0])
    path = str(tmp_path / "f.ptl")
    jit.save(jit.trace(f, x), path)
    g = jit.load(path)
    for got, want in zip(g(x), f(x)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.dtype == want.dtype


def test_errors(tmp_path):
    with pytest.raises(TypeError, match="expected a TracedFunction or TracedModule"):
        jit.save(lambda x: x, str(tmp_path / "x"))
    P.save({"a": P.ones(1)}, str(tmp_path / "plain"))
    with pytest.raises(RuntimeError, match="is not a file written by pytorchlite.jit.save"):
        jit.load(str(tmp_path / "plain"))
