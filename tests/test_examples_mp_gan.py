"""examples/hogwild.py (several processes training one shared model) and examples/gan.py
(the paper's Listing 2 at scale) run end to end with small settings."""

import os
import subprocess
import sys

import pytest
from examples_util import ROOT, load_example  # noqa: E402



@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_hogwild_children_train_the_parents_model(method):
    pytest.importorskip("sklearn")
    # a subprocess: with 'spawn' the children import the example as __main__'s module
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "hogwild.py"), "--epochs", "3",
                          "--start-method", method, "--quiet"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    before = float(out.stdout.split("test accuracy before training ")[1].split("%")[0])
    after = float(out.stdout.rsplit("test accuracy ", 1)[1].split("%")[0])
    # the parent never trains: only the children's writes to shared memory can lift it
    assert before < 30 and after > 85, out.stdout


def test_gan_learns_the_ring_of_gaussians(capsys):
    mod = load_example("gan")
    history = mod.main(["--steps", "800", "--log-every", "400", "--no-plot"])
    (_, d0, close0, _), (_, d1, close1, covered) = history[0], history[-1]
    assert len(history) == 3 and "800 steps in" in capsys.readouterr().out
    assert d1 < 0.5 * d0 and close1 > close0 and covered >= 6, history
