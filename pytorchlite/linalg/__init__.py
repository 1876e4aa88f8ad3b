"""pytorchlite.linalg: linear algebra functions declared in ops.yaml with python_module: linalg."""
from pytorchlite.generated.functions import EXPORTS as _E

globals().update(_E.get("linalg", {}))
