"""nn.Parameter: a Tensor that a Module registers as one of its parameters."""

from pytorchlite._core import TensorBase
from pytorchlite._tensor import Tensor


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning it as a Module attribute registers
    it, and it requires grad by default.

    >>> import pytorchlite
    >>> p = pytorchlite.nn.Parameter(pytorchlite.zeros(2))
    >>> p.requires_grad
    True
    """

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            import pytorchlite
            data = pytorchlite.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        p = object.__new__(cls)
        for slot in TensorBase._META_SLOTS:
            setattr(p, slot, getattr(data, slot))
        # a parameter is a leaf sharing the data's memory, never its history (nor the
        # data's user attributes: torch.nn.Parameter(t) starts with an empty __dict__)
        p._grad_fn = None
        p._grad = None
        p._base = None
        p._ag = None
        p._fw = None
        p._requires_grad = False
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        # the third item is the state pickle and copy restore into __dict__: user
        # attributes survive pickling, as torch's _rebuild_parameter_with_state keeps them
        return (Parameter, (self.detach(), self.requires_grad), self.__dict__ or None)

    def __copy__(self):
        # as torch's (pickle's rebuild without a copy of the data): a Parameter over the same
        # memory, with the same attributes
        p = Parameter(self.detach(), self.requires_grad)
        if self.__dict__:
            p.__dict__.update(self.__dict__)
        return p

    def __deepcopy__(self, memo):
        # torch.nn.Parameter.__deepcopy__: a new Parameter over a clone of the data; user
        # attributes are not copied (torch drops them too, so copy.deepcopy(model) behaves
        # the same in both)
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result


class Buffer:
    """Marker used by Module.register_buffer callers that want PyTorch's nn.Buffer style."""

    def __init__(self, data, persistent=True):
        self.data = data
        self.persistent = persistent
