"""pytorchlite.utils: data loading (pytorchlite.utils.data)."""

from pytorchlite.utils import data  # noqa: F401
