"""The README's main job: examples/train_digits.py trains the digits CNN to at least 97%
held-out accuracy, and its checkpoint reloads into a fresh model with the same accuracy."""


import pytest

pytest.importorskip("sklearn")

import pytorchlite  # noqa: E402
from examples_util import load_example  # noqa: E402



def test_train_digits_reaches_97_percent_and_checkpoint_reloads(tmp_path, capsys):
    acc = load_example("train_digits").main(["--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert acc >= 0.97, out
    ckpt = tmp_path / "digits_cnn.safetensors"
    assert ckpt.exists() and "reloaded model's test accuracy" in out
    state = pytorchlite.load(str(ckpt))
    assert set(state) == {"model", "optimizer"}
    assert state["model"]["conv1.weight"].shape == (16, 1, 3, 3)


def test_checkpoint_roundtrip_of_an_untrained_model(tmp_path):
    mod = load_example("train_digits")
    x_train, y_train, x_test, y_test = mod.load_digits_split(0)
    model = mod.CNN()
    opt = pytorchlite.optim.Adam(model.parameters())
    path = str(tmp_path / "c.safetensors")
    # an untrained model reloads with its own (chance-level) accuracy: the roundtrip compares
    # against the saved weights, not against a fixed number
    assert mod.checkpoint_roundtrip(model, opt, x_test, y_test, path) == mod.accuracy(model, x_test, y_test)


def test_export_writes_an_onnx_model_that_predicts_the_same(tmp_path, capsys):
    pytest.importorskip("onnx")
    path = tmp_path / "digits.onnx"
    acc = load_example("train_digits").main(["--epochs", "1", "--out", str(tmp_path), "--export", str(path)])
    out = capsys.readouterr().out
    assert path.exists() and "ONNX model written to" in out
    import onnx
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    assert [i.name for i in proto.graph.input] == ["image"]
    if "onnxruntime: test accuracy" in out:     # the example checks it when onnxruntime is there
        assert f"onnxruntime: test accuracy {acc:.2%}" in out
