"""pytorchlite.onnx: export a model to ONNX (and read one back).

    export(model, args, f, input_names=, output_names=, dynamic_axes=, opset_version=17)
    load(path) -> OnnxModule: the ONNX graph run with pytorchlite operators (a round trip)

Each operator's ONNX form is declared in ops.yaml (`onnx:`, docs/ops_yaml.md); the model is
traced with `pytorchlite.jit.trace` and the graph lowered node by node. Needs the `onnx`
package (`pip install 'pytorchlite[onnx]'`, which brings onnxruntime too)."""

from pytorchlite.onnx._builder import OnnxExportError  # noqa: F401
from pytorchlite.onnx._export import export  # noqa: F401
from pytorchlite.onnx._load import OnnxImportError, OnnxModule, load  # noqa: F401

__all__ = ["export", "load", "OnnxModule", "OnnxExportError", "OnnxImportError"]
