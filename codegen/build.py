"""Compile the C kernels into cffi extensions (API mode), recompiling only what changed.

Extensions, all in generated/ (installed as `pytorchlite.generated`):

* `_C`: the hand-written kernels (`kernels/*.c`) and the reduction instances
  (`generated/reductions.c`), MAIN_SOURCES, with the prototypes of MAIN_CDEFS;
  `pytorchlite._C` loads it.
* `_pw_NN`: the pointwise operators whose names hash to shard NN (codegen/layout.py): one
  object per operator (`generated/pointwise/<op>.c`) and the cffi wrapper of their entry
  points. They link against `_C` for the iterator (`ptl_run_pointwise`, ...), and their
  ffi includes `_C`'s, so the descriptor types are the same objects in every module.

Every object, the cffi wrappers included, is cached by a key made of exactly what it is
built from: its source, each "quoted" header it includes (followed transitively), the
flags and the compiler. Sources are compiled by their path relative to the tree, so the
key (and the object) does not depend on where the checkout is: copies and worktrees that
point PTL_BUILD_CACHE (or `--cache-dir`) at one folder share their objects. Editing
ops.yaml rewrites only the generated files whose content changes, so adding a pointwise
operator compiles its own file and its shard's wrapper, in parallel, and links that shard.

A new generated C file for `_C` goes into MAIN_SOURCES (its prototypes into MAIN_CDEFS);
nothing else needs to know about it.
"""

from __future__ import annotations

import concurrent.futures
import functools
import glob
import hashlib
import os
import re
import shlex
import subprocess
import sysconfig
import threading
from dataclasses import dataclass, field

from . import abi, layout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# No -march=native: a shipped build must run on any x86-64 (or aarch64); hot loops use
# function multi-versioning (target_clones: AVX-512, AVX2+FMA, baseline; see PTL_HOT in
# kernels/ptl.h) where vector code pays.
CFLAGS = ["-O3", "-std=gnu11", "-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-Wall", "-Wno-unused-function",
          "-Wno-unused-variable", "-Wno-unused-but-set-variable"]
LDFLAGS = ["-fopenmp"]

# The sanitizer build (`python -m codegen --sanitize`, run by tools/sanitize.py into a copy
# of the tree): AddressSanitizer and UndefinedBehaviorSanitizer, where any undefined
# behaviour aborts. GCC leaves float-cast-overflow (a float -> int conversion out of range)
# out of "undefined", so it is named. -O1 -g keeps the reports readable and the build short;
# so does PTL_NO_CLONES (one version of each hot loop, not three: they differ only in the
# instruction set, not in what they read and write).
SANITIZE = "address,undefined,float-cast-overflow"
SANITIZE_CFLAGS = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=" + SANITIZE,
                   "-fno-sanitize-recover=undefined,float-cast-overflow", "-DPTL_NO_CLONES"]
SANITIZE_LDFLAGS = ["-fsanitize=" + SANITIZE]

# What `_C` is built from (globs relative to the tree, in link order) and the prototype
# headers it exposes to Python (its cffi cdef).
MAIN_SOURCES = ["kernels/*.c", "generated/reductions.c"]   # (the reduction instances: codegen/reductions.py)
MAIN_CDEFS = ["kernels/cdefs.h"]
INCLUDE_DIRS = ["kernels", "generated"]   # relative to the tree

EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
MAIN_MODULE = "pytorchlite.generated._C"

# The descriptor structs as cffi must see them (codegen/abi.py declares them once;
# generated/ptl_abi.h holds the C definitions).
CFFI_TYPES = abi.cffi_types()

# the object cache: PTL_BUILD_CACHE, or build/ptl-obj in the tree
CACHE_ENV = "PTL_BUILD_CACHE"

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def _openblas():
    import scipy_openblas32
    return scipy_openblas32.get_include_dir(), scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library()


def _read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def prototypes(root=ROOT):
    """The C declarations `_C`'s cffi module exposes."""
    return "\n".join(_read(root, rel) for rel in MAIN_CDEFS)


def cdef_text(root=ROOT):
    return CFFI_TYPES + prototypes(root)


def extension_path(root=ROOT, module=MAIN_MODULE):
    return os.path.join(root, "generated", module.rsplit(".", 1)[1] + EXT_SUFFIX)


def cache_dir(root=ROOT):
    return os.environ.get(CACHE_ENV) or os.path.join(root, "build", "ptl-obj")


def _compiler():
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shlex.split(cc)


# --- what an object is made of ---------------------------------------------------------------

class _Tree:
    """Reads a tree's files once per build, and follows their "quoted" includes."""

    def __init__(self, root):
        self.root = root
        self._text = {}
        self._includes = {}

    def text(self, rel):
        if rel not in self._text:
            self._text[rel] = _read(self.root, rel)
        return self._text[rel]

    def _resolve(self, name, from_dir):
        for d in ([from_dir] if from_dir is not None else []) + INCLUDE_DIRS:
            rel = os.path.normpath(os.path.join(d, name)).replace(os.sep, "/")
            if os.path.isfile(os.path.join(self.root, rel)):
                return rel
        return None   # a system header or a typo: the compiler decides

    def headers(self, text, from_dir=None):
        """The local headers `text` includes, transitively, in a fixed order. Conditional
        includes count too: a key may name a header the object does not use, never the
        other way round."""
        found, todo = [], [(name, from_dir) for name in _INCLUDE.findall(text)]
        while todo:
            name, d = todo.pop(0)
            rel = self._resolve(name, d)
            if rel is None or rel in found:
                continue
            found.append(rel)
            if rel not in self._includes:
                self._includes[rel] = _INCLUDE.findall(self.text(rel))
            todo.extend((n, os.path.dirname(rel)) for n in self._includes[rel])
        return found

    def digest(self, parts, text, from_dir=None):
        """A key over `parts` (the toolchain, a kind), `text` and every header it includes."""
        h = hashlib.sha256()
        for p in parts:
            h.update(p.encode() + b"\0")
        h.update(text.encode() + b"\0")
        for rel in self.headers(text, from_dir):
            h.update(rel.encode() + b"\0" + self.text(rel).encode() + b"\0")
        return h.hexdigest()[:24]


@dataclass
class _Toolchain:
    cc: list
    cflags: list          # every flag but the source and output
    ldflags: list
    libs: list
    # What else an object depends on: the compiler's version, and the versions of the
    # headers outside the tree (Python's, OpenBLAS's) instead of their folders, which
    # differ between environments (pip's isolated build environment, a venv) that build
    # the same objects.
    identity: str

    @classmethod
    def find(cls, sanitize=False):
        from importlib.metadata import version
        inc, libdir, libname = _openblas()
        paths = sysconfig.get_paths()   # dlpack.c and the cffi wrappers use the C API
        py_includes = sorted({paths["include"], paths["platinclude"]})
        cc = _compiler()
        try:
            compiler = subprocess.run(cc + ["--version"], capture_output=True, text=True).stdout.strip()
        except OSError as e:
            raise RuntimeError(f"no C compiler: {' '.join(cc)} ({e}); set CC") from None
        identity = "\n".join([compiler, "python " + sysconfig.get_python_version() + " " + EXT_SUFFIX,
                              "scipy-openblas32 " + version("scipy-openblas32")])
        base, ldflags = CFLAGS, LDFLAGS
        if sanitize:   # the flags are part of every key: these objects never mix with the others
            base = [f for f in CFLAGS if not f.startswith("-O")] + SANITIZE_CFLAGS
            ldflags = LDFLAGS + SANITIZE_LDFLAGS
        cflags = base + ["-fPIC"] + ["-I" + d for d in INCLUDE_DIRS + [inc] + py_includes]
        return cls(cc, cflags, ldflags, ["-L" + libdir, "-l" + libname, "-lm"], identity)

    def key_parts(self, kind):
        local = [f for f in self.cflags if not f.startswith("-I") or f[2:] in INCLUDE_DIRS]
        return [kind, " ".join(self.cc), self.identity, " ".join(local)]


@dataclass
class _Object:
    stem: str                 # a readable name for the cache file
    key: str
    source: str = None        # a C file of the tree (relative), or
    wrapper: tuple = None     # (module, cdef, C prelude, include the types of `_C`)
    size: int = 0             # a guess of the compile time, to start long ones first

    def path(self, cache):
        return os.path.join(cache, f"{self.stem}-{self.key}.o")


@dataclass
class _Extension:
    module: str
    objects: list
    link_main: bool = False   # a shard: resolves the pointwise iterator from `_C`
    libs: list = field(default_factory=list)

    def stamp(self, tc):
        h = hashlib.sha256()
        libs = [f for f in tc.ldflags + self.libs if not f.startswith("-L")]   # (folders: see _Toolchain)
        for part in [self.module, " ".join(tc.cc), tc.identity, " ".join(libs),
                     str(self.link_main)] + [o.key for o in self.objects]:
            h.update(part.encode() + b"\0")
        return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _cffi_version():
    from importlib.metadata import version
    return version("cffi")


def _wrapper(tree, tc, module, cdef, decls, includes_main):
    """The cffi wrapper of `module`: `cdef` is what Python sees, `decls` the C declarations
    it compiles against (the prototypes, without the types ptl.h defines)."""
    prelude = '#include "ptl.h"\n' + decls
    key = tree.digest(tc.key_parts("cffi " + _cffi_version()) + [module, cdef, CFFI_TYPES if includes_main else ""],
                      prelude)
    stem = module.rsplit(".", 1)[1] + ".cffi"
    return _Object(stem, key, wrapper=(module, cdef, prelude, includes_main), size=len(cdef) * 40)


def _source(tree, tc, rel):
    text = tree.text(rel)
    key = tree.digest(tc.key_parts("c"), text, os.path.dirname(rel))
    return _Object(os.path.splitext(os.path.basename(rel))[0], key, source=rel, size=len(text))


def _plan(root, tc):
    """The extensions of the tree, each with the objects it links."""
    tree = _Tree(root)
    main_sources = []
    for pattern in MAIN_SOURCES:
        main_sources += sorted(os.path.relpath(p, root).replace(os.sep, "/")
                               for p in glob.glob(os.path.join(root, pattern)))
    main = _Extension(MAIN_MODULE, [_source(tree, tc, rel) for rel in main_sources]
                      + [_wrapper(tree, tc, MAIN_MODULE, cdef_text(root), prototypes(root), False)], libs=tc.libs)
    exts = [main]
    by_shard = {}
    for path in sorted(glob.glob(os.path.join(root, layout.PW_DIR, "*.c"))):
        name = os.path.splitext(os.path.basename(path))[0]
        by_shard.setdefault(layout.pw_shard(name), []).append(layout.pw_source(name))
    for shard, sources in sorted(by_shard.items()):
        module = layout.pw_module(shard)
        cdef = tree.text(layout.pw_header(shard))
        exts.append(_Extension(module, [_source(tree, tc, rel) for rel in sources]
                               + [_wrapper(tree, tc, module, cdef, cdef, True)], link_main=True, libs=["-lm"]))
    return exts


# --- compiling and linking ----------------------------------------------------------------------

def _run(cmd, what, root, verbose):
    if verbose:
        print(" ".join(shlex.quote(c) for c in cmd))
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if proc.stderr and verbose:
        print(proc.stderr)


def _types_ffi():
    """`_C`'s types, for the shards' ffi.include: the wrapper then names `_C` as the module
    that defines ptl_tensor and ptl_scalar, and cffi hands out one type object for both."""
    import cffi
    ffi = cffi.FFI()
    ffi.cdef(CFFI_TYPES)
    ffi.set_source(MAIN_MODULE, "")
    return ffi


# cffi parses every cdef with one shared pycparser instance, which is not thread-safe; the
# compilers still run in parallel
_CFFI_LOCK = threading.Lock()


def _emit_wrapper(obj, c_path):
    import cffi
    from cffi.recompiler import make_c_source   # ffi.emit_c_code, without its print
    module, cdef, prelude, includes_main = obj.wrapper
    with _CFFI_LOCK:
        ffi = cffi.FFI()
        if includes_main:
            ffi.include(_types_ffi())
        ffi.cdef(cdef)
        make_c_source(ffi, module, prelude, c_path)


def _compile(root, tc, cache, obj, verbose):
    out = obj.path(cache)
    tmp = out + ".%d.tmp" % os.getpid()
    if obj.source is not None:
        _run(tc.cc + tc.cflags + ["-c", obj.source, "-o", tmp], f"compiling {obj.source}", root, verbose)
    else:
        c_path = out[:-2] + ".%d.c" % os.getpid()
        try:
            _emit_wrapper(obj, c_path)
            # the wrapper is cffi's CPython glue: compiled as setuptools would, without asserts
            _run(tc.cc + tc.cflags + ["-DNDEBUG", "-c", c_path, "-o", tmp], f"compiling the wrapper of {obj.wrapper[0]}",
                 root, verbose)
        finally:
            if os.path.exists(c_path):
                os.remove(c_path)
    os.replace(tmp, out)   # atomic: a concurrent build never links a half-written object


def _link(root, tc, cache, ext, verbose):
    target = extension_path(root, ext.module)
    tmp = target + ".%d.tmp" % os.getpid()
    cmd = tc.cc + ["-shared", "-o", tmp] + [o.path(cache) for o in ext.objects] + tc.ldflags + ext.libs
    if ext.link_main:
        # needs `_C` by file name, found beside the shard wherever the package is installed
        cmd += ["-L" + os.path.dirname(target), "-l:" + os.path.basename(extension_path(root)),
                "-Wl,-rpath,$ORIGIN"]
    _run(cmd, f"linking {ext.module}", root, verbose)
    os.replace(tmp, target)
    with open(_stamp_path(root, ext.module), "w", encoding="utf-8") as f:
        f.write(ext.stamp(tc) + "\n")


def _stamp_path(root, module):
    return os.path.join(root, "generated", module.rsplit(".", 1)[1] + ".stamp")


def _linked(root, tc, ext):
    try:
        with open(_stamp_path(root, ext.module), encoding="utf-8") as f:
            return f.read().strip() == ext.stamp(tc) and os.path.exists(extension_path(root, ext.module))
    except FileNotFoundError:
        return False


def stale(root=ROOT, sanitize=False):
    """The extension modules that do not match the sources (missing, or built from
    something else). Cheap: hashes the sources, compiles nothing."""
    tc = _Toolchain.find(sanitize)
    return [e.module for e in _plan(root, tc) if not _linked(root, tc, e)]


def _remove_retired(root, exts):
    """Shards whose operators are all gone (and the old single-extension stamp)."""
    keep = {os.path.basename(extension_path(root, e.module)) for e in exts}
    keep |= {os.path.basename(_stamp_path(root, e.module)) for e in exts}
    for path in glob.glob(os.path.join(root, "generated", "_pw_*")):
        if os.path.basename(path) not in keep:
            os.remove(path)


def build(root=ROOT, force=False, verbose=False, jobs=None, cache=None, log=None, sanitize=False, modules=None):
    """Compile and link what changed, `jobs` compilers at a time (default: one per core),
    with the object cache `cache` (default: cache_dir(root)); `log` gets a line per object
    compiled and per extension linked. `sanitize` builds with ASan and UBSan
    (SANITIZE_CFLAGS): such modules load only with the sanitizer runtimes preloaded, so
    tools/sanitize.py builds them into a copy of the tree. `modules` (names such as
    MAIN_MODULE) limits the build to those extensions. Returns the extension modules that
    were linked."""
    log = log or (lambda line: None)
    tc = _Toolchain.find(sanitize)
    exts = _plan(root, tc)
    cache = cache or cache_dir(root)
    os.makedirs(cache, exist_ok=True)
    todo = [e for e in exts if (force or not _linked(root, tc, e)) and (modules is None or e.module in modules)]
    objects = {}
    for e in todo:
        for o in e.objects:
            if force or not os.path.exists(o.path(cache)):
                objects[o.path(cache)] = o
    # longest first, so the long pole starts at once
    work = sorted(objects.values(), key=lambda o: -o.size)
    workers = max(1, jobs or os.cpu_count() or 1)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for o in pool.map(lambda o: _compile(root, tc, cache, o, verbose) or o, work):
            log("compiled " + (o.source or f"the cffi wrapper of {o.wrapper[0]}"))
        # the shards link against `_C`, so it goes first
        rest = [e for e in todo if e.module != MAIN_MODULE]
        if len(rest) < len(todo):
            _link(root, tc, cache, todo[0], verbose)
            log("linked " + todo[0].module)
        for e in pool.map(lambda e: _link(root, tc, cache, e, verbose) or e, rest):
            log("linked " + e.module)
    _remove_retired(root, exts)
    return [e.module for e in todo]


# --- the JIT's fused kernels --------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _jit_toolchain():
    return _Toolchain.find()


def compile_jit(source, cache, stem="fused", root=ROOT, log=None):
    """Compile one C source generated at run time (the JIT fuser's kernels,
    pytorchlite/jit/_fuser.py) into a shared library in `cache`, with the flags and compiler
    of the extensions (`#include "ptl.h"` works as in kernels/), linked against `_C` for
    the pointwise iterator. The file is named by a key over the source, every header it
    includes, the toolchain and the `_C` it links, so a second process (or a second call)
    finds it and compiles nothing. Returns (path, whether it was compiled now). Written to a
    temporary name and renamed: concurrent processes never see (or load) a half-written
    library, and the last rename wins with an identical file."""
    tc = _jit_toolchain()
    main = extension_path(root)
    key = _Tree(root).digest(tc.key_parts("jit") + [" ".join(tc.ldflags), main], source)
    path = os.path.join(cache, f"{stem}-{key}.so")
    if os.path.exists(path):
        return path, False
    os.makedirs(cache, exist_ok=True)
    tmp = path + ".%d.%d.tmp" % (os.getpid(), threading.get_ident())
    c_path = tmp + ".c"
    with open(c_path, "w", encoding="utf-8") as f:
        f.write(source)
    try:
        cmd = tc.cc + tc.cflags + ["-shared", c_path, "-o", tmp] + tc.ldflags + [
            "-L" + os.path.dirname(main), "-l:" + os.path.basename(main),
            "-Wl,-rpath," + os.path.dirname(main), "-lm"]
        _run(cmd, f"compiling the fused kernel {stem}-{key}", root, False)
        os.replace(tmp, path)
    finally:
        for p in (c_path, tmp):
            if os.path.exists(p):
                os.remove(p)
    if log:
        log(f"compiled {path}")
    return path, True
