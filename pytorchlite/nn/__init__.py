"""pytorchlite.nn (layers arrive with issue 5); nn.functional holds the declared functional ops."""
from pytorchlite.nn import functional  # noqa: F401
