"""The --ptl-order option of tests/conftest.py: the collected tests run reversed, or in a
seeded shuffle that is the same for the same seed, and a bad value is a usage error."""

import os
import subprocess
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))

SAMPLE = '''
import os
import pytest

@pytest.mark.parametrize("k", range(12))
def test_sample(k):
    with open(os.environ["PTL_ORDER_LOG"], "a") as f:
        f.write(f"{k}\\n")
'''


def _run(tmp_path, *options):
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    log = tmp_path / "order.log"
    if log.exists():
        log.unlink()
    env = dict(os.environ, PTL_ORDER_LOG=str(log), PYTHONPATH=TESTS + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                        "--rootdir", str(tmp_path), "-c", os.devnull, *options, str(tmp_path / "test_sample.py")],
                       env=env, capture_output=True, text=True, timeout=120)
    order = [int(x) for x in log.read_text().split()] if log.exists() else None
    return r, order


def test_collected_order_is_the_default(tmp_path):
    r, order = _run(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert order == list(range(12))


def test_reverse(tmp_path):
    r, order = _run(tmp_path, "--ptl-order=reverse")
    assert r.returncode == 0, r.stdout + r.stderr
    assert order == list(range(11, -1, -1))


def test_shuffle_is_seeded(tmp_path):
    _, first = _run(tmp_path, "--ptl-order=shuffle:1")
    _, again = _run(tmp_path, "--ptl-order=shuffle:1")
    _, other = _run(tmp_path, "--ptl-order=shuffle:2")
    assert sorted(first) == list(range(12)) and first != list(range(12))
    assert first == again and first != other


def test_bad_value_is_a_usage_error(tmp_path):
    r, order = _run(tmp_path, "--ptl-order=sideways")
    assert r.returncode == 4 and order is None        # pytest's exit code for usage errors
    assert "--ptl-order: expected 'collected', 'reverse' or 'shuffle:SEED'" in r.stderr
