"""Every reduction's generated generic instance, not only the hand-written fast paths.

The declarations in ops.yaml name hand-vectorised float32/float64 paths (`fast:`), which
the default run takes; with PTL_REDUCE_GENERIC=1 the engine skips them and runs the
generated loops for every dtype. The reduction tests run that way in a subprocess, so
the generic instances are checked against PyTorch on every layout the tests cover.
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A float64 row whose sum depends on the order of the additions: the fast path (16 lanes
# in blocks) and the generated loop (four chains) round it differently. That the two
# runs differ shows the switch reaches the engine.
PROBE = """
import numpy as np, pytorchlite as P
a = np.ones(4096); a[0] = 1e16; a[2048] = -1e16
print(repr(P.tensor(a).view(64, 64).sum(1)[0].item()), repr(P.tensor(a).sum().item()))
"""


def _run(args, generic):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PTL_REDUCE_GENERIC", None)
    if generic:
        env["PTL_REDUCE_GENERIC"] = "1"
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)


def test_the_switch_reaches_the_engine():
    fast, generic = _run(["-c", PROBE], False), _run(["-c", PROBE], True)
    assert fast.returncode == 0 and generic.returncode == 0, fast.stderr + generic.stderr
    assert fast.stdout != generic.stdout


def test_generic_instances_pass_the_reduction_tests():
    r = _run(["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests/test_reductions.py"], True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
