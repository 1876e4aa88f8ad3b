import os
import sys

# tests import codegen (a build tool, not installed) from the checkout
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
