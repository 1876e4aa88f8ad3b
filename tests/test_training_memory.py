"""A long run must not grow: training steps of the README's digits CNN (the model, data
and step of examples/train_digits.py) leave the allocator's live and cached bytes and the
number of live Python objects where they were, and free each step's autograd graph by
reference counting alone (the cyclic GC is off). benchmarks/bench_memory.py runs the same
loop for 10,000 steps and watches RSS; this is its fast, exact counterpart."""

import gc
import weakref

import pytest

import pytorchlite as P
from pytorchlite._kernels import pointwise as _pointwise
from examples_util import load_example


def _snapshot():
    """(allocated bytes, cached bytes, live GC-tracked objects). The 0-d operands kept for
    Python scalars (two bounded caches, see _kernels/pointwise.py) are dropped first: Adam's
    bias corrections are new numbers every step, so those caches fill and clear in cycles."""
    _pointwise._SCALARS.clear()
    _pointwise._FAST_SCALARS.clear()
    return P.memory.memory_allocated(), P.memory.memory_cached(), len(gc.get_objects())


def test_digits_training_steps_do_not_grow():
    pytest.importorskip("sklearn")
    td = load_example("train_digits")
    P.manual_seed(0)
    x, y, _, _ = td.load_digits_split(0)
    model = td.CNN()
    opt = P.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = P.nn.NLLLoss()

    def step():
        idx = P.randperm(len(x))[:8]          # fixed-size batches: every step asks the same sizes
        loss, _ = td.train_step(model, opt, loss_fn, x[idx], y[idx])
        return weakref.ref(loss.grad_fn), loss.item()

    gc.collect()
    gc.disable()
    try:
        for _ in range(50):                   # Adam's state and the caches come into being here
            step()
        ref, first_loss = step()
        base = _snapshot()
        for i in range(1, 301):
            ref, loss = step()
            assert ref() is None, f"step {i}: the step's autograd graph outlived it"
            if i % 50 == 0:
                allocated, cached, objects = _snapshot()
                assert allocated == base[0], f"step {i}: {allocated - base[0]} more bytes held by tensors"
                assert cached == base[1], f"step {i}: {cached - base[1]} more bytes in the allocator cache"
                # one object leaked per step would be 50 per check; a few may come and go
                assert objects - base[2] <= 10, f"step {i}: {objects - base[2]} more live Python objects"
        assert loss < first_loss                  # it did train
    finally:
        gc.enable()
