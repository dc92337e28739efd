#!/usr/bin/env python3
"""triton_parity.py - kpack's AOT Triton kernels against Triton's own JIT.

    python3 tests/gpu/triton_parity.py --lib build/tests/gpu/libkernels_shared.so
    python3 tests/gpu/triton_parity.py --lib ... --seed 123     # reproduce a run
    python3 tests/gpu/triton_parity.py --lib ... --list         # no GPU needed
    python3 tests/gpu/triton_parity.py --lib ... --list --check-aot

The specializations come from the manifests (manifests/kpack.yaml and every
kernel manifest with `language: triton`), expanded and named exactly as kpack
does (docs/manifest.md, "Specialization names"), and are cross-checked both
ways against what the library holds (kernels_specialization_info).

For every Triton specialization and several sizes (1, sizes that are not a
multiple of the tile, at least 1M elements), with fresh random inputs (the
seed is printed):

  1. the kpack typed launcher is called through ctypes on poisoned outputs
     (0xFF bytes, NaN in every float type, with poisoned guard bytes around);
  2. the same @triton.jit function from templates/triton/ is launched by
     Triton's JIT with the same constexprs, num_warps, num_stages (3 unless
     the manifest has a num_stages axis) and grid (the manifest's grid
     expression) on fresh poisoned outputs;
  3. the two results must be equal bit for bit, guard bytes included;
  4. the kpack result is compared with a float64 torch reference: relative
     1e-5 (f32), 1e-3 (f16), 1e-2 (bf16), the f32 cross-entropy loss 1e-5,
     the mask bit for bit; NaN never passes.  These are tests/gpu/gpu_test.cc's
     tolerances.

Triton's JIT specializes on the call's values (integers that are 1 become
constants, integers and pointers divisible by 16 get divisibility hints,
integers that fit become i32), while the AOT build has exactly the manifest's
types and hints.  When the bits differ, the script finds out why: it compiles
the specialization as kpack did (same signature, hints, options), checks that
this machine code is the one embedded in the library, launches it through
Triton, and compares the SASS (the cubins' .text) with the JIT's.  If kpack's
result equals Triton's launch of the library's own code bit for bit and the
JIT's SASS differs, the line says "SASS differs" and counts as passed (as
long as both results pass the reference); --strict-bits counts it as failed.
Anything else is a failure.

Launches with an empty grid (n = 0, rows = 0, no requests) must return
KPACK_SUCCESS and write nothing.

Aligned variants (`divisibility: auto` in the manifest): the launcher runs
the aligned variant when every auto value is a multiple of 16 (pointers
16-byte aligned), else the unhinted build.  Each case line says which one
the values select ("[aligned variant]" / "[unhinted]"); the JIT makes the
same choice for those params, so the bits must match either way.  Every
specialization with auto params must have cases for both variants (strides
that are multiples of 16, and odd ones like 50257 or misaligned pointers),
and the first launch of each variant must load exactly one more library
(kpack_get_load_counts): the variants are separate and loaded lazily.

i32 variants (`width: auto`): the launcher runs the i32 build when every
width: auto value fits in 32 bits, as the JIT passes such values, else the
i64 build; the case line says "i32" or "i64".  Kernels whose cases can
reach the i64 build cheaply (a huge ignore_index, a row stride past 2^31
elements) must run both; for the others (n or num_boxes past 2^31 would
need tens of GiB and minutes of CPU reference) a note says so.

Output: one PASS/FAIL line per specialization and size, then
"N passed, M failed".  Exit 0 when all pass, 1 on any failure, 77 (Meson's
"skipped") without torch, triton, pyyaml or a CUDA device.
"""
import argparse
import ast
import ctypes
import importlib.util
import itertools
import os
import random
import re
import struct
import sys
import time
import traceback
import zlib

SKIP = 77
DEVICE = "cuda"
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.dirname(os.path.dirname(HERE))

# Guard bytes before and after every output buffer (a multiple of 16, so the
# output itself stays 16-byte aligned unless a case asks otherwise).
GUARD = 256
POISON = 0xFF

# Manifest scalar types: size in bytes, ctypes type, Triton spelling.
SCALARS = {
    "i8": (1, ctypes.c_int8, "i8"), "i16": (2, ctypes.c_int16, "i16"),
    "i32": (4, ctypes.c_int32, "i32"), "i64": (8, ctypes.c_int64, "i64"),
    "u8": (1, ctypes.c_uint8, "u8"), "u16": (2, ctypes.c_uint16, "u16"),
    "u32": (4, ctypes.c_uint32, "u32"), "u64": (8, ctypes.c_uint64, "u64"),
    "f32": (4, ctypes.c_float, "fp32"), "f64": (8, ctypes.c_double, "fp64"),
    "f16": (2, None, "fp16"), "bf16": (2, None, "bf16"),
    "bool": (1, ctypes.c_bool, "i1"),
}
TRITON_OPTIONS = ("num_warps", "num_stages")
# Triton entries whose only width: auto value is an element count: reaching
# their i64 build takes more than 2^31 elements per buffer (tens of GiB and
# minutes of reference), so their cases stay in i32 and a note says so.
WIDE_CASES_TOO_COSTLY = ("vector_add", "giou_loss_fwd")
# Kernels whose bit parity with the JIT bench/compute/kpack_compute_bench.py
# checks (host tensor descriptors, Triton's global scratch): cross-checked
# against the library here, not launched.
COMPUTE_BENCH_KERNELS = ("matmul_triton", "attention_triton")


class ParityError(Exception):
    pass


class Fatal(Exception):
    """The CUDA context is gone (a device fault); nothing more can run."""


def skip(message):
    print("SKIP: " + message)
    sys.stdout.flush()
    sys.exit(SKIP)


# ---- Manifests --------------------------------------------------------------

class Constexpr:
    def __init__(self, name, kind, values, tag):
        self.name, self.kind, self.values, self.tag = name, kind, values, tag


class Param:
    def __init__(self, name, type_text, divisibility, width=None):
        self.name = name
        self.type_text = type_text
        # `width: auto`: an i32 build too, run when the value fits (kpack's Specialization::TypeOf).
        self.width_auto = width == "auto"
        # 16 for `divisibility: 16` and `auto`; auto: hinted only in the aligned variant.
        self.auto = divisibility == "auto"
        self.divisibility = 16 if divisibility in (16, "auto") else 0
        m = re.match(r"^\s*(const\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(\*)?\s*$", type_text)
        if not m:
            raise ParityError("cannot parse param type '%s' of '%s'" % (type_text, name))
        self.is_const = bool(m.group(1))
        self.base = m.group(2)          # a scalar, or a dtype constexpr's name
        self.is_pointer = bool(m.group(3))


class Kernel:
    def __init__(self, package, path, doc):
        self.manifest_path = path
        self.name = doc["kernel"]
        self.language = doc.get("language", "cuda")
        self.entry = doc.get("entry")
        src = doc.get("source")
        self.source_path = os.path.normpath(os.path.join(os.path.dirname(path), src)) if src else None
        self.constexprs = []
        for c in doc.get("constexprs") or []:
            kind = c["type"]
            if kind not in ("dtype", "int", "bool"):
                raise ParityError("%s: unknown constexpr type '%s'" % (path, kind))
            tag = c.get("tag")
            if tag is None:
                tag = "" if kind == "dtype" else c["name"].lower()
            values = [self.normalize(kind, v) for v in c["values"]]
            self.constexprs.append(Constexpr(c["name"], kind, values, str(tag)))
        self.params = [Param(p["name"], str(p["type"]), p.get("divisibility", 0), p.get("width"))
                       for p in doc.get("params") or []]
        self.exclusions = []
        for ex in doc.get("exclude") or []:
            match = {}
            for key, value in ex.items():
                c = self.constexpr(key)
                if c is None:
                    raise ParityError("%s: exclusion names unknown constexpr '%s'" % (path, key))
                match[key] = self.normalize(c.kind, value)
            self.exclusions.append(match)
        launch = doc.get("launch") or {}
        self.grid = [str(g) for g in launch.get("grid") or []]
        self.archs = doc.get("archs") or package.archs
        self.module = None  # the imported Triton source, on first use

    @staticmethod
    def normalize(kind, value):
        if kind == "dtype":
            return str(value)
        if kind == "bool":
            if not isinstance(value, bool):
                raise ParityError("bool constexpr value %r is not true/false" % (value,))
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParityError("int constexpr value %r is not an integer" % (value,))
        return value

    def constexpr(self, name):
        for c in self.constexprs:
            if c.name == name:
                return c
        return None

    def param(self, name):
        for p in self.params:
            if p.name == name:
                return p
        return None


class Package:
    def __init__(self, path):
        import yaml
        self.path = path
        with open(path) as f:
            doc = yaml.safe_load(f)
        self.name = doc["package"]
        self.prefix = doc.get("prefix", self.name)
        self.archs = doc.get("archs") or []
        self.kernels = []
        for rel in doc.get("kernels") or []:
            kpath = os.path.join(os.path.dirname(path), rel)
            with open(kpath) as f:
                self.kernels.append(Kernel(self, kpath, yaml.safe_load(f)))


class Spec:
    """One specialization: a kernel and one value per constexpr."""

    def __init__(self, package, kernel, values):
        self.kernel = kernel
        self.values = dict(zip([c.name for c in kernel.constexprs], values))
        parts = []
        for c, v in zip(kernel.constexprs, values):
            if c.kind == "dtype":
                parts.append(c.tag + v)
            elif c.kind == "bool":
                parts.append(c.tag if v else "no" + c.tag)
            else:
                parts.append(c.tag + (str(v) if v >= 0 else "m" + str(-v)))
        self.name = "_".join([kernel.name] + parts)
        self.launcher = package.prefix + "_" + self.name

    def dtype_of(self, base):
        """The manifest scalar a param base names: a dtype constexpr's value, or itself."""
        c = self.kernel.constexpr(base)
        if c is not None and c.kind == "dtype":
            return self.values[base]
        return base

    @property
    def dtype(self):
        for c in self.kernel.constexprs:
            if c.kind == "dtype":
                return self.values[c.name]
        return None

    @property
    def num_warps(self):
        return int(self.values.get("num_warps", 4))

    @property
    def num_stages(self):
        return int(self.values.get("num_stages", 3))

    @property
    def triton_constexprs(self):
        """tl.constexpr arguments: every constexpr but dtypes and compile options."""
        out = {}
        for c in self.kernel.constexprs:
            if c.kind == "dtype" or c.name in TRITON_OPTIONS:
                continue
            out[c.name] = bool(self.values[c.name]) if c.kind == "bool" else int(self.values[c.name])
        return out

    def triton_type(self, param, narrow=False):
        """The param's Triton type in the build; `narrow`: the i32 variant's."""
        scalar = "i32" if narrow and param.width_auto else self.dtype_of(param.base)
        return ("*" if param.is_pointer else "") + SCALARS[scalar][2]

    @property
    def has_variant(self):
        """Whether the specialization has an aligned variant (divisibility: auto)."""
        return any(p.auto for p in self.kernel.params)

    @property
    def has_narrow(self):
        """Whether it has i32 variants (width: auto)."""
        return any(p.width_auto for p in self.kernel.params)

    @property
    def builds(self):
        """Every build as (aligned, narrow): kpack's Specialization and its variants."""
        return [(a, n) for a in ((False, True) if self.has_variant else (False,))
                for n in ((False, True) if self.has_narrow else (False,))]

    def hinted(self, param, aligned):
        """Whether the build of this variant hints `param` (kpack's Specialization::Divisibility)."""
        return param.divisibility == 16 and (aligned or not param.auto)


def expand(package, kernel):
    """kpack's expansion: the cartesian product, last constexpr fastest, minus exclusions."""
    specs = []
    for values in itertools.product(*[c.values for c in kernel.constexprs]):
        assignment = dict(zip([c.name for c in kernel.constexprs], values))
        if any(all(assignment[k] == v and type(assignment[k]) is type(v) for k, v in ex.items())
               for ex in kernel.exclusions):
            continue
        specs.append(Spec(package, kernel, list(values)))
    return specs


# ---- Launch geometry: the manifest's expression language -------------------

def c_div(a, b):
    if b == 0:
        raise ParityError("division by zero in a launch expression")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_mod(a, b):
    return a - c_div(a, b) * b


def c_cdiv(a, b):
    q = c_div(a, b)
    return q + 1 if (a % b != 0 and (a > 0) == (b > 0)) else q


def eval_expr(text, spec, runtime):
    """Evaluates a grid expression as the generated launcher does (64-bit C)."""
    names = {}
    for c in spec.kernel.constexprs:
        if c.kind != "dtype":
            names[c.name] = int(spec.values[c.name])
    names.update({k: int(v) for k, v in runtime.items()})

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise ParityError("launch expression '%s' names '%s', which has no value" % (text, node.id))
            return names[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, ast.Div):
                return c_div(a, b)
            if isinstance(node.op, ast.Mod):
                return c_mod(a, b)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            fn = node.func.id
            if fn == "sizeof" and len(node.args) == 1 and isinstance(node.args[0], ast.Name):
                return SCALARS[spec.dtype_of(node.args[0].id)][0]
            args = [ev(a) for a in node.args]
            if fn == "cdiv" and len(args) == 2:
                return c_cdiv(*args)
            if fn == "min" and len(args) == 2:
                return min(args)
            if fn == "max" and len(args) == 2:
                return max(args)
        raise ParityError("unsupported launch expression '%s'" % text)

    value = ev(ast.parse(text.strip(), mode="eval"))
    if not -(1 << 63) <= value < (1 << 63):
        raise ParityError("launch expression '%s' overflows 64 bits" % text)
    return value


def grid_of(spec, runtime):
    return tuple(eval_expr(g, spec, runtime) for g in spec.kernel.grid)


# ---- The library ------------------------------------------------------------

class SpecInfo(ctypes.Structure):
    _fields_ = [("kernel", ctypes.c_char_p), ("name", ctypes.c_char_p), ("archs", ctypes.c_char_p),
                ("ptx_archs", ctypes.c_char_p), ("build_mode", ctypes.c_char_p),
                ("fatbin_size", ctypes.c_uint64)]


class Library:
    def __init__(self, path, prefix):
        self.path = path
        self.lib = ctypes.CDLL(os.path.abspath(path))
        self.prefix = prefix
        num = getattr(self.lib, prefix + "_num_specializations")
        num.restype = ctypes.c_size_t
        num.argtypes = []
        info = getattr(self.lib, prefix + "_specialization_info")
        info.restype = ctypes.c_int
        info.argtypes = [ctypes.c_size_t, ctypes.POINTER(SpecInfo)]
        self.lib.kpack_status_name.restype = ctypes.c_char_p
        self.lib.kpack_status_name.argtypes = [ctypes.c_int]
        self.lib.kpack_last_error_detail.restype = ctypes.c_char_p
        self.lib.kpack_last_error_detail.argtypes = []
        self.specs = []
        for i in range(num()):
            si = SpecInfo()
            st = info(i, ctypes.byref(si))
            if st != 0:
                raise ParityError("%s_specialization_info(%d) returned %s: %s"
                                  % (prefix, i, self.status_name(st), self.detail()))
            self.specs.append({k: (getattr(si, k).decode() if isinstance(getattr(si, k), bytes) else getattr(si, k))
                               for k, _ in SpecInfo._fields_})
        self._bytes = None

    def status_name(self, st):
        return self.lib.kpack_status_name(st).decode()

    def detail(self):
        return self.lib.kpack_last_error_detail().decode(errors="replace")

    def launcher(self, spec):
        fn = getattr(self.lib, spec.launcher)  # AttributeError when missing
        argtypes = [ctypes.c_void_p]
        for p in spec.kernel.params:
            if p.is_pointer:
                argtypes.append(ctypes.c_void_p)
            else:
                ctype = SCALARS[spec.dtype_of(p.base)][1]
                if ctype is None:
                    raise ParityError("%s: scalar param '%s' of type %s is not supported by this test"
                                      % (spec.name, p.name, p.type_text))
                argtypes.append(ctype)
        fn.argtypes = argtypes
        fn.restype = ctypes.c_int
        return fn

    @property
    def file_bytes(self):
        if self._bytes is None:
            with open(self.path, "rb") as f:
                self._bytes = f.read()
        return self._bytes


def cross_check(package, lib):
    """Both ways: the manifests' Triton specializations and the library's.
    Returns (specs, failures as (name, message)); a CUDA kernel's mismatch
    is only a note."""
    failures = []
    by_kernel = {}
    for s in lib.specs:
        by_kernel.setdefault(s["kernel"], []).append(s)
    known = set()
    triton_specs = []
    for k in package.kernels:
        known.add(k.name)
        expected = expand(package, k)
        got = by_kernel.get(k.name, [])
        want_names = [s.name for s in expected]
        got_names = [s["name"] for s in got]
        missing = [n for n in want_names if n not in got_names]
        extra = [n for n in got_names if n not in want_names]
        if k.language == "triton":
            # The compute-bound kernels (TMA descriptors, global scratch)
            # have their own parity run, with cuBLAS and SDPA beside it.
            if k.name not in COMPUTE_BENCH_KERNELS:
                triton_specs.extend(expected)
            for n in missing:
                failures.append((n, "in the manifests, not in the library %s" % lib.path))
            for n in extra:
                failures.append((n, "in the library, not in the manifests (stale library?)"))
            for s in expected:
                if s.name in got_names and not hasattr(lib.lib, s.launcher):
                    failures.append((s.name, "the library has no symbol %s" % s.launcher))
        elif missing or extra:
            print("note: CUDA kernel %s: library and manifests disagree (missing %s, extra %s)"
                  % (k.name, missing, extra))
    for name in sorted(set(by_kernel) - known):
        print("note: the library holds kernel '%s', which no manifest names" % name)
    return triton_specs, failures


# ---- Triton sources and compiles --------------------------------------------

def jit_function(kernel):
    """The @triton.jit entry of the kernel's source, imported as kpack's helper does."""
    if kernel.module is None:
        import triton
        sys.path.insert(0, os.path.dirname(os.path.abspath(kernel.source_path)))
        name = "kpack_parity_" + re.sub(r"\W", "_", kernel.name)
        spec = importlib.util.spec_from_file_location(name, kernel.source_path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        fn = getattr(module, kernel.entry, None)
        # (TRITON_INTERPRET=1 makes @triton.jit an InterpretedFunction.)
        if not isinstance(fn, triton.runtime.JITFunction) and type(fn).__name__ != "InterpretedFunction":
            raise ParityError("%s has no @triton.jit function '%s'" % (kernel.source_path, kernel.entry))
        kernel.module = module
    return getattr(kernel.module, kernel.entry)


_aot_cache = {}


def aot_compile(spec, arch, build=(False, False)):
    """The specialization's build `build` = (aligned, narrow) compiled exactly as
    compiler/triton_helper.py does for kpack."""
    aligned, narrow = build
    key = (spec.name, arch, aligned, narrow)
    if key not in _aot_cache:
        import triton
        from triton.backends.compiler import GPUTarget
        fn = jit_function(spec.kernel)
        signature, attrs = {}, {}
        for index, p in enumerate(fn.params):
            if p.is_constexpr:
                signature[p.name] = "constexpr"
                continue
            param = spec.kernel.param(p.name)
            if param is None:
                raise ParityError("%s: kernel parameter '%s' is not in the manifest" % (spec.name, p.name))
            signature[p.name] = spec.triton_type(param, narrow)
            if spec.hinted(param, aligned):
                attrs[(index,)] = [["tt.divisibility", 16]]
        target = GPUTarget("cuda", arch, 32)
        backend = triton.compiler.make_backend(target)
        options = backend.parse_options({"num_warps": spec.num_warps, "num_stages": spec.num_stages})
        src = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=spec.triton_constexprs, attrs=attrs)
        _aot_cache[key] = triton.compile(src, target=target, options=options.__dict__)
    return _aot_cache[key]


def elf_section(blob, wanted):
    """The bytes of section `wanted` of a 64-bit little-endian ELF (a cubin)."""
    if blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
        raise ParityError("not a 64-bit little-endian ELF")
    shoff = struct.unpack_from("<Q", blob, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    def header(i):
        return struct.unpack_from("<IIQQQQ", blob, shoff + i * shentsize)
    stroff = header(shstrndx)[4]
    for i in range(shnum):
        name_off, _, _, _, off, size = header(i)
        start = stroff + name_off
        if blob[start:blob.index(b"\0", start)].decode() == wanted:
            return bytes(blob[off:off + size])
    raise ParityError("no section %s" % wanted)


def sass_text(compiled):
    """The kernel's machine code: the .text.<name> section of its cubin."""
    return elf_section(compiled.asm["cubin"], ".text." + compiled.name)


def describe_specialization(jit_kernel, spec, build):
    """How the JIT's specialization differs from the AOT build's, per runtime param."""
    try:
        src = jit_kernel.src
        names = list(src.signature.keys())
        diffs = []
        for index, name in enumerate(names):
            param = spec.kernel.param(name)
            if param is None:
                continue
            aot = spec.triton_type(param, build[1]) + ("/div16" if spec.hinted(param, build[0]) else "")
            if (index,) in src.constants and src.signature[name] == "constexpr":
                jit = "constexpr=%r" % (src.constants[(index,)],)
            else:
                attrs = src.attrs.get((index,), [])
                jit = src.signature[name] + ("/div16" if ["tt.divisibility", 16] in [list(a) for a in attrs] else "")
            if jit != aot:
                diffs.append("%s JIT %s vs AOT %s" % (name, jit, aot))
        return "; ".join(diffs) if diffs else "same signature and hints"
    except Exception as e:  # diagnostics only
        return "specialization unknown (%s)" % e


# ---- Kernel cases -----------------------------------------------------------
#
# A case gives the runtime values of the scalar params, the input tensors,
# and the outputs to allocate (numel, torch dtype, element offset); check()
# gets {name: view} of kpack's outputs and returns (errors, summary).

class Case:
    def __init__(self, label, scalars, inputs, outputs, check, zero=False):
        self.label, self.scalars, self.inputs, self.outputs = label, scalars, inputs, outputs
        self.check, self.zero = check, zero


def rtol_of(dtype):
    return {"f32": 1e-5, "f16": 1e-3, "bf16": 1e-2}[dtype]


def close_report(torch, what, got, want, rtol, atol, index_fmt=None):
    """|got - want| <= atol + rtol |want|, infinities exact, NaN never."""
    got = got.double().reshape(-1)
    want = want.double().reshape(-1)
    if got.numel() == 0:
        return [], ""
    inf = torch.isinf(got) | torch.isinf(want)
    nan = torch.isnan(got) | torch.isnan(want)
    err = (got - want).abs()
    tol = atol + rtol * want.abs()
    ok = torch.where(inf, got == want, err <= tol) & ~nan
    finite = ~inf & ~nan
    # The relative error where the relative term dominates the tolerance,
    # and the worst error as a fraction of the tolerance.
    rel = (err / want.abs().clamp_min(1e-300))[finite & (rtol * want.abs() >= atol) & (want != 0)]
    frac = (err / tol.clamp_min(1e-300))[finite]
    summary = "%s max rel err %.2e (rtol %.0e%s), worst %.2f of the tolerance" % (
        what, rel.max().item() if rel.numel() else 0.0, rtol, ", atol %.0e" % atol if atol >= 1e-20 else "",
        frac.max().item() if frac.numel() else 0.0)
    bad = (~ok).nonzero()
    if bad.numel() == 0:
        return [], summary
    i = bad[0].item()
    where = index_fmt(i) if index_fmt else "[%d]" % i
    return ["%s: %d of %d outside tolerance, first %s%s = %.9g, want %.9g"
            % (what, bad.numel(), got.numel(), what, where, got[i].item(), want[i].item())], summary


class Kinds:
    """Case generators, by Triton entry point."""

    def __init__(self, torch, gen, rng):
        self.torch, self.gen, self.rng = torch, gen, rng

    def tdtype(self, dtype):
        t = self.torch
        return {"f32": t.float32, "f16": t.float16, "bf16": t.bfloat16, "f64": t.float64, "i8": t.int8,
                "i16": t.int16, "i32": t.int32, "i64": t.int64, "u8": t.uint8, "bool": t.bool}[dtype]

    def uniform(self, shape, lo, hi):
        t = self.torch
        return t.rand(shape, generator=self.gen, device=DEVICE, dtype=t.float64) * (hi - lo) + lo

    # vector_add(x, y, out, n)
    def vector_add(self, spec):
        t, T = self.torch, self.tdtype(spec.dtype)
        cases = []
        for n in (1, 100003, (1 << 21) + 5):
            x = self.uniform(n, -4, 4).to(T)
            y = self.uniform(n, -4, 4).to(T)

            def check(outs, x=x, y=y):
                want = (x.double() + y.double()).to(T)
                return close_report(t, "out", outs["out"], want, rtol_of(spec.dtype), 1e-30)
            cases.append(Case("n=%d" % n, {"n": n}, {"x": x, "y": y}, {"out": (n, T, 0)}, check))
        # A slice one element in: x is not 16-byte aligned (the unhinted build).
        n = 100003
        x = self.uniform(n + 1, -4, 4).to(T)[1:]
        y = self.uniform(n, -4, 4).to(T)

        def check(outs, x=x, y=y):
            want = (x.double() + y.double()).to(T)
            return close_report(t, "out", outs["out"], want, rtol_of(spec.dtype), 1e-30)
        cases.append(Case("n=%d, x off 16-byte alignment" % n, {"n": n}, {"x": x, "y": y}, {"out": (n, T, 0)},
                          check))
        e = t.zeros(16, dtype=T, device=DEVICE)
        cases.append(Case("n=0", {"n": 0}, {"x": e, "y": e}, {"out": (16, T, 0)}, None, zero=True))
        return cases

    # giou_loss_fwd(preds, targets, giou, valid, num_boxes)
    def giou_loss_fwd(self, spec):
        t, T = self.torch, self.tdtype(spec.dtype)
        cases = []
        # (boxes, element offset of `valid`): offset 1 is off 16-byte alignment.
        for n, valid_offset in ((1, 0), (1001, 0), (1001, 1), ((1 << 20) + 1, 0)):
            u = lambda *shape: self.uniform(shape, 0, 1)
            l, top = u(n) * 120 - 20, u(n) * 120 - 20
            tgt = t.stack([l, top, l + 0.5 + 59.5 * u(n), top + 0.5 + 59.5 * u(n)], 1)
            tgt = tgt * (u(n) > 0.15).double()[:, None]           # else an all-zero padding target
            pl, pt = u(n) * 120 - 20, u(n) * 120 - 20
            far = t.stack([pl, pt, pl + 0.5 + 59.5 * u(n), pt + 0.5 + 59.5 * u(n)], 1)
            near = tgt + u(n, 4) * 10 - 5
            pred = t.where((u(n) < 0.7)[:, None], near, far)
            preds, targets = pred.to(T).contiguous(), tgt.to(T).contiguous()

            def check(outs, preds=preds, targets=targets):
                p, q = preds.double(), targets.double()
                fmax, fmin = t.fmax, t.fmin
                area_p = (p[:, 2] - p[:, 0]) * (p[:, 3] - p[:, 1])
                area_t = (q[:, 2] - q[:, 0]) * (q[:, 3] - q[:, 1])
                zero = t.zeros_like(area_p)
                iw = fmax(fmin(p[:, 2], q[:, 2]) - fmax(p[:, 0], q[:, 0]), zero)
                ih = fmax(fmin(p[:, 3], q[:, 3]) - fmax(p[:, 1], q[:, 1]), zero)
                inter = iw * ih
                uni = area_p + area_t - inter
                iou = inter / fmax(uni, zero + 1e-5)
                ew = fmax(fmax(p[:, 2], q[:, 2]) - fmin(p[:, 0], q[:, 0]), zero)
                eh = fmax(fmax(p[:, 3], q[:, 3]) - fmin(p[:, 1], q[:, 1]), zero)
                enclose = ew * eh
                g = iou - (enclose - uni) / fmax(enclose, zero + 1e-5)
                ok = q[:, 3] > 0
                want_g = t.where(ok, g, zero)
                errors = []
                bad = (outs["valid"] != ok.to(t.uint8)).nonzero()
                if bad.numel():
                    i = bad[0].item()
                    errors.append("valid: %d of %d wrong, first valid[%d] = %d, want %d"
                                  % (bad.numel(), n, i, outs["valid"][i].item(), int(ok[i].item())))
                # giou is in [-1, 1]: the tolerance is relative to max(1, |giou|) (gpu_test.cc).
                e2, summary = close_report(t, "giou", outs["giou"], want_g, rtol_of(spec.dtype), rtol_of(spec.dtype))
                return errors + e2, summary + ", valid exact"
            cases.append(Case("boxes=%d%s" % (n, ", valid off 16-byte alignment" if valid_offset else ""),
                              {"num_boxes": n}, {"preds": preds, "targets": targets},
                              {"giou": (n, T, 0), "valid": (n, t.uint8, valid_offset)}, check))
        e = t.zeros(64, dtype=T, device=DEVICE)
        cases.append(Case("boxes=0", {"num_boxes": 0}, {"preds": e, "targets": e},
                          {"giou": (16, T, 0), "valid": (16, t.uint8, 0)}, None, zero=True))
        return cases

    # attention_mask_fill(q_len, kv_len, mask_offsets, mask, num_requests, max_q_len, max_kv_len)
    def attention_mask_fill(self, spec):
        t, T = self.torch, self.tdtype(spec.dtype)
        causal = bool(spec.values.get("CAUSAL"))
        rng = self.rng
        layouts = []
        layouts.append(("1 request 1x1", [1], [1], False, 0))
        q = [rng.randint(0, 20) for _ in range(9)] + [9, 3]
        kv = [rng.randint(0, 300) for _ in range(9)] + [4, 1]       # kv < q: fully masked rows
        layouts.append(("11 ragged requests, gaps, mask off 16-byte alignment", q, kv, True, 1))
        layouts.append(("prefill 1024x1024+300x1500+1x4097", [1024, 300, 1], [1024, 1500, 4097], False, 0))
        layouts.append(("70000 requests (> grid.y)", [1] * 69999 + [2], [3] * 70000, False, 0))
        cases = []
        for label, q, kv, gaps, offset in layouts:
            offs, total = [], 0
            for a, b in zip(q, kv):
                total += rng.randint(0, 9) if gaps else 0
                offs.append(total)
                total += max(a, 0) * max(b, 0)
            total += rng.randint(0, 9) if gaps else 0
            ql = t.tensor(q, dtype=t.int32, device=DEVICE)
            kl = t.tensor(kv, dtype=t.int32, device=DEVICE)
            mo = t.tensor(offs, dtype=t.int64, device=DEVICE)

            def check(outs, ql=ql, kl=kl, mo=mo, total=total):
                got = outs["mask"]
                ibits = {1: t.uint8, 2: t.int16, 4: t.int32}[got.element_size()]
                q64, k64 = ql.long().clamp_min(0), kl.long().clamp_min(0)
                ends = mo + q64 * k64
                i = t.arange(total, device=DEVICE, dtype=t.int64)
                r = (t.searchsorted(mo, i, right=True) - 1).clamp_min(0)
                covered = (i >= mo[r]) & (i < ends[r])
                local = i - mo[r]
                kr = k64[r].clamp_min(1)
                qi, ki = local // kr, local % kr
                allowed = ki <= k64[r] - q64[r] + qi if causal else t.ones_like(covered)
                value = t.where(allowed, t.zeros((), dtype=T, device=DEVICE),
                                t.full((), float("-inf"), dtype=T, device=DEVICE))
                want = t.where(covered, value.view(ibits), t.full((), -1, dtype=ibits, device=DEVICE))
                if POISON != 0xFF:
                    raise ParityError("the expected mask assumes 0xFF poison")
                bad = (got.view(ibits) != want).nonzero()
                summary = "mask exact (%d elements, %d covered)" % (total, int(covered.sum().item()))
                if bad.numel() == 0:
                    return [], summary
                j = bad[0].item()
                kind = "untouched gap" if not covered[j] else ("allowed" if allowed[j] else "masked")
                bits = (1 << (8 * got.element_size())) - 1
                return ["mask: %d of %d wrong, first mask[%d] = 0x%x, want 0x%x (%s)"
                        % (bad.numel(), total, j, got.view(ibits)[j].item() & bits, want[j].item() & bits,
                           kind)], summary
            scalars = {"num_requests": len(q), "max_q_len": max(q), "max_kv_len": max(kv)}
            cases.append(Case(label, scalars, {"q_len": ql, "kv_len": kl, "mask_offsets": mo},
                              {"mask": (total, T, offset)}, check))
        z32 = t.zeros(4, dtype=t.int32, device=DEVICE)
        z64 = t.zeros(4, dtype=t.int64, device=DEVICE)
        cases.append(Case("0 requests", {"num_requests": 0, "max_q_len": 0, "max_kv_len": 0},
                          {"q_len": z32, "kv_len": z32, "mask_offsets": z64}, {"mask": (64, T, 0)}, None,
                          zero=True))
        return cases

    # softmax(inp, out, rows, cols, in_row_stride, out_row_stride)
    def softmax(self, spec):
        t, T = self.torch, self.tdtype(spec.dtype)
        cases = []
        # Aligned strides (multiples of 16) and odd ones, e.g. a vocab of 50257;
        # out_off shifts `out` off 16-byte alignment with aligned strides.
        for rows, cols, in_pad, out_pad, neg_inf, out_off in (
                (1, 1, 0, 0, 0.0, 0), (37, 1000, 3, 1, 0.3, 0), (160, 8192, 0, 0, 0.0, 0),
                (3, 20011, 2, 5, 0.0, 0), (33, 1008, 16, 0, 0.1, 0), (4, 50257, 0, 0, 0.0, 0),
                (16, 4096, 0, 0, 0.0, 1)):
            sin, sout = cols + in_pad, cols + out_pad
            x = self.uniform((rows, sin), -8, 8)
            if neg_inf > 0:
                drop = self.uniform((rows, sin), 0, 1) < neg_inf
                drop[:, 0] = False                                    # keep column 0 finite
                x = x.masked_fill(drop, float("-inf"))
            nin, nout = (rows - 1) * sin + cols, (rows - 1) * sout + cols
            inp = x.to(T).reshape(-1)[:nin].contiguous()

            def check(outs, inp=inp, rows=rows, cols=cols, sin=sin, sout=sout, nout=nout):
                xs = inp.as_strided((rows, cols), (sin, 1)).double()
                want = t.softmax(xs, dim=1)
                got = outs["out"]
                atol = 2.0 ** -24 if spec.dtype == "f16" else 0.0    # f16 subnormals
                errors, summary = close_report(t, "out", got.as_strided((rows, cols), (sout, 1)), want,
                                               rtol_of(spec.dtype), atol,
                                               lambda i: "[%d, %d]" % (i // cols, i % cols))
                ibits = {2: t.int16, 4: t.int32}[got.element_size()]
                pad = (t.arange(nout, device=DEVICE) % sout) >= cols
                touched = (pad & (got.view(ibits) != -1)).nonzero()
                if touched.numel():
                    j = touched[0].item()
                    errors.append("wrote %d padding elements between output rows, first out[%d, %d]"
                                  % (touched.numel(), j // sout, j % sout))
                return errors, summary
            label = "rows=%d cols=%d strides=(%d,%d)%s%s" % (rows, cols, sin, sout, " with -inf" if neg_inf else "",
                                                             ", out off 16-byte alignment" if out_off else "")
            cases.append(Case(label, {"rows": rows, "cols": cols, "in_row_stride": sin, "out_row_stride": sout},
                              {"inp": inp}, {"out": (nout, T, out_off)}, check))
        cases.append(self.softmax_wide(spec))
        e = t.zeros(1000, dtype=T, device=DEVICE)
        cases.append(Case("rows=0", {"rows": 0, "cols": 1000, "in_row_stride": 1000, "out_row_stride": 1000},
                          {"inp": e}, {"out": (1000, T, 0)}, None, zero=True))
        return cases

    def softmax_wide(self, spec):
        """Two rows 2^31 + 16 elements apart: the stride does not fit in 32
        bits, so the launcher runs the i64 build (and the JIT an i64
        stride).  Only the rows are filled; the gap stays unwritten."""
        t, T = self.torch, self.tdtype(spec.dtype)
        rows, cols, sin = 2, 1000, (1 << 31) + 16
        inp = t.empty((rows - 1) * sin + cols, dtype=T, device=DEVICE)
        x = self.uniform((rows, cols), -8, 8).to(T)
        inp[:cols] = x[0]
        inp[sin:sin + cols] = x[1]

        def check(outs):
            want = t.softmax(x.double(), dim=1)
            return close_report(t, "out", outs["out"].view(rows, cols), want, rtol_of(spec.dtype),
                                2.0 ** -24 if spec.dtype == "f16" else 0.0,
                                lambda i: "[%d, %d]" % (i // cols, i % cols))
        return Case("rows=2 cols=1000 strides=(2^31+16,1000), 64-bit stride",
                    {"rows": rows, "cols": cols, "in_row_stride": sin, "out_row_stride": cols},
                    {"inp": inp}, {"out": (rows * cols, T, 0)}, check)

    # cross_entropy_fwd(logits, targets, loss, rows, vocab, row_stride, ignore_index)
    def cross_entropy_fwd(self, spec):
        t, T = self.torch, self.tdtype(spec.dtype)
        cases = []
        # Aligned vocab and stride (32000, 4096 + 16) and odd ones (50257, 128256 + 5).
        # An ignore_index below -2^31 makes the launcher run the i64 build
        # (width: auto), with aligned and odd strides.
        for rows, vocab, pad, ignore_index in (
                (1, 1, 0, -100), (7, 1000, 3, -100), (9, 128256, 5, -100), (40, 32000, 0, -100),
                (6, 50257, 0, -100), (8, 4096, 16, -100), (12, 32000, 0, -(1 << 40)), (5, 50257, 0, -(1 << 40))):
            stride = vocab + pad
            n = (rows - 1) * stride + vocab
            logits = self.uniform(n, -8, 8).to(T)
            tg = (self.uniform(rows, 0, 1) * vocab).long().clamp_(0, vocab - 1)
            ignored = self.uniform(rows, 0, 1) < 0.2
            ignored[0] = False
            tg = t.where(ignored, t.full_like(tg, ignore_index), tg)

            def check(outs, logits=logits, tg=tg, rows=rows, vocab=vocab, stride=stride, ignore_index=ignore_index):
                xs = logits.as_strided((rows, vocab), (stride, 1)).double()
                lse = t.logsumexp(xs, dim=1)
                xt = xs.gather(1, tg.clamp(0, vocab - 1)[:, None])[:, 0]
                want = t.where(tg == ignore_index, t.zeros_like(lse), lse - xt)
                # The loss is f32 for every T, from exact inputs (gpu_test.cc).
                return close_report(t, "loss", outs["loss"], want, 1e-5, 1e-5)
            label = "rows=%d vocab=%d stride=%d%s" % (rows, vocab, stride, "" if ignore_index == -100 else
                                                      " ignore_index=%d" % ignore_index)
            cases.append(Case(label, {"rows": rows, "vocab": vocab, "row_stride": stride,
                                      "ignore_index": ignore_index},
                              {"logits": logits, "targets": tg}, {"loss": (rows, t.float32, 0)}, check))
        e = t.zeros(64, dtype=T, device=DEVICE)
        z = t.zeros(4, dtype=t.int64, device=DEVICE)
        cases.append(Case("rows=0", {"rows": 0, "vocab": 64, "row_stride": 64, "ignore_index": -100},
                          {"logits": e, "targets": z}, {"loss": (16, t.float32, 0)}, None, zero=True))
        return cases


# ---- Running ------------------------------------------------------------------

class Runner:
    def __init__(self, args, package, lib, torch):
        self.args, self.package, self.lib, self.torch = args, package, lib, torch
        self.passed = self.failed = 0
        self.sass_differs = []
        self.wide_unreached = []  # specs whose i64 build no case reaches (WIDE_CASES_TOO_COSTLY)
        self.cc = None
        self.loaded = set()      # (spec name, build) launched through kpack so far
        self.variants = {}       # spec name -> set of builds (aligned, narrow) its cases ran
        self.load_counts = lib.lib.kpack_get_load_counts
        self.load_counts.restype = None
        self.load_counts.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64)]

    def libraries_loaded(self):
        n = ctypes.c_uint64(0)
        self.load_counts(ctypes.byref(n), None)
        return n.value

    def variant_of(self, spec, case, outs):
        """The build (aligned, narrow) the launcher will run: the JIT's tests."""
        aligned = spec.has_variant
        narrow = spec.has_narrow
        for p in spec.kernel.params:
            if p.is_pointer:
                tensor = case.inputs[p.name] if p.name in case.inputs else outs[p.name][1]
                value = tensor.data_ptr()
            else:
                value = case.scalars[p.name]
            if p.auto and value % 16 != 0:
                aligned = False
            if p.width_auto and not -(1 << 31) <= value < (1 << 31):
                narrow = False
        return (aligned, narrow)

    def case_name(self, spec, case, build):
        words = []
        if spec.has_variant:
            words.append("aligned" if build[0] else "unhinted")
        if spec.has_narrow:
            words.append("i32" if build[1] else "i64")
        return "%s %s%s" % (spec.name, case.label, " [%s]" % " ".join(words) if words else "")

    def report(self, ok, name, message):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + message) if message else ""))
        sys.stdout.flush()

    def sync(self, what):
        try:
            self.torch.cuda.synchronize()
        except Exception as e:
            raise Fatal("%s: %s" % (what, e))

    def alloc_outputs(self, case):
        t = self.torch
        outs = {}
        for name, (numel, dtype, offset) in case.outputs.items():
            es = t.empty(0, dtype=dtype).element_size()
            raw = t.full((2 * GUARD + (offset + numel) * es,), POISON, dtype=t.uint8, device=DEVICE)
            start = GUARD + offset * es
            outs[name] = (raw, raw[start:start + numel * es].view(dtype))
        return outs

    def guards_touched(self, case, outs):
        """Names of outputs with a byte outside [0, numel) that lost its poison."""
        bad = []
        for name, (numel, dtype, offset) in case.outputs.items():
            raw, view = outs[name]
            start = GUARD + offset * view.element_size()
            end = start + numel * view.element_size()
            if bool((raw[:start] != POISON).any()) or bool((raw[end:] != POISON).any()):
                bad.append(name)
        return bad

    def ordered_values(self, spec, case, outs, for_triton):
        values = []
        for p in spec.kernel.params:
            if p.name in case.scalars:
                v = case.scalars[p.name]
                values.append(v if for_triton else None)
            elif p.name in case.inputs:
                values.append(case.inputs[p.name])
            elif p.name in outs:
                values.append(outs[p.name][1])
            else:
                raise ParityError("the %s case gives no value for param '%s'" % (spec.kernel.entry, p.name))
        return values

    def launch_kpack(self, spec, fn, case, outs):
        t = self.torch
        args = [ctypes.c_void_p(t.cuda.current_stream().cuda_stream)]
        for p in spec.kernel.params:
            if p.is_pointer:
                tensor = case.inputs[p.name] if p.name in case.inputs else outs[p.name][1]
                args.append(ctypes.c_void_p(tensor.data_ptr()))
            else:
                args.append(SCALARS[spec.dtype_of(p.base)][1](case.scalars[p.name]))
        st = fn(*args)
        if st != 0:
            return "%s returned %s: %s" % (spec.launcher, self.lib.status_name(st), self.lib.detail())
        self.sync("after %s" % spec.launcher)
        return None

    def launch_jit(self, spec, case, grid, outs):
        fn = jit_function(spec.kernel)
        values = self.ordered_values(spec, case, outs, True)
        kernel = fn[grid](*values, num_warps=spec.num_warps, num_stages=spec.num_stages, **spec.triton_constexprs)
        self.sync("after the Triton JIT launch of %s" % spec.name)
        return kernel

    def launch_aot_through_triton(self, spec, case, grid, outs, compiled):
        """The library's code (compiled as kpack did), launched by Triton's launcher."""
        fn = jit_function(spec.kernel)
        values = self.ordered_values(spec, case, outs, True)
        constexprs = spec.triton_constexprs
        by_name = dict(zip([p.name for p in spec.kernel.params], values))
        all_args = [constexprs[p.name] if p.is_constexpr else by_name[p.name] for p in fn.params]
        g3 = tuple(grid) + (1,) * (3 - len(grid))
        compiled[g3](*all_args)
        self.sync("after the Triton launch of the AOT build of %s" % spec.name)

    def bit_diffs(self, case, a, b):
        """{output: elements whose bits differ} for each output whose raw buffer
        (guard bytes included) differs; 0 elements means only guard bytes differ."""
        t = self.torch
        diffs = {}
        for name in case.outputs:
            ra, va = a[name]
            rb, vb = b[name]
            if t.equal(ra, rb):
                continue
            ibits = {1: t.uint8, 2: t.int16, 4: t.int32, 8: t.int64}[va.element_size()]
            diffs[name] = int((va.view(ibits) != vb.view(ibits)).sum().item())
        return diffs

    def fmt_diffs(self, case, diffs):
        return ", ".join("%s: %d of %d elements%s" % (n, d, case.outputs[n][0], "" if d else " (guard bytes)")
                         for n, d in diffs.items())

    def run_zero(self, spec, fn, case):
        name = "%s %s" % (spec.name, case.label)
        grid = grid_of(spec, case.scalars)
        if all(g > 0 for g in grid):
            self.report(False, name, "test bug: grid %s is not empty" % (grid,))
            return
        outs = self.alloc_outputs(case)
        self.sync("before %s" % spec.launcher)
        err = self.launch_kpack(spec, fn, case, outs)
        if err:
            self.report(False, name, err)
            return
        touched = [n for n, (raw, _) in outs.items() if bool((raw != POISON).any())]
        if touched:
            self.report(False, name, "KPACK_SUCCESS but wrote into %s" % ", ".join(touched))
        else:
            self.report(True, name, "grid %s: KPACK_SUCCESS, nothing written" % (grid,))

    def check_result(self, case, outs, who):
        errors = []
        bad_guards = self.guards_touched(case, outs)
        if bad_guards:
            errors.append("%s wrote outside %s" % (who, ", ".join(bad_guards)))
        e2, summary = case.check({n: v for n, (_, v) in outs.items()})
        return errors + ["%s %s" % (who, e) for e in e2], summary

    def run_case(self, spec, fn, case):
        grid = grid_of(spec, case.scalars)
        out_k = self.alloc_outputs(case)
        build = self.variant_of(spec, case, out_k)
        name = self.case_name(spec, case, build)
        self.variants.setdefault(spec.name, set()).add(build)
        self.sync("before %s" % spec.launcher)
        before = self.libraries_loaded()
        err = self.launch_kpack(spec, fn, case, out_k)
        if err:
            self.report(False, name, err)
            return
        # Lazy and separate: the first launch of a variant loads one library, later ones none.
        first = (spec.name, build) not in self.loaded
        self.loaded.add((spec.name, build))
        loaded = self.libraries_loaded() - before
        if loaded != (1 if first else 0):
            self.report(False, name, "the launch loaded %d libraries; the %s launch of this variant should "
                        "load %d" % (loaded, "first" if first else "a later", 1 if first else 0))
            return
        out_j = self.alloc_outputs(case)
        self.sync("before the Triton JIT launch")
        try:
            jit_kernel = self.launch_jit(spec, case, grid, out_j)
        except Fatal:
            raise
        except Exception as e:
            self.report(False, name, "the Triton JIT launch failed: %s: %s" % (type(e).__name__, e))
            return

        errors, summary = self.check_result(case, out_k, "kpack")
        diffs = self.bit_diffs(case, out_k, out_j)
        if not diffs:
            self.report(not errors, name, "; ".join(errors) if errors else
                        "kpack == Triton JIT bit for bit; %s" % summary)
            return

        # The bits differ: find out whether the JIT compiled different code.
        verdict = self.diagnose(spec, case, grid, out_k, jit_kernel, build)
        j_errors, _ = self.check_result(case, out_j, "Triton JIT")
        message = "bits differ from the Triton JIT (%s); %s" % (self.fmt_diffs(case, diffs), verdict["text"])
        if verdict["sass_differs"] and not errors and not j_errors:
            self.sass_differs.append(name)
            ok = not self.args.strict_bits
            self.report(ok, name, "SASS differs: %s; %s" % (message, summary))
        else:
            self.report(False, name, "; ".join([message] + errors + j_errors))

    def diagnose(self, spec, case, grid, out_k, jit_kernel, build):
        try:
            if self.cc is None:
                major, minor = self.torch.cuda.get_device_capability()
                self.cc = major * 10 + minor
            compiled = aot_compile(spec, self.cc, build)
            aot_text = sass_text(compiled)
            jit_text = sass_text(jit_kernel)
            specialization = describe_specialization(jit_kernel, spec, build)
            if aot_text not in self.lib.file_bytes:
                return {"sass_differs": False,
                        "text": "cannot attribute it: compiling %s as kpack did does not reproduce the SASS in %s "
                                "(another Triton or ptxas than the build machine's?); JIT vs AOT: %s"
                                % (spec.name, self.lib.path, specialization)}
            out_a = self.alloc_outputs(case)
            self.sync("before the Triton launch of the AOT build")
            self.launch_aot_through_triton(spec, case, grid, out_a, compiled)
            a_diffs = self.bit_diffs(case, out_k, out_a)
            if a_diffs:
                return {"sass_differs": False,
                        "text": "kpack's launch of the library's SASS differs from Triton's launch of the same "
                                "SASS (%s): a launcher or runtime bug" % self.fmt_diffs(case, a_diffs)}
            if jit_text == aot_text:
                return {"sass_differs": False,
                        "text": "yet the JIT's SASS is the library's (nondeterminism, or the JIT launch "
                                "passed other values)"}
            return {"sass_differs": True,
                    "text": "kpack == Triton launching the library's SASS bit for bit; the JIT compiled other "
                            "SASS (%d vs %d bytes of .text; JIT vs AOT: %s)"
                            % (len(jit_text), len(aot_text), specialization)}
        except Fatal:
            raise
        except Exception as e:
            return {"sass_differs": False,
                    "text": "cannot attribute it: %s: %s" % (type(e).__name__, e)}

    def run_spec(self, spec, kinds):
        gen_fn = getattr(kinds, spec.kernel.entry, None)
        if gen_fn is None:
            self.report(False, spec.name, "no parity cases for Triton entry '%s' (add them to %s)"
                        % (spec.kernel.entry, os.path.basename(__file__)))
            return
        try:
            fn = self.lib.launcher(spec)
            cases = gen_fn(spec)
        except Fatal:
            raise
        except Exception as e:
            self.report(False, spec.name, "setup failed: %s: %s" % (type(e).__name__, e))
            return
        for case in cases:
            try:
                if case.zero:
                    self.run_zero(spec, fn, case)
                else:
                    self.run_case(spec, fn, case)
            except Fatal:
                raise
            except Exception as e:
                if "CUDA error" in str(e):  # e.g. an illegal address: the context is gone
                    raise Fatal("%s %s: %s" % (spec.name, case.label, e))
                self.report(False, "%s %s" % (spec.name, case.label),
                            "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc().rstrip()))
        seen = self.variants.get(spec.name, set())
        aligned_seen = {a for a, _ in seen}
        narrow_seen = {n for _, n in seen}
        if spec.has_variant and aligned_seen != {True, False}:
            self.report(False, spec.name, "the cases ran only the %s build; add cases for the other variant"
                        % ("aligned" if True in aligned_seen else "unhinted"))
        if spec.has_narrow and narrow_seen != {True, False}:
            if spec.kernel.entry in WIDE_CASES_TOO_COSTLY and narrow_seen == {True}:
                self.wide_unreached.append(spec.name)
            else:
                self.report(False, spec.name, "the cases ran only the %s build; add cases for the other width"
                            % ("i32" if True in narrow_seen else "i64"))


def list_mode(args, package, lib, specs, failures):
    passed = 0
    bad = {}
    for name, message in failures:
        bad.setdefault(name, []).append(message)
    for spec in specs:
        info = next((s for s in lib.specs if s["name"] == spec.name), None)
        geometry = "grid (%s), num_warps %d, num_stages %d" % (", ".join(spec.kernel.grid), spec.num_warps,
                                                                spec.num_stages)
        problems = bad.pop(spec.name, [])
        if not problems and args.check_aot:
            problems = check_aot(spec, info, lib)
        if problems:
            print("FAIL %s: %s" % (spec.name, "; ".join(problems)))
        else:
            passed += 1
            print("PASS %s -> %s %s [%s; %s; archs %s]"
                  % (spec.name, spec.launcher, spec.triton_constexprs, spec.dtype, geometry,
                     info["archs"] if info else "?"))
    for name, problems in bad.items():  # in the library only
        print("FAIL %s: %s" % (name, "; ".join(problems)))
    failed = len(specs) - passed + len(bad)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def check_aot(spec, info, lib):
    """Compiles the specialization as kpack did, for each arch the library has,
    and looks for its SASS in the library (no GPU needed)."""
    problems = []
    for arch in info["archs"].split(","):
        m = re.match(r"sm_(\d+)", arch)
        for build in spec.builds:
            words = (["aligned"] if build[0] else []) + (["i32"] if build[1] else [])
            what = arch + (" (%s variant)" % " ".join(words) if words else "")
            try:
                text = sass_text(aot_compile(spec, int(m.group(1)), build))
                if text not in lib.file_bytes:
                    problems.append("%s: the SASS of kpack's compile request is not in %s" % (what, lib.path))
            except Exception as e:
                problems.append("%s: %s: %s" % (what, type(e).__name__, e))
    return problems


def library_triton_versions(path):
    """The Triton versions the library's Triton fatbins were compiled with:
    kpack's fatbin identifiers end in ":triton-<version>" (compiler/pack.h
    FatbinIdent), and fatbinary stores them uncompressed."""
    with open(path, "rb") as f:
        data = f.read()
    return {m.group(1).decode() for m in
            re.finditer(rb"kpack:[^:\x00]+:[^:\x00]+:[^:\x00]+:(?:release|debug):triton-([0-9A-Za-z.+_-]+)", data)}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="libkernels_shared.so (the launchers, runtime and fatbins)")
    ap.add_argument("--root", default=DEFAULT_ROOT, help="the kpack checkout (default: this file's)")
    ap.add_argument("--package", default=None, help="package file (default: ROOT/manifests/kpack.yaml)")
    ap.add_argument("--seed", type=int, default=None, help="reproduce a run (default: fresh, printed)")
    ap.add_argument("--only", default=None, help="regular expression on specialization names")
    ap.add_argument("--list", action="store_true",
                    help="only enumerate and cross-check with the library (no GPU, no torch)")
    ap.add_argument("--check-aot", action="store_true",
                    help="with --list: compile each specialization as kpack did and find its SASS in the library")
    ap.add_argument("--strict-bits", action="store_true",
                    help="count 'SASS differs' (JIT specialized differently, bits differ) as a failure")
    args = ap.parse_args(argv[1:])

    if importlib.util.find_spec("yaml") is None:
        skip("pyyaml is not installed for %s" % sys.executable)
    package = Package(args.package or os.path.join(args.root, "manifests", "kpack.yaml"))
    try:
        lib = Library(args.lib, package.prefix)
    except (OSError, AttributeError, ParityError) as e:
        print("FAIL cannot use %s: %s" % (args.lib, e))
        print("0 passed, 1 failed")
        return 1
    # Bit parity, and --check-aot's SASS, hold only against the Triton that
    # compiled the library.
    built = library_triton_versions(args.lib)
    here = importlib.util.find_spec("triton") and __import__("triton").__version__
    if built and here and built != {here}:
        print("FAIL %s was built with Triton %s; this Python (%s) has Triton %s: run this script with the "
              "build's Python (Meson's -Dpython; PYTHONPATH may put another Triton first)"
              % (args.lib, ", ".join(sorted(built)), sys.executable, here))
        print("0 passed, 1 failed")
        return 1
    specs, failures = cross_check(package, lib)
    if args.only:
        specs = [s for s in specs if re.search(args.only, s.name)]
        failures = [f for f in failures if re.search(args.only, f[0])]
    print("%s: %d specializations, %d of them Triton; the manifests give %d Triton specializations"
          % (lib.path, len(lib.specs), sum(1 for s in lib.specs
                                           if s["kernel"] in {k.name for k in package.kernels
                                                              if k.language == "triton"}), len(specs)))
    if args.list:
        return list_mode(args, package, lib, specs, failures)

    try:
        import torch
    except ImportError as e:
        skip("torch is not installed for %s (%s)" % (sys.executable, e))
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        skip("torch %s sees no CUDA device" % torch.__version__)
    if os.environ.pop("TRITON_INTERPRET", "0") not in ("", "0"):
        print("note: TRITON_INTERPRET is set; unset it for this run (the parity is with Triton's compiled JIT)")
    try:
        import triton
    except ImportError as e:
        skip("triton is not installed for %s (%s)" % (sys.executable, e))

    seed = args.seed
    if seed is None and os.environ.get("KPACK_PARITY_SEED"):
        seed = int(os.environ["KPACK_PARITY_SEED"])
    if seed is None:
        seed = int.from_bytes(os.urandom(6), "little")
    props = torch.cuda.get_device_properties(0)
    print("seed %d (reproduce with --seed %d); device 0: %s (sm_%d%d); torch %s, triton %s, python %s"
          % (seed, seed, props.name, props.major, props.minor, torch.__version__, triton.__version__,
             sys.version.split()[0]))
    if not library_triton_versions(args.lib):
        print("note: %s does not record the Triton it was built with (kpack before issue 19); this is %s"
              % (args.lib, triton.__version__))
    sys.stdout.flush()

    runner = Runner(args, package, lib, torch)
    for name, message in failures:
        runner.report(False, name, message)
    # A specialization the library lacks has been reported; run the others.
    specs = [s for s in specs if s.name not in {name for name, _ in failures}]
    start = time.time()
    stream = torch.cuda.Stream()
    try:
        with torch.cuda.stream(stream):
            for spec in specs:
                seed_s = (seed ^ zlib.crc32(spec.name.encode())) & ((1 << 63) - 1)
                gen = torch.Generator(device=DEVICE)
                gen.manual_seed(seed_s)
                runner.run_spec(spec, Kinds(torch, gen, random.Random(seed_s)))
    except Fatal as e:
        print("FATAL %s (the CUDA context is lost; stopping)" % e)
        runner.failed += 1
    if runner.sass_differs:
        print("note: %d case(s) where the JIT compiled other SASS and the bits differ%s: %s"
              % (len(runner.sass_differs), " (failed: --strict-bits)" if args.strict_bits else
                 " (counted as passed: kpack matched Triton's launch of the library's SASS)",
                 ", ".join(runner.sass_differs)))
    if runner.wide_unreached:
        print("note: %d specialization(s) whose i64 build no case reaches (it needs more than 2^31 elements "
              "per buffer): %s" % (len(runner.wide_unreached), ", ".join(runner.wide_unreached)))
    print("time %.1f s" % (time.time() - start))
    print("%d passed, %d failed" % (runner.passed, runner.failed))
    sys.stdout.flush()
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
