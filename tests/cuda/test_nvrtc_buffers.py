"""NVRTC writes its log and images into buffers the caller hands it. Those must be fresh
mutable buffers: `b" " * 1` is CPython's shared one-byte object, and an empty log (one NUL)
written there changed every b" " in the process (seen as a NUL inside a codegen template's
" " much later, in an unrelated test)."""

import pytest

from pytorchlite.cuda import _nvrtc

try:
    _nvrtc.nvrtc()
except _nvrtc.NvrtcUnavailable as e:
    pytest.skip(f"NVRTC is not available: {e}", allow_module_level=True)


def test_an_empty_log_leaves_shared_bytes_alone():
    image, log = _nvrtc.compile_text('extern "C" __global__ void k(float *x) { x[0] = 1; }', "sm_80", "k.cu")
    assert image[:4] == b"\x7fELF" and log == ""
    # the one-byte object CPython shares (every b" " and bytes([32]) is it): still a space
    assert b" "[0] == 32 and bytes([32])[0] == 32 and (b" " * 1)[0] == 32
