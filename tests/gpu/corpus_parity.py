#!/usr/bin/env python3
"""corpus_parity.py - the corpus's kernels through kpack, against the same
kernels launched by Triton's JIT, bit for bit and side by side in time.

    python3 tests/gpu/corpus_parity.py --lib-dir DIR [--package liger] [--time] [--json OUT]
    python3 tests/gpu/corpus_parity.py --lib-dir DIR --list      # no GPU needed

DIR holds, per corpus package P (tests/corpus/P/package.yaml, built by
tests/gpu/corpus_build.sh): libP.so (the launchers, the embedded fatbins and
the runtime in one shared object) and P.json (kpack's inventory).  The
cases are tests/gpu/corpus_cases/P.py: for each, how the project's own code
launches the kernel (its params, grid and options), with inputs made here.
Besides its kernel, module, entry, constexprs, make, grid, outputs and
shape, a case may give:
  inplace    outputs the kernel updates in place: cloned, not poisoned;
  dtypes     the dtype constexprs, which the JIT does not take (default T);
  aliases    {param: other}: the param is the same tensor as `other` after
             the cloning (a kernel handed one buffer twice, as input and
             as output);
  jit_kwargs values the JIT gets instead of the params and constexprs of
             those names (or besides them), for what the project passes
             and a C caller cannot: None for a float param, say.

For every case, with fresh random inputs (the seed is printed):
  1. the case's outputs (and in-place inputs, cloned) are poisoned with 0xFF
     bytes for each of the two runs;
  2. kpack: the typed launcher of the specialization with the case's
     constexpr values (found in the inventory) through ctypes, on torch's
     current stream;
  3. JIT: the project's @triton.jit function, imported from the installed
     package, launched by Triton with the same arguments, constexprs,
     options and grid.  Heuristics are computed by Triton itself (the
     function's own triton.heuristics values, re-wrapped around it); an
     autotuner is bypassed with the case's config;
  4. every output must be equal bit for bit;
  5. --time: both are timed side by side (CUDA events around `--iters`
     back-to-back launches, `--rounds` rounds alternating kpack and JIT, the
     median of each), and the ratio kpack / JIT is reported.

Output: one line per case (PASS/FAIL, the build kpack ran, the times), a
summary "N passed, M failed" and, with --time, the geometric mean of the
ratios.  Exit 0 when all pass, 1 on a failure, 77 (skipped) without torch,
triton or a CUDA device.
"""
import argparse
import ctypes
import importlib
import importlib.util
import json
import math
import os
import random
import statistics
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))

# C types of the launchers' params, by manifest type (kpack's types.h).
SCALARS = {"i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
           "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64,
           "f32": ctypes.c_float, "f64": ctypes.c_double, "bool": ctypes.c_bool}


def ctype_of(type_text):
    return ctypes.c_void_p if "*" in type_text else SCALARS[type_text.strip()]


class Library:
    """A corpus package's shared library and inventory."""

    def __init__(self, lib_dir, package):
        self.inventory = json.load(open(os.path.join(lib_dir, package + ".json")))
        self.lib = ctypes.CDLL(os.path.join(lib_dir, "lib%s.so" % package))
        self.lib.kpack_last_error_detail.restype = ctypes.c_char_p
        self.lib.kpack_status_name.restype = ctypes.c_char_p
        self.kernels = {k["name"]: k for k in self.inventory["kernels"]}

    def launcher(self, kernel, constexprs):
        """The typed launcher of `kernel`'s specialization whose constexprs
        have the values `constexprs` gives (in the manifest's spelling)."""
        k = self.kernels[kernel]
        wanted = {name: spell(value) for name, value in constexprs.items()}
        matches = [s for s in k["specializations"] if "build" not in s
                   and all(s["constexprs"].get(n) == v for n, v in wanted.items())]
        if len(matches) != 1:
            raise LookupError("%d specializations of %s match %s" % (len(matches), kernel, wanted))
        fn = getattr(self.lib, matches[0]["launcher"])
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p] + [ctype_of(p["type"]) for p in k["params"]]
        return matches[0]["launcher"], fn

    def status(self, code):
        return "%s: %s" % (self.lib.kpack_status_name(code).decode(), self.lib.kpack_last_error_detail().decode())


def spell(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def c_value(param, value):
    if "*" in param["type"]:
        return None if value is None else value.data_ptr()
    return value


def jit_function(module, entry):
    """The project's JIT function with its own heuristics around it, and no
    autotuner: (callable[grid], inner JITFunction)."""
    import triton
    from triton.runtime.autotuner import Autotuner, Heuristics
    fn = getattr(importlib.import_module(module), entry)
    heuristics = []
    while not isinstance(fn, triton.runtime.JITFunction):
        if isinstance(fn, Heuristics):
            heuristics.append(fn.values)
        elif not isinstance(fn, Autotuner):
            raise TypeError("%s.%s wraps %r, which the harness does not unwrap" % (module, entry, fn))
        fn = fn.fn
    wrapped = fn
    for values in reversed(heuristics):
        wrapped = triton.heuristics(values)(wrapped)
    return wrapped, fn


def kpack_build(kernel_info, params):
    """Which of the specialization's builds kpack runs for these values:
    the JIT's ordinary one when every auto value allows, else the general."""
    aligned, narrow = True, True
    any_auto = False
    for p in kernel_info["params"]:
        value = params.get(p["name"])
        if p.get("divisibility") == "auto":
            any_auto = True
            v = 0 if value is None else value.data_ptr() if hasattr(value, "data_ptr") else int(value)
            aligned = aligned and v % 16 == 0
        if p.get("equal_to_1") == "auto":
            any_auto = True
            aligned = aligned and int(value) == 1
        if p.get("width") == "auto":
            any_auto = True
            narrow = narrow and -2 ** 31 <= int(params[p["name"]]) < 2 ** 31
    if not any_auto:
        return "single build"
    return "JIT build (aligned, i32)" if aligned and narrow else "general build"


class Runner:
    def __init__(self, torch, lib, case, seed):
        self.torch, self.lib, self.case, self.seed = torch, lib, case, seed
        self.kernel = lib.kernels[case["kernel"]]
        self.params = [p for p in self.kernel["params"]]
        torch.manual_seed(seed)
        self.inputs = case["make"](torch)
        self.name, self.launch_fn = lib.launcher(case["kernel"], case["constexprs"])
        self.jit, self.inner = jit_function(case["module"], case["entry"])
        self.grid = case["grid"](self.inputs)

    def fresh(self):
        """Inputs with the outputs (and in-place tensors) cloned and poisoned."""
        p = dict(self.inputs)
        for name in self.case["outputs"]:
            p[name] = p[name].clone()
            if name not in self.case.get("inplace", ()):
                p[name].view(self.torch.uint8).fill_(0xFF)
        for name, other in self.case.get("aliases", {}).items():
            p[name] = p[other]
        return p

    def launch_kpack(self, p):
        stream = self.torch.cuda.current_stream().cuda_stream
        args = [c_value(q, p[q["name"]]) for q in self.params]
        rc = self.launch_fn(stream, *args)
        if rc != 0:
            raise RuntimeError("%s returned %s" % (self.name, self.lib.status(rc)))

    def launch_jit(self, p):
        jit_kwargs = self.case.get("jit_kwargs", {})
        kwargs = {q["name"]: p[q["name"]] for q in self.params
                  if not q.get("launch_only") and q["name"] not in jit_kwargs}
        options = {k: v for k, v in self.case["constexprs"].items() if k in ("num_warps", "num_stages", "maxnreg")}
        constexprs = {k: v for k, v in self.case["constexprs"].items()
                      if k not in options and k not in self.case.get("dtypes", ("T",))}
        constexprs.update(jit_kwargs)
        self.jit[self.grid](**kwargs, **constexprs, **options)

    def check(self):
        a, b = self.fresh(), self.fresh()
        self.launch_kpack(a)
        self.launch_jit(b)
        self.torch.cuda.synchronize()
        different = []
        for name in self.case["outputs"]:
            if not self.torch.equal(a[name].view(self.torch.uint8), b[name].view(self.torch.uint8)):
                diff = (a[name].float() - b[name].float()).abs().max().item()
                different.append("%s (max |diff| %g)" % (name, diff))
        return different

    def time(self, iters, rounds):
        torch = self.torch
        a, b = self.fresh(), self.fresh()
        for _ in range(3):  # load, compile, warm
            self.launch_kpack(a)
            self.launch_jit(b)
        torch.cuda.synchronize()
        times = {"kpack": [], "jit": []}
        for r in range(rounds):
            order = [("kpack", self.launch_kpack, a), ("jit", self.launch_jit, b)]
            if r % 2:
                order.reverse()
            for label, launch, p in order:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(iters):
                    launch(p)
                end.record()
                end.synchronize()
                times[label].append(start.elapsed_time(end) * 1000.0 / iters)
        return statistics.median(times["kpack"]), statistics.median(times["jit"])


def load_cases(package):
    """CASES of corpus_cases/PACKAGE.py, loaded by path under a name of its
    own: imported as `fla`, the case file would shadow the fla package."""
    path = os.path.join(HERE, "corpus_cases", package + ".py")
    spec = importlib.util.spec_from_file_location("kpack_corpus_cases_" + package, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib-dir", required=True)
    ap.add_argument("--package", action="append", help="corpus package (default: every one in --lib-dir)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--list", action="store_true", help="list the cases and their launchers")
    args = ap.parse_args(argv[1:])
    packages = args.package or sorted(f[:-5] for f in os.listdir(args.lib_dir) if f.endswith(".json"))
    if args.list:
        for package in packages:
            lib = Library(args.lib_dir, package)
            for case in load_cases(package):
                print(package, case["kernel"], lib.launcher(case["kernel"], case["constexprs"])[0], case["shape"])
        return 0
    try:
        import torch
        import triton  # noqa: F401
    except ImportError as e:
        print("skipped: %s" % e)
        return SKIP
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return SKIP
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print("seed %d; %s; torch %s; triton %s" % (seed, torch.cuda.get_device_name(), torch.__version__,
                                                 __import__("triton").__version__))
    results, failed, ratios = [], 0, []
    for package in packages:
        lib = Library(args.lib_dir, package)
        # Bit parity holds only against the JIT of the Triton that built it.
        built = lib.inventory.get("toolchain", {}).get("triton", "")
        here = __import__("triton").__version__
        if built and not built.startswith("triton %s " % here):
            print("FAIL %s was built with %s; this Python (%s) has Triton %s: run this script with the build's "
                  "Triton" % (package, built, sys.executable, here))
            failed += 1
            continue
        for case in load_cases(package):
            line = {"package": package, "kernel": case["kernel"], "shape": case["shape"]}
            try:
                r = Runner(torch, lib, case, seed)
                line["launcher"], line["build"] = r.name, kpack_build(r.kernel, r.inputs)
                different = r.check()
                line["bit_equal"] = not different
                if different:
                    line["error"] = "outputs differ: " + ", ".join(different)
                if args.time and not different:
                    line["kpack_us"], line["jit_us"] = r.time(args.iters, args.rounds)
                    line["ratio"] = line["kpack_us"] / line["jit_us"]
                    ratios.append(line["ratio"])
            except Exception as e:  # a case that cannot run is a failure, with the reason
                line["bit_equal"] = False
                line["error"] = "%s: %s" % (type(e).__name__, e)
            failed += 0 if line["bit_equal"] else 1
            results.append(line)
            timing = (" kpack %.1f us, JIT %.1f us, %.3fx" % (line["kpack_us"], line["jit_us"], line["ratio"])
                      if "ratio" in line else "")
            print("%s %s %s [%s] %s%s%s" % ("PASS" if line["bit_equal"] else "FAIL", package, line.get("launcher", case["kernel"]),
                                           case["shape"], line.get("build", "?"), timing,
                                           ("; " + line["error"]) if "error" in line else ""))
            torch.cuda.empty_cache()
    print("%d passed, %d failed" % (len(results) - failed, failed))
    if ratios:
        geomean = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print("kpack / JIT time: geometric mean %.3f, max %.3f over %d cases" % (geomean, max(ratios), len(ratios)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seed": seed, "device": torch.cuda.get_device_name(), "results": results}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
