"""Build glue: one `pip install .` (or `pip install -e .`) runs codegen and compiles the
C kernels; see codegen/ for both steps. Everything else is in pyproject.toml."""

import os
import sys

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithCodegen(build_py):
    """Generate generated/ from the YAML and compile the extension before packaging."""

    def run(self):
        sys.path.insert(0, ROOT)
        try:
            from codegen.build import build
            from codegen.gen import generate
        finally:
            sys.path.remove(ROOT)
        generate(ROOT)
        build(ROOT)
        super().run()


class BinaryDistribution(Distribution):
    """The wheel carries a compiled extension: make it platform-specific."""

    def has_ext_modules(self):
        return True


setup(
    cmdclass={"build_py": BuildPyWithCodegen},
    distclass=BinaryDistribution,
    packages=find_packages(include=["pytorchlite", "pytorchlite.*"]) + ["pytorchlite.generated"],
    package_dir={"pytorchlite.generated": "generated"},
    package_data={"pytorchlite.generated": ["*.so", "*.pyd", "*.pyi", "README.md"]},
    include_package_data=False,
)
