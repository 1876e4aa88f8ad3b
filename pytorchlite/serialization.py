"""Checkpoints: `save` and `load` in the safetensors format.

A checkpoint is one safetensors file. Its tensors lie flat under dotted keys (a state
dict's own keys, so `safetensors.torch.load_file` sees the same names), and whatever is not
a tensor (the nesting of dicts, lists and tuples, numbers, strings, dtypes) is written as
JSON in the header's `__metadata__` under the key `pytorchlite`. A file without that key
(written by `safetensors.torch.save_file`, `safetensors.numpy.save_file`, ...) loads as a
flat dict of tensors.

Nothing is ever unpickled, so loading is as safe with `weights_only=False` as with the
default `weights_only=True`; the price is that only the values listed in `save`'s
docstring can be saved.
"""

import collections
import json
import math
import os
import tempfile

import numpy as np

import pytorchlite
from pytorchlite import _dtype as D

__all__ = ["save", "load"]

_META_KEY = "pytorchlite"
_FORMAT_VERSION = 2   # 2: a tensor node may end with its user attributes (a dict node)

# pytorchlite dtype <-> safetensors dtype name (the header's code and TensorSpec's name)
_DTYPES = [
    (D.bool, "BOOL", "bool"), (D.uint8, "U8", "uint8"), (D.int8, "I8", "int8"), (D.int16, "I16", "int16"),
    (D.int32, "I32", "int32"), (D.int64, "I64", "int64"), (D.float16, "F16", "float16"),
    (D.bfloat16, "BF16", "bfloat16"), (D.float32, "F32", "float32"), (D.float64, "F64", "float64"),
]
_TO_SPEC = {d: name for d, _, name in _DTYPES}
_FROM_CODE = {code: d for d, code, _ in _DTYPES}


def _safetensors():
    try:
        import safetensors
    except ImportError as e:  # a declared dependency, but say what to do if it is missing
        raise ImportError("pytorchlite.save/load need the `safetensors` package: pip install safetensors") from e
    return safetensors


# --------------------------------------------------------------------------------------
# encoding: the object tree becomes JSON nodes [tag, ...]; tensors become keys into the file


class _Encoder:
    def __init__(self):
        self.tensors = {}       # key -> contiguous CPU tensor
        self.version = 1        # 2 once a tensor node carries user attributes

    def _key(self, path):
        key = ".".join(path)
        if key in self.tensors:  # e.g. {"a.b": x, "a": {"b": y}}: keep both, the second renamed
            n = 1
            while f"{key}#{n}" in self.tensors:
                n += 1
            key = f"{key}#{n}"
        return key

    def encode(self, obj, path):
        if isinstance(obj, pytorchlite.Tensor):
            return self._tensor(obj, path)
        if obj is None:
            return ["none"]
        if isinstance(obj, bool):
            return ["bool", obj]
        if isinstance(obj, int):
            return ["int", int(obj)]
        if isinstance(obj, float):
            return ["float", repr(float(obj))]   # repr keeps nan/inf and every bit of the value
        if isinstance(obj, str):
            return ["str", obj]
        if isinstance(obj, bytes):
            return ["bytes", obj.hex()]
        if isinstance(obj, D.dtype):
            return ["dtype", obj.name]
        if isinstance(obj, pytorchlite.device):
            return ["device", str(obj)]
        if isinstance(obj, pytorchlite.Size):
            return ["size", [int(s) for s in obj]]
        if isinstance(obj, (np.integer, np.floating, np.bool_)):
            return self.encode(obj.item(), path)
        if isinstance(obj, dict):
            kind = "ordereddict" if isinstance(obj, collections.OrderedDict) else "dict"
            items = []
            for k, v in obj.items():
                if not isinstance(k, (str, int, float, bool, type(None))):
                    raise TypeError(f"pytorchlite.save: dict keys must be str, int, float, bool or None, "
                                    f"got {type(k).__name__} at {'.'.join(path) or '<root>'}")
                items.append([self.encode(k, path), self.encode(v, path + [str(k)])])
            return [kind, items]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            raise TypeError(f"pytorchlite.save: named tuples are not supported (got {type(obj).__name__} at "
                            f"{'.'.join(path) or '<root>'}); save a dict or a plain tuple instead")
        if isinstance(obj, (list, tuple)):
            return ["list" if isinstance(obj, list) else "tuple",
                    [self.encode(v, path + [str(i)]) for i, v in enumerate(obj)]]
        raise TypeError(f"pytorchlite.save: cannot save an object of type {type(obj).__name__} at "
                        f"{'.'.join(path) or '<root>'}; supported are tensors, dicts, lists, tuples, None, bool, "
                        "int, float, str, bytes, dtype, device and Size")

    def _tensor(self, t, path):
        if t.dtype not in _TO_SPEC:
            raise TypeError(f"pytorchlite.save: dtype {t.dtype} is not supported by safetensors")
        key = self._key(path)
        device = str(t.device)
        # Each tensor is written as its own contiguous copy: views and tensors sharing storage
        # come back as independent tensors.
        self.tensors[key] = t.detach().cpu().contiguous()
        node = ["tensor", key, bool(t.requires_grad), isinstance(t, pytorchlite.nn.Parameter), device]
        if t.__dict__:
            # user attributes (t.tag = ...) come back on the loaded tensor, as with torch.save;
            # they must be values save supports. Format 2, so an older reader says so.
            self.version = 2
            node.append(self.encode(dict(t.__dict__), path + ["__dict__"]))
        return node


def save(obj, f):
    """Save a tensor, a state dict, or nested dicts/lists/tuples of tensors and plain values
    to `f` (a path or a writable binary file object) in the safetensors format.

    Supported values: tensors (and Parameters), dict/OrderedDict (keys str, int, float, bool
    or None), list, tuple, None, bool, int, float, str, bytes, dtype, device and Size.
    Tensors are written flat under dotted keys (``{"fc": {"weight": w}}`` -> ``fc.weight``),
    so a state dict reads back with ``safetensors.torch.load_file`` under its own keys.

    Tensors are written as contiguous copies: views, and tensors that share storage, load
    back as independent tensors (unlike ``torch.save``, which keeps the sharing). A
    tensor's user attributes (``t.tag = "x"``) are saved with it and set again on load, as
    with ``torch.save``; their values must be of the supported kinds above.

    Saving to a path is atomic: the file is written to a temporary file in the same
    directory, flushed to disk (fsync) and renamed over the target, so a crash leaves either
    the old file or the new one, never a torn one.

    >>> import os, tempfile, pytorchlite
    >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
    >>> pytorchlite.save({"w": pytorchlite.ones(2), "step": 3}, path)
    >>> pytorchlite.load(path)
    {'w': tensor([1., 1.]), 'step': 3}
    """
    st = _safetensors()
    enc = _Encoder()
    tree = enc.encode(obj, [])
    metadata = {"format": "pt", _META_KEY: json.dumps({"version": enc.version, "tree": tree},
                                                      separators=(",", ":"))}
    specs = {}
    for key, t in enc.tensors.items():
        nbytes = t.numel() * t.dtype.itemsize
        if hasattr(st, "TensorSpec"):
            # safetensors >= 0.8 reads raw memory: enc.tensors keeps every buffer alive until
            # serialize returns
            specs[key] = st.TensorSpec(dtype=_TO_SPEC[t.dtype], shape=list(t.shape), data_ptr=t.data_ptr(),
                                       data_len=nbytes)
        else:  # older releases take the bytes
            data = t.reshape(-1).view(pytorchlite.uint8).numpy().tobytes() if nbytes else b""
            specs[key] = {"dtype": _TO_SPEC[t.dtype], "shape": list(t.shape), "data": data}
    if hasattr(f, "write"):
        f.write(st.serialize(specs, metadata=metadata))
        return
    path = os.fspath(f)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        os.close(fd)
        st.serialize_file(specs, tmp, metadata=metadata)
        _set_mode_like_open(tmp, path)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _set_mode_like_open(tmp, path):
    """mkstemp creates 0600; give the file the mode open(path, "wb") would have given it."""
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(tmp, mode)


# --------------------------------------------------------------------------------------
# decoding


def _corrupt(name, why):
    return RuntimeError(f"pytorchlite.load: {name} is not a valid pytorchlite/safetensors checkpoint: {why}")


def _map_device(location, map_location):
    if map_location is None:
        return location
    if isinstance(map_location, dict):
        return str(map_location.get(location, location))
    return str(pytorchlite.device(map_location) if not isinstance(map_location, pytorchlite.device)
               else map_location)


class _Decoder:
    def __init__(self, raw, name, map_location):
        self.raw = raw              # key -> (dtype code, shape, bytearray)
        self.name = name
        self.map_location = map_location
        self.cache = {}

    def tensor(self, key, location="cpu"):
        if key not in self.raw:
            raise _corrupt(self.name, f"the metadata names a tensor {key!r} that the file does not contain")
        code, shape, data = self.raw[key]
        dt = _FROM_CODE.get(code)
        if dt is None:
            raise RuntimeError(f"pytorchlite.load: tensor {key!r} in {self.name} has dtype {code}, which "
                               "pytorchlite does not support")
        numel = math.prod(shape)
        if len(data) != numel * dt.itemsize:
            raise _corrupt(self.name, f"tensor {key!r} has {len(data)} bytes of data, expected "
                                      f"{numel * dt.itemsize} for shape {list(shape)} and dtype {code}")
        # the bytearray becomes the tensor's memory: no copy beyond the one from the file
        t = pytorchlite.from_numpy(np.frombuffer(data, dtype=np.uint8))
        t = (t if dt is D.uint8 else t.view(dt)).reshape(shape)
        if callable(self.map_location):
            out = self.map_location(t, location)
            return t if out is None else out
        target = _map_device(location, self.map_location)
        if target != "cpu":
            dev = pytorchlite.device(target)
            if dev.type == "cuda" and not pytorchlite.cuda.is_available():
                raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                                   "pytorchlite.cuda.is_available() is False. If you are running on a CPU-only "
                                   "machine, please use pytorchlite.load with map_location='cpu' to map your "
                                   "storages to the CPU.")
            t = t.to(dev)
        return t

    def decode(self, node):
        try:
            tag = node[0]
        except (TypeError, IndexError, KeyError):
            raise _corrupt(self.name, f"bad metadata node {node!r}") from None
        if tag == "tensor":
            _, key, requires_grad, is_param, location, *attrs = node
            t = self.tensor(key, location)
            if is_param:
                t = pytorchlite.nn.Parameter(t, requires_grad=requires_grad)
            elif requires_grad:
                t.requires_grad_(True)
            if attrs:
                (attrs,) = attrs
                if attrs[0] != "dict":
                    raise _corrupt(self.name, f"the attributes of tensor {key!r} are not a dict node")
                t.__dict__.update(self.decode(attrs))
            return t
        if tag == "none":
            return None
        if tag in ("bool", "int", "str"):
            return node[1]
        if tag == "float":
            return float(node[1])
        if tag == "bytes":
            return bytes.fromhex(node[1])
        if tag == "dtype":
            return getattr(pytorchlite, node[1])
        if tag == "device":
            return pytorchlite.device(node[1])
        if tag == "size":
            return pytorchlite.Size(node[1])
        if tag in ("dict", "ordereddict"):
            out = collections.OrderedDict() if tag == "ordereddict" else {}
            for k, v in node[1]:
                out[self.decode(k)] = self.decode(v)
            return out
        if tag == "list":
            return [self.decode(v) for v in node[1]]
        if tag == "tuple":
            return tuple(self.decode(v) for v in node[1])
        raise _corrupt(self.name, f"unknown metadata node tag {tag!r}")


def load(f, map_location=None, weights_only=True):
    """Load what `save` wrote (or any safetensors file) from `f`, a path or a readable binary
    file object.

    map_location moves tensors: None restores each to the device it was saved from; a
    device or string sends all to it; a dict maps saved locations to new ones
    (``{"cuda:0": "cpu"}``); a callable ``fn(tensor, location)`` returns the tensor to use
    (it receives a CPU tensor and the saved location string).

    weights_only is accepted for PyTorch compatibility; this format never unpickles, so
    every load is weights-only.

    A file written without pytorchlite's metadata (by ``safetensors.torch.save_file`` or
    ``safetensors.numpy.save_file``) loads as a dict of tensors by name. A truncated or
    corrupt file raises RuntimeError.

    >>> import io, pytorchlite
    >>> buf = io.BytesIO(); pytorchlite.save([pytorchlite.arange(3), (1.5, "a")], buf)
    >>> _ = buf.seek(0); pytorchlite.load(buf)
    [tensor([0, 1, 2]), (1.5, 'a')]
    """
    st = _safetensors()
    if hasattr(f, "read"):
        data = f.read()
        name = getattr(f, "name", None) or "<file object>"
    else:
        name = os.fspath(f)
        with open(name, "rb") as fh:
            data = fh.read()
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"pytorchlite.load: expected the file to read as bytes, got {type(data).__name__}")
    if len(data) < 8:
        raise _corrupt(name, f"the file is {len(data)} bytes long, shorter than the 8-byte header length")
    header_len = int.from_bytes(data[:8], "little")
    if 8 + header_len > len(data):
        raise _corrupt(name, f"the header says it is {header_len} bytes long but only {len(data) - 8} bytes "
                             "follow (truncated file?)")
    try:
        metadata = json.loads(bytes(data[8:8 + header_len])).get("__metadata__") or {}
    except (ValueError, AttributeError) as e:
        raise _corrupt(name, f"the header is not a JSON object ({e})") from None
    try:
        entries = st.deserialize(bytes(data))
    except Exception as e:  # SafetensorError: truncated data, bad offsets, ...
        raise _corrupt(name, str(e)) from None
    raw = {k: (v["dtype"], tuple(v["shape"]), v["data"]) for k, v in entries}
    dec = _Decoder(raw, name, map_location)
    if _META_KEY not in metadata:
        # a plain safetensors file: its tensors by name, in file order
        return {k: dec.tensor(k) for k in raw}
    try:
        info = json.loads(metadata[_META_KEY])
        version, tree = info["version"], info["tree"]
    except (ValueError, TypeError, KeyError) as e:
        raise _corrupt(name, f"the pytorchlite metadata is unreadable ({e!r})") from None
    if version > _FORMAT_VERSION:
        raise RuntimeError(f"pytorchlite.load: {name} was written by a newer pytorchlite (format version "
                           f"{version}; this one reads up to {_FORMAT_VERSION})")
    try:
        return dec.decode(tree)
    except (ValueError, TypeError, IndexError) as e:
        raise _corrupt(name, f"the pytorchlite metadata is malformed ({e!r})") from None
