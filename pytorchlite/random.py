"""`pytorchlite.random`: seeding and state of the default generator, as in `torch.random`.

The generator itself lives in pytorchlite/_random.py.
"""

import contextlib

from pytorchlite._random import (  # noqa: F401
    Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state,
)

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng", "Generator",
           "default_generator"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Run the body with the default generator's state saved and restored afterwards, so
    random calls inside do not change what comes after. (pytorchlite's generators are all
    CPU generators; `devices` and `device_type` are accepted for compatibility.)

    >>> _ = pytorchlite.manual_seed(0)
    >>> with pytorchlite.random.fork_rng():
    ...     _ = pytorchlite.rand(5)
    >>> a = pytorchlite.rand(2)
    >>> _ = pytorchlite.manual_seed(0)
    >>> pytorchlite.rand(2).tolist() == a.tolist()
    True
    """
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
