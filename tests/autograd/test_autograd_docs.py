"""The `>>>` examples in pytorchlite.autograd's docstrings run and print what they say."""

import doctest

import pytest

import pytorchlite
from pytorchlite import autograd
from pytorchlite.autograd import anomaly_mode, engine, function, grad_mode, gradcheck

DOCUMENTED = [grad_mode.no_grad, grad_mode.enable_grad, grad_mode.set_grad_enabled, grad_mode.inference_mode,
              engine.backward, engine.grad, gradcheck, autograd, anomaly_mode, function,
              pytorchlite.Tensor.backward]


@pytest.mark.parametrize("obj", DOCUMENTED, ids=[getattr(o, "__qualname__", getattr(o, "__name__", "?"))
                                                 for o in DOCUMENTED])
def test_docstring_examples(obj):
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    for test in finder.find(obj, globs={"pytorchlite": pytorchlite}):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
