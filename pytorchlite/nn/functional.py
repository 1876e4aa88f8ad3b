"""pytorchlite.nn.functional: operators declared in ops.yaml with python_module: nn.functional."""
from pytorchlite.generated.functions import EXPORTS as _E

globals().update(_E.get("nn.functional", {}))
