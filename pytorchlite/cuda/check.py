"""The one command that proves the CUDA backend on a GPU machine, from a fresh checkout:

    python pytorchlite/cuda/check.py [--out cuda_check_report.md]     (works before any build)
    python -m pytorchlite.cuda.check [--out cuda_check_report.md]     (once pytorchlite imports)

It builds what is missing (`python -m codegen`: the generated sources and the CPU
extension; NVRTC compiles the CUDA modules for this GPU at the same time), reports the
environment (GPU, driver, cuda-bindings and NVRTC versions, compiler, Python headers),
runs the device tests (tests/cuda/test_gpu.py: CUDA against the CPU per operator family,
reductions, cuBLAS GEMM, the nn kernels, the allocator, streams and events, host reads,
DLPack with PyTorch, the debug mode), trains the digits CNN (examples/train_digits.py) on
the CPU and on CUDA and compares their accuracy, runs the GPU benchmarks side by side with PyTorch's CUDA build (benchmarks/bench_cuda.py), and
lists the operators with no CUDA kernel. Everything goes into one Markdown report (and a
JSON twin beside it); a summary is printed.

Each section runs in its own process and reports pass or fail with the error, so one
run tells the most: a kernel that kills its process costs that one test (the run
resumes after it, and the report names it), and the whole run keeps within --budget
seconds (default 450: under 8 minutes on an H100).

Without a GPU every device section reports "no GPU" and the report is still written.
With PTL_CUDA_EMULATOR=1 the sections run on the CPU emulator (pytorchlite/cuda/
_emulator.py): a rehearsal of the check itself, not a measurement.

This file imports only the standard library at the top: it must run where pytorchlite
cannot be imported yet.
"""

import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_OUT = "cuda_check_report.md"
DEFAULT_TESTS = ("tests/cuda/test_gpu.py",)
PACKAGES = ("cuda-bindings", "cuda-python", "cuda-pathfinder", "nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12",
            "nvidia-cublas", "numpy", "cffi", "pycparser", "scipy-openblas32", "jinja2", "pyyaml", "pytest",
            "hypothesis", "safetensors", "mkl", "torch")
EMULATOR_ENV = "PTL_CUDA_EMULATOR"
MAX_RESUMES = 40              # crashed tests skipped before the test section gives up


class Section:
    """One part of the check: status 'pass', 'fail', 'skip' (with why) or 'timeout'."""

    def __init__(self, name):
        self.name = name
        self.status = "pass"
        self.seconds = 0.0
        self.lines = []           # Markdown body
        self.error = ""
        self.data = {}

    def fail(self, error, status="fail"):
        self.status = status
        self.error = (self.error + "\n" + error).strip() if self.error else error

    def to_json(self):
        return {"name": self.name, "status": self.status, "seconds": round(self.seconds, 1), "error": self.error,
                "data": self.data}


class Check:
    def __init__(self, args):
        self.args = args
        self.t0 = time.monotonic()
        self.sections = []
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = ROOT + (os.pathsep + self.env["PYTHONPATH"] if self.env.get("PYTHONPATH") else "")
        self.env.setdefault("PYTHONUNBUFFERED", "1")
        self.env.setdefault("PTL_CUDA_CACHE", os.path.join(ROOT, "build", "cuda-cache"))
        self.work = tempfile.mkdtemp(prefix="ptl-cuda-check-")
        self.gpu = None           # None: unknown; False: no GPU (why in self.no_gpu_reason)
        self.no_gpu_reason = ""

    # -- time -----------------------------------------------------------------------------
    def left(self):
        return self.args.budget - (time.monotonic() - self.t0)

    def run(self, cmd, timeout, **kw):
        """A subprocess in the checkout with this check's environment: (rc, output, seconds);
        rc None means it ran past `timeout`."""
        t = time.monotonic()
        try:
            p = subprocess.run(cmd, cwd=ROOT, env=self.env, capture_output=True, text=True,
                               timeout=max(1.0, timeout), **kw)
            return p.returncode, p.stdout + p.stderr, time.monotonic() - t
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"") + (e.stderr or b"")
            return None, out.decode(errors="replace") if isinstance(out, bytes) else out, time.monotonic() - t

    def section(self, name, fn):
        s = Section(name)
        self.sections.append(s)
        t = time.monotonic()
        print(f"== {name}", flush=True)
        try:
            fn(s)
        except Exception as e:  # a section's own failure must not stop the others
            import traceback
            s.fail(f"{type(e).__name__}: {e}\n{traceback.format_exc()[-3000:]}")
        s.seconds = time.monotonic() - t
        print(f"   {s.status} ({s.seconds:.1f} s)" + (f": {s.error.splitlines()[0][:200]}" if s.error else ""),
              flush=True)
        return s

    # -- sections ---------------------------------------------------------------------------
    def _gpu_or_skip(self, s):
        if not self.gpu:
            s.status = "skip"
            s.error = f"no GPU: {self.no_gpu_reason}"
        return self.gpu

    def environment(self, s):
        rows = [("python", f"{platform.python_version()} ({sys.executable})"),
                ("platform", f"{platform.platform()}, {os.cpu_count()} CPUs"),
                ("checkout", ROOT)]
        inc = sysconfig.get_paths()["include"]
        has_headers = os.path.exists(os.path.join(inc, "Python.h"))
        rows.append(("Python headers", f"{inc} ({'Python.h found' if has_headers else 'Python.h MISSING'})"))
        cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
        rows.append(("C compiler", _first_line(self.run([cc, "--version"], 30)[1]) if cc else "none found"))
        for pkg in PACKAGES:
            try:
                rows.append((pkg, importlib.metadata.version(pkg)))
            except importlib.metadata.PackageNotFoundError:
                rows.append((pkg, "not installed"))
        smi = shutil.which("nvidia-smi")
        if smi:
            rc, out, _ = self.run([smi, "--query-gpu=name,driver_version,memory.total,clocks.max.sm,"
                                   "clocks.max.mem", "--format=csv,noheader"], 60)
            rows.append(("nvidia-smi", out.strip() if rc == 0 else f"failed: {out.strip()[:300]}"))
        rc, out, _ = self.run([sys.executable, __file__, "--probe"], 120)
        probe = _json_tail(out)
        if probe is None:
            s.fail(f"probing CUDA failed (rc {rc}):\n{out[-2000:]}")
            probe = {}
        for k, v in probe.items():
            rows.append((k, v))
        self.gpu = probe.get("gpu_available") is True
        self.no_gpu_reason = probe.get("why_not", "")
        if os.environ.get(EMULATOR_ENV, "").strip() not in ("", "0"):
            rows.append(("EMULATOR", "PTL_CUDA_EMULATOR is set: the device is the CPU emulator, not a GPU"))
        s.data = dict(rows)
        s.lines += ["| what | value |", "| --- | --- |"] + [f"| {k} | {_cell(v)} |" for k, v in rows]
        if not has_headers:
            s.fail(f"Python.h is missing from {inc}: the CPU extension cannot be compiled "
                   "(install the Python development headers)")

    def build(self, s):
        rc, out, t = self.run([sys.executable, "-m", "codegen", "--no-build"], min(120, self.left()))
        s.lines.append(f"- `python -m codegen --no-build` (generate): {t:.1f} s, rc {rc}")
        if rc != 0:
            s.fail(f"code generation failed (rc {rc}):\n{out[-3000:]}")
            return
        # NVRTC compiles the CUDA modules for this GPU while gcc builds the CPU extension
        nv = {}
        nv_thread = None
        if self.gpu:
            def precompile():
                nv["result"] = self.run([sys.executable, __file__, "--precompile"], min(400, self.left()))
            nv_thread = threading.Thread(target=precompile)
            nv_thread.start()
        rc, out, t = self.run([sys.executable, "-m", "codegen"], min(420, self.left()))
        s.lines.append(f"- `python -m codegen` (compile the CPU extension): {t:.1f} s, rc {rc}")
        if rc != 0:
            s.fail(f"building the CPU extension failed (rc {rc}):\n{out[-4000:]}")
        if nv_thread is not None:
            nv_thread.join()
            nrc, nout, nt = nv["result"]
            info = _json_tail(nout) or {}
            s.lines.append(f"- NVRTC for {info.get('arch', '?')} (in parallel): {nt:.1f} s, rc {nrc}; "
                           + ", ".join(f"{k} {v}" for k, v in info.get("modules", {}).items()))
            if nrc != 0:
                s.fail(f"NVRTC compilation failed (rc {nrc}):\n{nout[-4000:]}")
        rc, out, _ = self.run([sys.executable, "-c", "import pytorchlite; print(pytorchlite.__file__)"], 120)
        s.lines.append(f"- `import pytorchlite`: {'ok, ' + out.strip().splitlines()[-1] if rc == 0 else 'FAILED'}")
        if rc != 0:
            s.fail(f"pytorchlite does not import after the build:\n{out[-3000:]}")
        rc, out, _ = self.run([sys.executable, "-m", "pytorchlite.env"], 120)
        s.lines += ["", "`python -m pytorchlite.env`:", "", "```", out.strip()[-4000:], "```"]

    def smoke(self, s):
        if not self._gpu_or_skip(s):
            return
        code = ("import pytorchlite as ptl\n"
                "x = ptl.arange(6, dtype=ptl.float32).reshape(2, 3).to('cuda')\n"
                "y = (x * 2 + 1).t()\n"
                "print(y.cpu().tolist(), ptl.cuda.get_device_name(), ptl.cuda.memory_allocated())\n"
                "assert y.cpu().tolist() == [[1.0, 7.0], [3.0, 9.0], [5.0, 11.0]]\n")
        rc, out, t = self.run([sys.executable, "-c", code], min(600, self.left()))
        s.lines += ["```", out.strip()[-3000:], "```"]
        if rc != 0:
            s.fail(f"the first CUDA computation failed (rc {rc}):\n{out[-3000:]}")

    def tests(self, s):
        if not self._gpu_or_skip(s):
            return
        progress = os.path.join(self.work, "progress.jsonl")
        deselect = os.path.join(self.work, "deselect.txt")
        env_extra = {"PTL_CHECK_PROGRESS": progress, "PTL_CHECK_DESELECT": deselect}
        crashed = []
        runs = 0
        timed_out = False
        while True:
            budget = self.left() - self.args.reserve
            if budget < 20:
                timed_out = True
                break
            cmd = [sys.executable, "-m", "pytest", "-q", "-rN", "-p", "no:cacheprovider", "-p",
                   "pytorchlite.cuda._check_plugin", *self.args.tests]
            if self.args.k:
                cmd += ["-k", self.args.k]
            env = dict(self.env, **env_extra)
            t = time.monotonic()
            try:
                p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=budget)
                rc, out = p.returncode, p.stdout + p.stderr
            except subprocess.TimeoutExpired as e:
                rc, out = None, ((e.stdout or b"") + (e.stderr or b"")).decode(errors="replace")
            runs += 1
            s.data.setdefault("runs", []).append({"rc": rc, "seconds": round(time.monotonic() - t, 1),
                                                  "tail": out[-1500:]})
            events = _read_jsonl(progress)
            started = [e["nodeid"] for e in events if e["event"] == "start"]
            finished = {e["nodeid"] for e in events if e["event"] == "finish"}
            gone = {c["nodeid"] for c in crashed}
            open_tests = [n for n in started if n not in finished and n not in gone]
            if rc is None:
                timed_out = True
                if open_tests:
                    crashed.append({"nodeid": open_tests[-1], "why": "still running at the deadline",
                                    "output": _crash_excerpt(out)})
                break
            if rc in (0, 1, 5) and not open_tests:
                if rc == 5 or "no tests ran" in out[-300:] and not started:
                    s.lines.append("pytest collected no tests")
                break
            if rc in (2, 3, 4) and not open_tests:
                s.fail(f"pytest could not run the tests (rc {rc}):\n{out[-4000:]}")
                break
            # the process died inside a test: record it, skip what ran, go on
            victim = open_tests[-1] if open_tests else None
            crashed.append({"nodeid": victim or "(collection)", "why": _signal_name(rc), "output": _crash_excerpt(out)})
            if victim is None or len(crashed) >= MAX_RESUMES:
                s.fail(f"the test process died (rc {rc}) outside a test, or too often; last output:\n{out[-3000:]}")
                break
            with open(deselect, "w", encoding="utf-8") as f:
                f.write("\n".join(sorted(set(started))) + "\n")
        results = {}
        for e in _read_jsonl(progress):
            if e["event"] == "result":
                prev = results.get(e["nodeid"])
                if prev is None or prev["outcome"] == "passed":
                    results[e["nodeid"]] = e
        for c in crashed:
            results[c["nodeid"]] = {"nodeid": c["nodeid"], "outcome": "crashed", "message": f"{c['why']}\n{c['output']}",
                                    "duration": 0}
        self._report_tests(s, results, crashed, runs, timed_out)

    def _report_tests(self, s, results, crashed, runs, timed_out):
        fams = {}
        for r in results.values():
            fam = _family(r["nodeid"])
            fams.setdefault(fam, {"passed": 0, "failed": 0, "skipped": 0, "crashed": 0, "items": []})
            fams[fam][r["outcome"] if r["outcome"] in ("passed", "failed", "skipped", "crashed") else "failed"] += 1
            fams[fam]["items"].append(r)
        total = {k: sum(f[k] for f in fams.values()) for k in ("passed", "failed", "skipped", "crashed")}
        s.data = {"totals": total, "runs": s.data.get("runs", []), "families": {
            k: {kk: vv for kk, vv in v.items() if kk != "items"} for k, v in fams.items()},
            "failures": [r for r in results.values() if r["outcome"] in ("failed", "crashed")],
            "skips": sorted({r["message"] for r in results.values() if r["outcome"] == "skipped"})}
        s.lines += [f"{total['passed']} passed, {total['failed']} failed, {total['crashed']} crashed, "
                    f"{total['skipped']} skipped, in {runs} pytest run{'s' if runs != 1 else ''}"
                    + (" (stopped at the deadline)" if timed_out else ""), "",
                    "| family | passed | failed | crashed | skipped |", "| --- | --- | --- | --- | --- |"]
        for fam in sorted(fams):
            f = fams[fam]
            s.lines.append(f"| {fam} | {f['passed']} | {f['failed']} | {f['crashed']} | {f['skipped']} |")
        bad = s.data["failures"]
        if bad:
            s.lines += ["", f"### Failures ({len(bad)})", ""]
            for r in sorted(bad, key=lambda r: r["nodeid"]):
                s.lines += [f"<details><summary>{r['outcome'].upper()}: <code>{r['nodeid']}</code></summary>", "",
                            "```", _trim(r["message"], 2500), "```", "</details>", ""]
        other_skips = [m for m in s.data["skips"] if not m.startswith("no CUDA kernel")]
        if other_skips:
            s.lines += ["", "Skipped (other than missing CUDA kernels):", ""] + [f"- {m}" for m in other_skips]
        if total["failed"] or total["crashed"]:
            s.fail(f"{total['failed']} failed, {total['crashed']} crashed")
        if timed_out:
            s.fail("the tests did not finish within the budget", status="timeout" if s.status == "pass" else s.status)
        if not results:
            s.fail("no test reported a result")

    def digits(self, s):
        """examples/train_digits.py trained on the CPU and on CUDA from the same seed: the
        held-out accuracies must agree (within two points: float sums are not bit-equal)."""
        if not self._gpu_or_skip(s):
            return
        epochs = self.args.digits_epochs
        if os.environ.get(EMULATOR_ENV, "").strip() not in ("", "0"):
            epochs = 1
            s.lines.append("**Emulated device: one epoch, a rehearsal of this section.**\n")
        acc = {}
        s.lines += ["| device | epochs | held-out accuracy | seconds |", "| --- | --- | --- | --- |"]
        for dev in ("cpu", "cuda"):
            cmd = [sys.executable, "examples/train_digits.py", "--epochs", str(epochs), "--device", dev,
                   "--out", os.path.join(self.work, f"digits-{dev}")]
            rc, out, secs = self.run(cmd, max(30, self.left() - 60))
            m = re.search(r"held-out test accuracy ([0-9.]+)%", out or "")
            if m is None:
                s.fail(f"training on {dev} did not finish (rc {rc}):\n{(out or '')[-3000:]}")
                return
            acc[dev] = float(m.group(1)) / 100
            s.lines.append(f"| {dev} | {epochs} | {acc[dev]:.2%} | {secs:.1f} |")
        s.data = {"epochs": epochs, "accuracy": acc}
        if abs(acc["cuda"] - acc["cpu"]) > 0.02:
            s.fail(f"CUDA reached {acc['cuda']:.2%}, the CPU {acc['cpu']:.2%}")

    def benchmarks(self, s):
        if not self._gpu_or_skip(s):
            return
        out_json = os.path.join(self.work, "bench.json")
        cmd = [sys.executable, "benchmarks/bench_cuda.py", "--json", out_json]
        if os.environ.get(EMULATOR_ENV, "").strip() not in ("", "0"):
            cmd.append("--quick")
            s.lines.append("**Emulated device: these numbers measure the CPU emulator, not a GPU.**\n")
        rc, out, _ = self.run(cmd, max(30, self.left() - 15))
        if rc != 0:
            s.fail(f"the benchmarks failed (rc {rc}):\n{out[-3000:]}")
            s.lines += ["```", out.strip()[-3000:], "```"]
            return
        with open(out_json, encoding="utf-8") as f:
            s.data = json.load(f)
        s.lines.append(out.strip())

    def coverage(self, s):
        code = ("import json\nfrom pytorchlite.cuda import _coverage\nprint(json.dumps(_coverage.table()))")
        rc, out, _ = self.run([sys.executable, "-c", code], 120)
        table = _json_tail(out)
        if rc != 0 or table is None:
            s.fail(f"reading the dispatch table failed (rc {rc}):\n{out[-2000:]}")
            return
        s.data = table
        s.lines += ["| how it runs on CUDA | operators | count |", "| --- | --- | --- |"]
        for status, names in table.items():
            s.lines.append(f"| {status} | {', '.join(names)} | {len(names)} |")

    # -- the report -----------------------------------------------------------------------------
    def write_report(self):
        out = os.path.abspath(self.args.out)
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        total = time.monotonic() - self.t0
        env = next((x.data for x in self.sections if x.name == "environment"), {})
        head = [f"# pytorchlite CUDA check: {env.get('device', 'no GPU')}", "",
                f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}, "
                f"{total:.0f} s in all (budget {self.args.budget:.0f} s)", "",
                "| section | status | seconds | error |", "| --- | --- | --- | --- |"]
        for x in self.sections:
            head.append(f"| {x.name} | {x.status.upper()} | {x.seconds:.1f} | "
                        f"{_cell(x.error.splitlines()[0] if x.error else '')} |")
        body = []
        for x in self.sections:
            body += ["", f"## {x.name}", ""] + x.lines
            if x.error and x.status != "skip":
                body += ["", "Error:", "", "```", _trim(x.error, 6000), "```"]
        text = "\n".join(head + body) + "\n"
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
        with open(os.path.splitext(out)[0] + ".json", "w", encoding="utf-8") as f:
            json.dump({"seconds": round(total, 1), "sections": [x.to_json() for x in self.sections]}, f, indent=1)
        return out, text

    def main(self):
        self.section("environment", self.environment)
        if not self.args.skip_build:
            self.section("build", self.build)
        self.section("smoke", self.smoke)
        self.section("tests", self.tests)
        if not self.args.no_digits:
            self.section("digits", self.digits)
        if not self.args.no_bench:
            self.section("benchmarks", self.benchmarks)
        self.section("coverage", self.coverage)
        out, _text = self.write_report()
        print()
        print(f"{'section':<12} {'status':<8} {'seconds':>8}")
        for x in self.sections:
            print(f"{x.name:<12} {x.status:<8} {x.seconds:>8.1f}  {x.error.splitlines()[0][:100] if x.error else ''}")
        tests = next((x for x in self.sections if x.name == "tests"), None)
        if tests is not None and "totals" in tests.data:
            t = tests.data["totals"]
            print(f"tests: {t['passed']} passed, {t['failed']} failed, {t['crashed']} crashed, {t['skipped']} skipped")
        bench = next((x for x in self.sections if x.name == "benchmarks"), None)
        if bench is not None and bench.data.get("results"):
            for r in bench.data["results"]:
                ratio = f"{r['ratio']:.2f}x PyTorch" if r.get("ratio") else ""
                print(f"bench: {r['name']}: {r['pytorchlite']:.2f} {r['unit']} {ratio}")
        print(f"report: {out}")
        return 0 if all(x.status in ("pass", "skip") for x in self.sections) else 1


# --- helpers run in their own process ----------------------------------------------------------

def _load_by_path(name, rel):
    """A module of this checkout loaded from its file, without importing pytorchlite (which
    may not be built yet)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, rel))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _probe_main():
    """--probe: the GPU, driver and bindings as one JSON line (no pytorchlite import)."""
    info = {}
    if os.environ.get(EMULATOR_ENV, "").strip() not in ("", "0"):
        info.update(gpu_available=True, device="CPU emulator (PTL_CUDA_EMULATOR=1)", capability="9.0",
                    why_not="")
        print(json.dumps(info))
        return 0
    try:
        from cuda.bindings import driver
        import cuda.bindings
        info["cuda-bindings"] = getattr(cuda.bindings, "__version__", "?")
    except ImportError:
        try:
            from cuda import cuda as driver
        except ImportError:
            info.update(gpu_available=False, why_not="cuda-python / cuda-bindings is not installed")
            print(json.dumps(info))
            return 0
    try:
        from cuda.bindings import nvrtc
        err, major, minor = nvrtc.nvrtcVersion()
        info["NVRTC"] = f"{major}.{minor}" if int(err) == 0 else f"error {err}"
    except Exception as e:
        info["NVRTC"] = f"unavailable: {type(e).__name__}: {e}"
    try:
        (err,) = driver.cuInit(0)
        if int(err) != 0:
            info.update(gpu_available=False, why_not=f"cuInit failed: {err}")
        else:
            err, version = driver.cuDriverGetVersion()
            info["driver CUDA version"] = f"{version // 1000}.{version % 1000 // 10}"
            err, n = driver.cuDeviceGetCount()
            info["devices"] = n
            if n == 0:
                info.update(gpu_available=False, why_not="the driver reports 0 devices")
            else:
                err, dev = driver.cuDeviceGet(0)
                err, name = driver.cuDeviceGetName(256, dev)
                attr = driver.CUdevice_attribute
                cc = [driver.cuDeviceGetAttribute(getattr(attr, f"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_{m}"), dev)[1]
                      for m in ("MAJOR", "MINOR")]
                sms = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)[1]
                err, mem = driver.cuDeviceTotalMem(dev)
                info.update(gpu_available=True, device=bytes(name).split(b"\0", 1)[0].decode(),
                            capability=f"{cc[0]}.{cc[1]}", multiprocessors=sms, memory=f"{mem / 2 ** 30:.1f} GiB",
                            why_not="")
    except Exception as e:  # no driver library at all
        info.update(gpu_available=False, why_not=f"no NVIDIA driver ({type(e).__name__}: {e})")
    print(json.dumps(info))
    return 0


def _precompile_main():
    """--precompile: NVRTC-compile the modules the launcher loads, for this GPU, into the
    disk cache (no pytorchlite import: the CPU extension may still be compiling)."""
    nvrtc = _load_by_path("_ptl_check_nvrtc", os.path.join("pytorchlite", "cuda", "_nvrtc.py"))
    if os.environ.get(EMULATOR_ENV, "").strip() not in ("", "0"):
        major, minor = 9, 0
    else:
        from cuda.bindings import driver
        driver.cuInit(0)
        _err, dev = driver.cuDeviceGet(0)
        attr = driver.CUdevice_attribute
        major = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)[1]
        minor = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)[1]
    arch = nvrtc.arch_for_capability(major, minor)
    times = {}
    errors = []

    def one(name):
        t = time.monotonic()
        try:
            nvrtc.compile_source(name, arch)
            times[name] = f"{time.monotonic() - t:.1f} s"
        except Exception as e:
            errors.append(f"{name}: {type(e).__name__}: {e}")
    threads = [threading.Thread(target=one, args=(n,)) for n in ("pointwise", "fill_copy")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"arch": arch, "modules": times, "errors": errors}))
    return 1 if errors else 0


# --- small helpers ------------------------------------------------------------------------------

def _family(nodeid):
    parts = nodeid.split("::")
    return parts[1] if len(parts) > 2 else os.path.basename(parts[0])


def _read_jsonl(path):
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass          # a line cut short by a crash
    except OSError:
        pass
    return out


def _json_tail(out):
    for line in reversed((out or "").strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


def _signal_name(rc):
    if rc is not None and rc < 0:
        import signal
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exited with status {rc} inside a test"


def _crash_excerpt(out):
    """What a dying test process said: faulthandler's report (the innermost frames come
    first) when there is one, else the end of the output."""
    i = out.find("Fatal Python error")
    if i >= 0:
        return "\n".join(out[i:].splitlines()[:40])
    return out[-3000:]


def _first_line(text):
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def _cell(v):
    return str(v).replace("|", "\\|").replace("\n", " ")


def _trim(text, n):
    return text if len(text) <= n else text[:n // 3] + "\n...\n" + text[-(2 * n) // 3:]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m pytorchlite.cuda.check", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=DEFAULT_OUT, help=f"the Markdown report (default {DEFAULT_OUT}; "
                   "a .json twin is written beside it)")
    p.add_argument("--budget", type=float, default=450.0, help="seconds for the whole check (default 450)")
    p.add_argument("--reserve", type=float, default=150.0,
                   help="seconds kept from the tests for the digits CNN, the benchmarks and the report "
                   "(default 150)")
    p.add_argument("--tests", nargs="+", default=list(DEFAULT_TESTS), help="test files or node ids to run")
    p.add_argument("-k", default=None, help="pytest -k expression for the tests")
    p.add_argument("--skip-build", action="store_true", help="do not run codegen")
    p.add_argument("--no-bench", action="store_true", help="skip the benchmarks")
    p.add_argument("--no-digits", action="store_true", help="skip training the digits CNN on CPU and CUDA")
    p.add_argument("--digits-epochs", type=int, default=10, help="epochs of the digits CNN (default 10)")
    p.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--precompile", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.probe:
        return _probe_main()
    if args.precompile:
        return _precompile_main()
    return Check(args).main()


if __name__ == "__main__":
    sys.exit(main())
