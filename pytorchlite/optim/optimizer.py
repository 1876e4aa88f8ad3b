"""The Optimizer base: parameter groups, per-parameter state, zero_grad, state dicts."""

import copy
import functools
from collections import defaultdict

import pytorchlite
from pytorchlite.profiler import _recorder


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


def _profile_hook_step(step):
    """step() shows in a profile as `Optimizer.step#<class>.step`, as PyTorch names it
    (one global test when no profiler records)."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if _recorder._active is None:
            return step(self, *args, **kwargs)
        with _recorder.record_function(f"Optimizer.step#{type(self).__name__}.step"):
            return step(self, *args, **kwargs)
    wrapper._profile_hooked = True
    return wrapper


class Optimizer:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_profile_hooked", False):
            cls.step = _profile_hook_step(step)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, pytorchlite.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group):
        params = param_group["params"]
        param_group["params"] = [params] if isinstance(params, pytorchlite.Tensor) else list(params)
        for p in param_group["params"]:
            if not isinstance(p, pytorchlite.Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for k, v in self.defaults.items():
            if v is required and k not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {k}")
            param_group.setdefault(k, v)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = p.grad.detach()
                    p.grad.zero_()

    def state_dict(self):
        index = {}
        groups = []
        start = 0
        for g in self.param_groups:
            ids = list(range(start, start + len(g["params"])))
            for i, p in zip(ids, g["params"]):
                index[id(p)] = i
            start += len(ids)
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: v for p, v in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        by_id = {}
        for saved, own in zip(groups, self.param_groups):
            for i, p in zip(saved["params"], own["params"]):
                by_id[i] = p
        self.state = defaultdict(dict)
        for i, st in state_dict["state"].items():
            p = by_id[i]
            self.state[p] = {k: (v.to(dtype=p.dtype) if isinstance(v, pytorchlite.Tensor) and v.is_floating_point()
                                 else copy.deepcopy(v)) for k, v in st.items()}
        for saved, own in zip(groups, self.param_groups):
            for k, v in saved.items():
                if k != "params":
                    own[k] = v

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        lines.append(")")
        return "\n".join(lines)

    def step(self, closure=None):
        raise NotImplementedError
