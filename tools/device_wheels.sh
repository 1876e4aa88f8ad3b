#!/usr/bin/env bash
# Download the wheels the GPU machine lacks into .whl/ (git-ignored), for a machine with no
# package index: Python 3.12, x86-64 Linux, PyTorch's CUDA 13 image (cuda-bindings, numpy,
# jinja2, pyyaml, pytest, hypothesis, safetensors are there; cffi, pycparser and
# scipy-openblas32 are not). Run it here, where PyPI is reachable:
#
#     tools/device_wheels.sh            # then carry .whl/ with the checkout
#
# On the GPU machine (from the checkout's root; $OUT is where the report should go):
#
#     python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl &&
#     PYTHONPATH=/tmp/site python3 pytorchlite/cuda/check.py --out $OUT/report.md
#
# pytorchlite/cuda/check.py (rather than `python -m pytorchlite.cuda.check`) because the
# checkout is not built yet: the check builds it first, and `-m` would import it.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON_VERSION:-3.12}
# pip matches each manylinux tag exactly: name every one a wheel may carry
PLATFORMS=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64
           manylinux2014_x86_64 manylinux1_x86_64)
# one version of each (two of one package stop the install there); cffi needs pycparser
PACKAGES=("cffi>=1.16" "pycparser" "scipy-openblas32>=0.3.27")

rm -rf .whl
mkdir -p .whl
args=()
for p in "${PLATFORMS[@]}"; do args+=(--platform "$p"); done
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
    "${args[@]}" -d .whl "${PACKAGES[@]}"
ls -l .whl
