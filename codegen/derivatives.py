"""derivatives.yaml -> backward node classes (filled in with the autograd engine)."""

from __future__ import annotations

import os

from .model import load_yaml


def load_derivatives(path, ops):
    """Validate derivatives.yaml against the operators; returns {path: content} to write."""
    if not os.path.exists(path):
        return {}
    load_yaml(path, "derivatives.yaml")
    return {}
