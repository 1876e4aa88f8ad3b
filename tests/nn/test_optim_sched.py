"""Optimizers (RMSprop, Adagrad; SGD/Adam/AdamW are in test_module.py) and learning-rate
schedulers, against PyTorch where installed."""

import copy
import math

import numpy as np
import pytest

import pytorchlite as P
import pytorchlite.nn as nn
import pytorchlite.optim as optim
from pytorchlite.optim import lr_scheduler as sched


def _pair():
    torch = pytest.importorskip("torch")
    ours = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3)).double()
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3)).double()
    with torch.no_grad():
        for po, pt in zip(ours.parameters(), theirs.parameters()):
            pt.copy_(torch.from_numpy(po.detach().numpy().copy()))
    return torch, ours, theirs


OPTIMIZERS = {
    "rmsprop": lambda ps, m: m.RMSprop(ps, lr=0.01),
    "rmsprop-momentum-wd": lambda ps, m: m.RMSprop(ps, lr=0.01, momentum=0.9, weight_decay=0.1),
    "rmsprop-centered": lambda ps, m: m.RMSprop(ps, lr=0.01, alpha=0.9, centered=True, eps=1e-6),
    "rmsprop-centered-momentum-maximize": lambda ps, m: m.RMSprop(ps, lr=0.005, centered=True, momentum=0.5,
                                                                   maximize=True),
    "adagrad": lambda ps, m: m.Adagrad(ps, lr=0.1),
    "adagrad-decay-wd-init": lambda ps, m: m.Adagrad(ps, lr=0.1, lr_decay=0.05, weight_decay=0.01,
                                                     initial_accumulator_value=0.3),
    "adagrad-maximize": lambda ps, m: m.Adagrad(ps, lr=0.05, eps=1e-6, maximize=True),
    "sgd": lambda ps, m: m.SGD(ps, lr=0.1),
    "sgd-nesterov-wd": lambda ps, m: m.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam-amsgrad-maximize": lambda ps, m: m.Adam(ps, lr=0.01, amsgrad=True, maximize=True),
    "adamw-wd": lambda ps, m: m.AdamW(ps, lr=0.01, weight_decay=0.1),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_five_steps_match_pytorch_float64(name):
    torch, ours, theirs = _pair()
    make = OPTIMIZERS[name]
    opt_o, opt_t = make(ours.parameters(), optim), make(theirs.parameters(), torch.optim)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 5)), rng.integers(0, 3, 8)
    for _ in range(5):
        opt_o.zero_grad()
        nn.functional.cross_entropy(ours(P.tensor(x)), P.tensor(y)).backward()
        opt_o.step()
        opt_t.zero_grad()
        torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y)).backward()
        opt_t.step()
    for (n, po), (_, pt) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(po.detach().numpy(), pt.detach().numpy(), atol=1e-6, rtol=0, err_msg=n)
    # the per-parameter state holds the same buffers
    for po, pt in zip(ours.parameters(), theirs.parameters()):
        so, st = opt_o.state[po], opt_t.state[pt]
        assert sorted(so) == sorted(st)
        for k in so:
            vo = so[k].numpy() if isinstance(so[k], P.Tensor) else so[k]
            vt = st[k].numpy() if hasattr(st[k], "numpy") else st[k]
            np.testing.assert_allclose(vo, vt, atol=1e-6, rtol=0, err_msg=k)


@pytest.mark.parametrize("name", ["rmsprop-centered", "adagrad-decay-wd-init"])
def test_state_dict_resume_gives_the_same_trajectory(name):
    make = OPTIMIZERS[name]
    P.manual_seed(0)
    a = nn.Linear(3, 2).double()
    b = nn.Linear(3, 2).double()
    b.load_state_dict(a.state_dict())
    x = P.randn(4, 3, dtype=P.float64)
    opt_a = make(a.parameters(), optim)
    for _ in range(2):
        opt_a.zero_grad()
        a(x).pow(2).sum().backward()
        opt_a.step()
    b.load_state_dict(a.state_dict())
    opt_b = make(b.parameters(), optim)
    # a copy: like PyTorch's, a loaded state shares the given tensors
    opt_b.load_state_dict(copy.deepcopy(opt_a.state_dict()))
    for m, o in ((a, opt_a), (b, opt_b)):
        for _ in range(2):
            o.zero_grad()
            m(x).pow(2).sum().backward()
            o.step()
    for pa, pb in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(pa.detach().numpy(), pb.detach().numpy())


def test_optimizer_argument_errors():
    w = [nn.Parameter(P.zeros(1))]
    for bad, msg in (
        (lambda: optim.RMSprop(w, lr=-1), "Invalid learning rate: -1"),
        (lambda: optim.RMSprop(w, alpha=-0.5), "Invalid alpha value: -0.5"),
        (lambda: optim.RMSprop(w, momentum=-1), "Invalid momentum value: -1"),
        (lambda: optim.RMSprop(w, eps=-1), "Invalid epsilon value: -1"),
        (lambda: optim.Adagrad(w, lr_decay=-1), "Invalid lr_decay value: -1"),
        (lambda: optim.Adagrad(w, initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
        (lambda: optim.Adagrad(w, weight_decay=-1), "Invalid weight_decay value: -1"),
    ):
        with pytest.raises(ValueError, match=msg):
            bad()


def test_adagrad_state_exists_before_the_first_step():
    w = nn.Parameter(P.zeros(2))
    opt = optim.Adagrad([w], initial_accumulator_value=0.25)
    st = opt.state_dict()["state"][0]
    assert st["sum"].tolist() == [0.25, 0.25] and st["step"].item() == 0


# ---------------------------------------------------------------------------------------
# schedulers


def _sgd(mod, momentum=0.0, groups=1):
    if mod is optim:
        params = [nn.Parameter(P.zeros(1)) for _ in range(groups)]
    else:
        params = [mod.nn.Parameter(mod.zeros(1)) for _ in range(groups)]
    opt_mod = mod.optim if mod is not optim else optim
    return opt_mod.SGD([{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(params)], lr=0.1,
                       momentum=momentum)


SCHEDULERS = {
    "step": lambda o, s: s.StepLR(o, step_size=3, gamma=0.5),
    "multistep": lambda o, s: s.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "exponential": lambda o, s: s.ExponentialLR(o, gamma=0.9),
    "cosine": lambda o, s: s.CosineAnnealingLR(o, T_max=4, eta_min=0.01),
    "lambda": lambda o, s: s.LambdaLR(o, lr_lambda=lambda e: 1.0 / (e + 1)),
    "lambda-per-group": lambda o, s: s.LambdaLR(o, lr_lambda=[lambda e: 0.9 ** e, lambda e: 1.0 + e]),
    "linear": lambda o, s: s.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=4),
    "onecycle-cos": lambda o, s: s.OneCycleLR(o, max_lr=1.0, total_steps=13),
    "onecycle-linear-3phase": lambda o, s: s.OneCycleLR(o, max_lr=[1.0, 2.0], epochs=3, steps_per_epoch=4,
                                                        anneal_strategy="linear", three_phase=True, pct_start=0.25),
    "sequential": lambda o, s: s.SequentialLR(o, [s.LinearLR(o, start_factor=0.1, total_iters=3),
                                                  s.ExponentialLR(o, gamma=0.8)], milestones=[3]),
    "sequential-3": lambda o, s: s.SequentialLR(o, [s.ExponentialLR(o, gamma=0.5), s.StepLR(o, 2, 0.1),
                                                    s.CosineAnnealingLR(o, T_max=3)], milestones=[2, 6]),
}


def _run(mod, make, steps, groups=2):
    opt = _sgd(mod, momentum=0.9, groups=groups)
    s = make(opt, mod.optim.lr_scheduler if mod is not optim else sched)
    lrs = [list(s.get_last_lr())]
    moms = [[g["momentum"] for g in opt.param_groups]]
    for _ in range(steps):
        opt.step()
        s.step()
        lrs.append(list(s.get_last_lr()))
        moms.append([g["momentum"] for g in opt.param_groups])
    return lrs, moms


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_lrs_match_pytorch(name):
    torch = pytest.importorskip("torch")
    steps = 12 if name.startswith("onecycle") else 15
    ours, moms_o = _run(optim, SCHEDULERS[name], steps)
    theirs, moms_t = _run(torch, SCHEDULERS[name], steps)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(moms_o, moms_t, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["step", "cosine", "linear", "onecycle-cos", "sequential", "lambda"])
def test_scheduler_state_dict_resume(name):
    make = SCHEDULERS[name]
    full, _ = _run(optim, make, 10)
    opt = _sgd(optim, momentum=0.9, groups=2)
    s = make(opt, sched)
    for _ in range(5):
        opt.step()
        s.step()
    saved_sched, saved_opt = s.state_dict(), opt.state_dict()
    assert "optimizer" not in saved_sched
    opt2 = _sgd(optim, momentum=0.9, groups=2)
    s2 = make(opt2, sched)
    opt2.load_state_dict(saved_opt)
    s2.load_state_dict(saved_sched)
    lrs = [list(s2.get_last_lr())]
    for _ in range(5):
        opt2.step()
        s2.step()
        lrs.append(list(s2.get_last_lr()))
    np.testing.assert_allclose(lrs, full[5:], rtol=1e-12)


def test_closed_form_with_explicit_epoch_warns_and_matches():
    opt = _sgd(optim)
    s = sched.StepLR(opt, step_size=2, gamma=0.5)
    with pytest.warns(UserWarning, match="epoch parameter"):
        s.step(5)
    assert s.get_last_lr() == [0.1 * 0.5 ** 2]


def _plateau_run(mod, metrics, **kw):
    opt = _sgd(mod, groups=2)
    s = (mod.optim.lr_scheduler if mod is not optim else sched).ReduceLROnPlateau(opt, **kw)
    out = []
    for m in metrics:
        s.step(m)
        out.append(list(s.get_last_lr()))
    return out, s


@pytest.mark.parametrize("kw", [
    dict(patience=2), dict(mode="max", factor=0.5, patience=1, cooldown=2),
    dict(threshold=0.1, threshold_mode="abs", patience=0, min_lr=[0.05, 0.01]),
    dict(mode="max", threshold_mode="abs", patience=1, min_lr=0.02, eps=1e-3),
])
def test_reduce_lr_on_plateau_matches_pytorch(kw):
    torch = pytest.importorskip("torch")
    metrics = [1.0, 0.9, 0.95, 0.91, 0.92, 0.93, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0, 1.01]
    ours, s = _plateau_run(optim, metrics, **kw)
    theirs, _ = _plateau_run(torch, metrics, **kw)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    sd = s.state_dict()
    s2 = sched.ReduceLROnPlateau(_sgd(optim, groups=2))
    s2.load_state_dict(sd)
    assert s2.best == s.best and s2.num_bad_epochs == s.num_bad_epochs and s2.mode == s.mode


def test_onecycle_cycles_adam_beta1():
    torch = pytest.importorskip("torch")
    res = []
    for mod in (optim, torch.optim):
        pm = P if mod is optim else torch
        p = (nn.Parameter if mod is optim else torch.nn.Parameter)(pm.zeros(1))
        opt = mod.Adam([p], lr=0.1)
        s = (sched if mod is optim else torch.optim.lr_scheduler).OneCycleLR(opt, max_lr=0.5, total_steps=6)
        seq = []
        for _ in range(5):
            opt.step()
            s.step()
            seq.append((s.get_last_lr()[0], opt.param_groups[0]["betas"][0]))
        res.append(seq)
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12)


def test_scheduler_errors():
    opt = _sgd(optim)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        sched.StepLR(object(), 2)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        sched.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        sched.LambdaLR(opt, [lambda e: 1, lambda e: 2])
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        sched.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode foo is unknown"):
        sched.ReduceLROnPlateau(opt, mode="foo")
    with pytest.raises(ValueError, match="total_steps OR"):
        sched.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        sched.SequentialLR(opt, [sched.StepLR(opt, 2)], milestones=[1])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        sched.SequentialLR(opt, [sched.StepLR(opt, 2), sched.ReduceLROnPlateau(opt)], milestones=[1])
    with pytest.raises(KeyError, match="initial_lr"):
        sched.StepLR(_sgd(optim), 2, last_epoch=3)
    s = sched.OneCycleLR(_sgd(optim, momentum=0.9), max_lr=1.0, total_steps=2)
    s.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        s.step()
        s.step()
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        sched.OneCycleLR(optim.Adagrad([nn.Parameter(P.zeros(1))]), max_lr=1.0, total_steps=3)


def test_cosine_restarts_at_t_max_multiples():
    opt = _sgd(optim)
    s = sched.CosineAnnealingLR(opt, T_max=2, eta_min=0.0)
    seq = []
    for _ in range(4):
        opt.step()
        s.step()
        seq.append(s.get_last_lr()[0])
    np.testing.assert_allclose(seq, [0.05, 0.0, 0.05, 0.1], atol=1e-12)
    assert math.isclose(s._get_closed_form_lr()[0], 0.1)


@pytest.mark.parametrize("module", ["pytorchlite.optim.rmsprop_adagrad", "pytorchlite.optim.lr_scheduler"])
def test_docstring_examples(module):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(module),
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
