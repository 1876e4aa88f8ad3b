"""Recurrent layers: RNN (tanh or relu), LSTM (with optional projection), GRU and their
single-step cells, with PyTorch's constructor signatures, parameter names and shapes, gate
order, initialisation, input conventions and error messages.

Everything is composed from public operators, so gradients flow through autograd. The
input-to-hidden product of a whole sequence is one matmul per layer and direction; each
timestep then costs one addmm (hidden-to-hidden) plus a few pointwise ops.
"""

import math
import numbers
import warnings

import pytorchlite
from pytorchlite.nn import functional as F
from pytorchlite.nn import init
from pytorchlite.nn.module import Module
from pytorchlite.nn.parameter import Parameter

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# --- one timestep of each kind -------------------------------------------------------------------
#
# `xw` is the input projection of this step (x @ W_ih.T plus the biases that can be folded into
# it), `w_hh_t` is W_hh.T (a view), `b_hh` the hidden bias where it cannot be folded (GRU).
# Gates are split by viewing (N, k*H) as (N, k, H) and unbinding dim 1: the backward of unbind
# is a single stack, where chunk/narrow would scatter each gate into a zero tensor of full size.

def _rnn_step(xw, h, w_hh_t, relu):
    pre = pytorchlite.addmm(xw, h, w_hh_t)
    return pytorchlite.relu(pre) if relu else pytorchlite.tanh(pre)


def _lstm_step(xw, h, c, w_hh_t, w_hr_t):
    gates = pytorchlite.addmm(xw, h, w_hh_t)
    i, f, g, o = gates.view(gates.shape[0], 4, c.shape[1]).unbind(1)
    i, f, g, o = pytorchlite.sigmoid(i), pytorchlite.sigmoid(f), pytorchlite.tanh(g), pytorchlite.sigmoid(o)
    c = pytorchlite.addcmul(f * c, i, g)        # c' = f*c + i*g
    h = o * pytorchlite.tanh(c)
    if w_hr_t is not None:
        h = pytorchlite.mm(h, w_hr_t)
    return h, c


def _gru_step(xw, h, w_hh_t, b_hh):
    hw = pytorchlite.mm(h, w_hh_t) if b_hh is None else pytorchlite.addmm(b_hh, h, w_hh_t)
    batch, hidden = h.shape     # explicit sizes: -1 is ambiguous for an empty batch
    xr, xz, xn = xw.view(batch, 3, hidden).unbind(1)
    hr, hz, hn = hw.view(batch, 3, hidden).unbind(1)
    r = pytorchlite.sigmoid(xr + hr)
    z = pytorchlite.sigmoid(xz + hz)
    # PyTorch's GRU: the reset gate multiplies (W_hn h + b_hn), not h
    n = pytorchlite.tanh(xn + r * hn)
    return n + z * (h - n)                       # (1 - z) * n + z * h


def _input_projection(x, w_ih, bias):
    """x @ w_ih.T (+ bias) for x of shape (..., in): one matmul however many leading dims."""
    lead = tuple(x.shape[:-1])
    x2 = x.reshape(-1, x.shape[-1])
    w_t = w_ih.t()
    out = pytorchlite.mm(x2, w_t) if bias is None else pytorchlite.addmm(bias, x2, w_t)
    return out.view(lead + (w_ih.shape[0],))


# --- multi-layer, optionally bidirectional layers ---------------------------------------------------

class RNNBase(Module):
    """Common machinery of RNN, LSTM and GRU: parameters, checks and the layer loop."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=3)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)

        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        num_directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        factory = {"device": device, "dtype": dtype}

        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * num_directions
            for direction in range(num_directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{suffix}"
                    setattr(self, name, Parameter(pytorchlite.empty(shape, **factory)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """A no-op kept for PyTorch compatibility (it repacks weights for cuDNN there)."""

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # --- checks (PyTorch's wording) -----------------------------------------------------------

    def _check_input(self, input):
        w = getattr(self, self._flat_weights_names[0])
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). "
                             f"Convert input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        if input.dim() != 3:
            raise RuntimeError(f"input must have 3 dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")
        if input.size(1 if self.batch_first else 0) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")

    def _expected_hidden_size(self, input, hidden_size):
        mini_batch = input.size(0) if self.batch_first else input.size(1)
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch, hidden_size)

    @staticmethod
    def _check_hidden_size(hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != expected:
            raise RuntimeError(msg.format(expected, list(hx.shape)))

    def _zeros_state(self, input, size):
        return pytorchlite.zeros(self._expected_hidden_size(input, size), dtype=input.dtype, device=input.device)

    # --- the computation ---------------------------------------------------------------------

    def _layer_params(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        get = lambda base: getattr(self, f"{base}_l{layer}{suffix}")  # noqa: E731
        return (get("weight_ih"), get("weight_hh"), get("bias_ih") if self.bias else None,
                get("bias_hh") if self.bias else None, get("weight_hr") if self.proj_size > 0 else None)

    def _run(self, x, h0, c0=None):
        """x: (T, N, in), h0/c0: (layers*directions, N, *). Returns the last layer's output
        (T, N, directions*H) and the final states stacked like h0/c0."""
        num_directions = 2 if self.bidirectional else 1
        h_init = h0.unbind(0)
        c_init = c0.unbind(0) if c0 is not None else None
        h_final, c_final = [], []
        layer_input = x
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                layer_input = F.dropout(layer_input, self.dropout, True)
            outputs = []
            for direction in range(num_directions):
                idx = layer * num_directions + direction
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_params(layer, direction)
                if self.mode == "GRU":
                    xw = _input_projection(layer_input, w_ih, b_ih)
                else:   # both biases are plain additions before the nonlinearity: fold them
                    xw = _input_projection(layer_input, w_ih, None if b_ih is None else b_ih + b_hh)
                steps = xw.unbind(0)
                if direction == 1:
                    steps = steps[::-1]
                w_hh_t = w_hh.t()
                w_hr_t = w_hr.t() if w_hr is not None else None
                h = h_init[idx]
                c = c_init[idx] if c_init is not None else None
                hs = []
                for xw_t in steps:
                    if self.mode == "LSTM":
                        h, c = _lstm_step(xw_t, h, c, w_hh_t, w_hr_t)
                    elif self.mode == "GRU":
                        h = _gru_step(xw_t, h, w_hh_t, b_hh)
                    else:
                        h = _rnn_step(xw_t, h, w_hh_t, self.mode == "RNN_RELU")
                    hs.append(h)
                if direction == 1:
                    hs.reverse()
                outputs.append(pytorchlite.stack(hs, 0))
                h_final.append(h)
                c_final.append(c)
            layer_input = outputs[0] if num_directions == 1 else pytorchlite.cat(outputs, 2)
        h_n = pytorchlite.stack(h_final, 0)
        c_n = pytorchlite.stack(c_final, 0) if c0 is not None else None
        return layer_input, h_n, c_n

    def _prepare_input(self, input):
        if not isinstance(input, pytorchlite.Tensor):
            raise TypeError(f"{type(self).__name__}.forward(): input must be a Tensor, not {type(input).__name__} "
                            "(PackedSequence is not supported)")
        if input.dim() not in (2, 3):
            name, tail = ("RNN", "tensor instead") if self.mode.startswith("RNN") else (self.mode, "instead")
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D {tail}")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:     # batch_first does not apply to unbatched input, as in PyTorch
            input = input.unsqueeze(batch_dim)
        return input, is_batched, batch_dim

    def _finish(self, output, is_batched, batch_dim):
        """The time-major result back in the caller's layout."""
        if self.batch_first:
            output = output.transpose(0, 1)
        return output if is_batched else output.squeeze(batch_dim)

    def _time_major(self, input):
        return input.transpose(0, 1) if self.batch_first else input

    def _forward_single_state(self, input, hx):
        """RNN and GRU: one hidden state tensor."""
        input, is_batched, batch_dim = self._prepare_input(input)
        if hx is not None:
            if not is_batched:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
            elif hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
        self._check_input(input)
        if hx is None:
            hx = self._zeros_state(input, self.hidden_size)
        self._check_hidden_size(hx, self._expected_hidden_size(input, self.hidden_size))
        output, h_n, _ = self._run(self._time_major(input), hx)
        return self._finish(output, is_batched, batch_dim), (h_n if is_batched else h_n.squeeze(1))


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu), stacked
    num_layers deep, optionally in both directions. Returns (output, h_n).

    >>> import pytorchlite
    >>> rnn = RNN(10, 20, 2)
    >>> output, h_n = rnn(pytorchlite.randn(5, 3, 10))
    >>> output.shape, h_n.shape
    (pytorchlite.Size([5, 3, 20]), pytorchlite.Size([2, 3, 20]))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"RNN.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         0, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return self._forward_single_state(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit, gates ordered r, z, n as in PyTorch:
    r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z = sigmoid(W_iz x + b_iz + W_hz h + b_hz),
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h.
    Returns (output, h_n).

    >>> import pytorchlite
    >>> output, h_n = GRU(4, 6, batch_first=True)(pytorchlite.randn(2, 7, 4))
    >>> output.shape, h_n.shape
    (pytorchlite.Size([2, 7, 6]), pytorchlite.Size([1, 2, 6]))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"GRU.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         0, device, dtype)

    def forward(self, input, hx=None):
        return self._forward_single_state(input, hx)


class LSTM(RNNBase):
    """Long short-term memory, gates ordered i, f, g, o as in PyTorch:
    c' = f * c + i * g, h' = o * tanh(c'), and with proj_size > 0, h' = (o * tanh(c')) W_hr^T.
    Returns (output, (h_n, c_n)).

    >>> import pytorchlite
    >>> lstm = LSTM(10, 20, 2, bidirectional=True)
    >>> output, (h_n, c_n) = lstm(pytorchlite.randn(5, 3, 10))
    >>> output.shape, h_n.shape, c_n.shape
    (pytorchlite.Size([5, 3, 40]), pytorchlite.Size([4, 3, 20]), pytorchlite.Size([4, 3, 20]))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)

    def forward(self, input, hx=None):
        input, is_batched, batch_dim = self._prepare_input(input)
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            self._check_input(input)
            hx = (self._zeros_state(input, real_hidden), self._zeros_state(input, self.hidden_size))
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTM.forward(): hx must be a tuple (h_0, c_0) of two Tensors")
            h0, c0 = hx
            want = 3 if is_batched else 2
            if h0.dim() != want or c0.dim() != want:
                kind = "batched 3-D" if is_batched else "unbatched 2-D"
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({h0.dim()}-D, {c0.dim()}-D) tensors")
            if not is_batched:
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            self._check_input(input)
            hx = (h0, c0)
        self._check_hidden_size(hx[0], self._expected_hidden_size(input, real_hidden),
                                "Expected hidden[0] size {}, got {}")
        self._check_hidden_size(hx[1], self._expected_hidden_size(input, self.hidden_size),
                                "Expected hidden[1] size {}, got {}")
        output, h_n, c_n = self._run(self._time_major(input), hx[0], hx[1])
        if not is_batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return self._finish(output, is_batched, batch_dim), (h_n, c_n)


# --- cells --------------------------------------------------------------------------------------------

class RNNCellBase(Module):
    """Common parameters and checks of RNNCell, LSTMCell and GRUCell."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        factory = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(pytorchlite.empty((num_chunks * hidden_size, input_size), **factory))
        self.weight_hh = Parameter(pytorchlite.empty((num_chunks * hidden_size, hidden_size), **factory))
        if bias:
            self.bias_ih = Parameter(pytorchlite.empty(num_chunks * hidden_size, **factory))
            self.bias_hh = Parameter(pytorchlite.empty(num_chunks * hidden_size, **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def _check_forward(self, input, hiddens):
        """PyTorch's cell checks (after unbatched inputs got their batch dim)."""
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        for k, h in enumerate(hiddens):
            if h.size(0) != input.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{k} batch size "
                                   f"{h.size(0)}")
            if h.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.size(1)}, expected "
                                   f"{self.hidden_size}")

    def _check_dims(self, input, hiddens, label):
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for k, h in enumerate(hiddens):
            if h.dim() not in (1, 2):
                which = f"hx[{k}]" if label == "hx" else "hidden"
                raise ValueError(f"{name}: Expected {which} to be 1D or 2D, got {h.dim()}D instead")
            if h.dim() != input.dim():
                raise RuntimeError(f"{name}: Expected input and {label} to both be batched (2D) or both "
                                   f"unbatched (1D), got {input.dim()}D input and {h.dim()}D {label}")

    def _input_part(self, input, fold_bias):
        if self.bias_ih is None:
            return _input_projection(input, self.weight_ih, None)
        return _input_projection(input, self.weight_ih, self.bias_ih + self.bias_hh if fold_bias else self.bias_ih)

    def _zeros(self, input):
        return pytorchlite.zeros((input.size(0), self.hidden_size), dtype=input.dtype, device=input.device)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu).

    >>> import pytorchlite
    >>> RNNCell(10, 20)(pytorchlite.randn(3, 10)).shape
    pytorchlite.Size([3, 20])
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        self._check_dims(input, [] if hx is None else [hx], "hidden")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
            hx = hx.unsqueeze(0) if hx is not None else None
        hx = self._zeros(input) if hx is None else hx
        self._check_forward(input, [hx])
        h = _rnn_step(self._input_part(input, True), hx, self.weight_hh.t(), self.nonlinearity == "relu")
        return h if is_batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step (gates i, f, g, o); returns (h', c').

    >>> import pytorchlite
    >>> h, c = LSTMCell(10, 20)(pytorchlite.randn(3, 10))
    >>> h.shape, c.shape
    (pytorchlite.Size([3, 20]), pytorchlite.Size([3, 20]))
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError("LSTMCell.forward(): hx must be a tuple (h_0, c_0) of two Tensors")
        self._check_dims(input, [] if hx is None else list(hx), "hx")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0)) if hx is not None else None
        if hx is None:
            zeros = self._zeros(input)
            hx = (zeros, zeros)
        self._check_forward(input, hx)
        h, c = _lstm_step(self._input_part(input, True), hx[0], hx[1], self.weight_hh.t(), None)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step (gates r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn))).

    >>> import pytorchlite
    >>> GRUCell(10, 20)(pytorchlite.randn(3, 10)).shape
    pytorchlite.Size([3, 20])
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        self._check_dims(input, [] if hx is None else [hx], "hidden")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
            hx = hx.unsqueeze(0) if hx is not None else None
        hx = self._zeros(input) if hx is None else hx
        self._check_forward(input, [hx])
        h = _gru_step(self._input_part(input, False), hx, self.weight_hh.t(), self.bias_hh)
        return h if is_batched else h.squeeze(0)
