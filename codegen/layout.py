"""Where the generated C of pointwise operators goes, shared by the generator (gen.py) and
the build (build.py).

Each pointwise operator's loops are one C file, `generated/pointwise/<op>.c`, so adding or
changing an operator recompiles that file alone. Its entry points (`ptl_pw_<op>`,
`ptl_pwc_<op>`) are exposed by one of PW_SHARDS small cffi extensions,
`pytorchlite.generated._pw_NN`, chosen by a stable hash of the name: a new operator
regenerates the wrapper of one shard (a dozen functions) instead of the wrapper of every
kernel (about 7 s of compiling), and never touches the hand-written kernels' extension `_C`.
"""

import zlib

PW_SHARDS = 16
PW_DIR = "generated/pointwise"


def pw_shard(op_name):
    """The shard of an operator, as two digits: crc32 does not change between runs or
    Python versions (str hash() does)."""
    return "%02d" % (zlib.crc32(op_name.encode()) % PW_SHARDS)


def pw_source(op_name):
    return f"{PW_DIR}/{op_name}.c"


def pw_header(shard):
    """The prototypes of a shard's entry points: its cffi cdef and the declarations its
    wrapper compiles against."""
    return f"{PW_DIR}/_pw_{shard}.h"


def pw_module(shard):
    return f"pytorchlite.generated._pw_{shard}"
