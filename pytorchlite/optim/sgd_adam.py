"""SGD, Adam and AdamW, updating parameters in place under no_grad in the same order of
operations as PyTorch's single-tensor implementations (so float64 runs match closely)."""

import math

import pytorchlite
from pytorchlite.optim.optimizer import Optimizer, required


def _closure_loss(closure):
    if closure is None:
        return None
    with pytorchlite.enable_grad():
        return closure()


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, maximize=maximize))

    @pytorchlite.no_grad()
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for g in self.param_groups:
            lr, mom, damp, wd = g["lr"], g["momentum"], g["dampening"], g["weight_decay"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                d_p = p.grad if not g["maximize"] else -p.grad
                if wd != 0:
                    d_p = d_p.add(p, alpha=wd)
                if mom != 0:
                    st = self.state[p]
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        buf = st["momentum_buffer"] = d_p.clone().detach()
                    else:
                        buf.mul_(mom).add_(d_p, alpha=1 - damp)
                    d_p = d_p.add(buf, alpha=mom) if g["nesterov"] else buf
                p.add_(d_p, alpha=-lr)
        return loss


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    _decoupled = False

    @pytorchlite.no_grad()
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for g in self.param_groups:
            beta1, beta2 = g["betas"]
            lr, eps, wd = g["lr"], g["eps"], g["weight_decay"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not g["maximize"] else -p.grad
                st = self.state[p]
                if not st:
                    st["step"] = pytorchlite.tensor(0.0)
                    st["exp_avg"] = pytorchlite.zeros_like(p)
                    st["exp_avg_sq"] = pytorchlite.zeros_like(p)
                    if g["amsgrad"]:
                        st["max_exp_avg_sq"] = pytorchlite.zeros_like(p)
                if wd != 0:
                    if self._decoupled:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                st["step"] += 1
                step = st["step"].item()
                exp_avg, exp_avg_sq = st["exp_avg"], st["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = math.sqrt(bias_correction2)
                if g["amsgrad"]:
                    pytorchlite.maximum(st["max_exp_avg_sq"], exp_avg_sq, out=st["max_exp_avg_sq"])
                    denom = (st["max_exp_avg_sq"].sqrt() / bias_correction2_sqrt).add_(eps)
                else:
                    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                p.addcdiv_(exp_avg, denom, value=-step_size)
        return loss


class AdamW(Adam):
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
