import os
import random
import sys

import pytest

# tests import codegen (a build tool, not installed) from the checkout
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def pytest_addoption(parser):
    parser.addoption(
        "--ptl-order", default="collected", metavar="ORDER",
        help="run the collected tests in another order, to find tests that depend on what an "
             "earlier test left behind: 'collected' (default), 'reverse', or 'shuffle:SEED' "
             "(a seeded random order over all tests, across modules)")


def _order(value):
    if value in ("collected", "reverse"):
        return value, None
    kind, _, seed = value.partition(":")
    if kind == "shuffle" and seed.lstrip("-").isdigit():
        return kind, int(seed)
    raise pytest.UsageError(f"--ptl-order: expected 'collected', 'reverse' or 'shuffle:SEED' "
                            f"(SEED an integer), got {value!r}")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
    _order(config.getoption("--ptl-order"))     # a bad value fails before collection


def pytest_collection_modifyitems(config, items):
    kind, seed = _order(config.getoption("--ptl-order"))
    if kind == "reverse":
        items.reverse()
    elif kind == "shuffle":
        random.Random(seed).shuffle(items)


def pytest_report_header(config):
    value = config.getoption("--ptl-order")
    return None if value == "collected" else f"ptl-order: {value}"
