"""RMSprop and Adagrad, updating parameters in place under no_grad in the same order of
operations as PyTorch's single-tensor implementations (so float64 runs match closely)."""

import pytorchlite
from pytorchlite.optim.optimizer import Optimizer
from pytorchlite.optim.sgd_adam import _closure_loss


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture notes), optionally centered and with momentum.

    >>> import pytorchlite
    >>> w = pytorchlite.nn.Parameter(pytorchlite.tensor([1.0]))
    >>> opt = pytorchlite.optim.RMSprop([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)  # 1 - 0.1 * 2 / sqrt(0.01 * 2**2)
    0.0
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, *,
                 maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize))

    @pytorchlite.no_grad()
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for g in self.param_groups:
            lr, alpha, eps, wd, mom = g["lr"], g["alpha"], g["eps"], g["weight_decay"], g["momentum"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not g["maximize"] else -p.grad
                st = self.state[p]
                if not st:
                    st["step"] = pytorchlite.tensor(0.0)
                    st["square_avg"] = pytorchlite.zeros_like(p)
                    if mom > 0:
                        st["momentum_buffer"] = pytorchlite.zeros_like(p)
                    if g["centered"]:
                        st["grad_avg"] = pytorchlite.zeros_like(p)
                st["step"] += 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                square_avg = st["square_avg"]
                square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                if g["centered"]:
                    grad_avg = st["grad_avg"]
                    grad_avg.lerp_(grad, 1 - alpha)
                    avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add_(eps)
                if mom > 0:
                    buf = st["momentum_buffer"]
                    buf.mul_(mom).addcdiv_(grad, avg)
                    p.add_(buf, alpha=-lr)
                else:
                    p.addcdiv_(grad, avg, value=-lr)
        return loss


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011): per-coordinate steps scaled by the root of the summed
    squared gradients.

    >>> import pytorchlite
    >>> w = pytorchlite.nn.Parameter(pytorchlite.tensor([1.0]))
    >>> opt = pytorchlite.optim.Adagrad([w], lr=0.5)
    >>> (w * w).sum().backward(); opt.step(); w
    Parameter containing:
    tensor([0.5000], requires_grad=True)
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, *,
                 maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, maximize=maximize))
        # PyTorch creates the state eagerly, so state_dict() has it before the first step
        for g in self.param_groups:
            for p in g["params"]:
                st = self.state[p]
                st["step"] = pytorchlite.tensor(0.0)
                st["sum"] = pytorchlite.full_like(p, g["initial_accumulator_value"])

    @pytorchlite.no_grad()
    def step(self, closure=None):
        loss = _closure_loss(closure)
        for g in self.param_groups:
            lr, lr_decay, eps, wd = g["lr"], g["lr_decay"], g["eps"], g["weight_decay"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:  # a group added after construction
                    st["step"] = pytorchlite.tensor(0.0)
                    st["sum"] = pytorchlite.full_like(p, g["initial_accumulator_value"])
                st["step"] += 1
                step = st["step"].item()
                grad = p.grad if not g["maximize"] else -p.grad
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                clr = lr / (1 + (step - 1) * lr_decay)
                state_sum = st["sum"]
                state_sum.addcmul_(grad, grad, value=1)
                std = state_sum.sqrt().add_(eps)
                p.addcdiv_(grad, std, value=-clr)
        return loss
