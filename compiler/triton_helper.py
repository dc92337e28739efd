"""kpack's bridge to Triton's compiler, run by `kpack build` at build time only.

    python3 triton_helper.py version
    python3 triton_helper.py describe REQUEST.json OUT.json
    python3 triton_helper.py compile REQUEST.json OUT.cubin OUT.meta.json
    python3 triton_helper.py serve SOCKET [--idle SECONDS]

`describe` reads every Triton kernel of a package from its source, without
running its module (kpack_slice.py): the parameters as Triton sees them, the
autotune configs and key, the heuristics translated into kpack expressions,
the files read, and every construct that cannot be packaged, each at its
file:line:col.  The load pass merges that into the manifests.

`compile` compiles one (specialization, arch) unit: the request names the
source, the entry, the Triton signature of each runtime parameter, the
constexpr values, the divisibility hints, the compile options and the target
arch.  The kernel's JIT functions are built from source (or, with `load:
execute`, by running its module), the manifest and the kernel are checked to
agree on parameters, and the cubin and its metadata are written.  No GPU or
driver is needed.

`serve` is `compile` for many units: it imports Triton once (0.3-0.4 s of
CPU a process) and answers compile requests on a Unix socket, one client
at a time, each from a clean interpreter state (see serve below and
compiler/triton_server.h, its client).

Errors go to stderr as one line (plus Triton's own message) with exit code 1;
kpack prefixes them with the manifest position and the specialization.  The
compiler proper stays in C++: these files only do what needs Python.
"""
import importlib
import json
import linecache
import os
import resource
import socket
import sys
import sysconfig
import traceback
import types
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kpack_jit import KernelSlice, jit_keywords  # noqa: E402
from kpack_slice import SearchPath, SliceError, Slicer  # noqa: E402
from kpack_wrappers import describe_autotune, describe_heuristics, describe_params  # noqa: E402

# The Triton versions whose compile API and metadata this helper knows
# (docs/manifest.md, "Triton versions and the build's Python", says what
# differs between them).
SUPPORTED_TRITON = ("3.6", "3.7", "3.8", "3.9")


class HelperError(BaseException):
    """A failure the helper reports as one message.  A BaseException, as the
    SystemExit that fail() used to raise was: no `except Exception` on the
    way catches it.  main() prints it and exits 1; the server answers it."""

    def __init__(self, message):
        BaseException.__init__(self, message)
        self.message = message


def fail(message):
    raise HelperError(message)


def cpu_seconds():
    """User + system CPU of this process and the children it waited for
    (ptxas, which Triton runs)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


# CPU seconds spent inside triton.compile since the server last reset it.
COMPILE_CPU = [0.0]


def supported_range():
    return "%s to %s" % (SUPPORTED_TRITON[0], SUPPORTED_TRITON[-1])


def import_triton():
    """Triton, once its version is one this helper knows: every command
    refuses another, whose compile API or metadata may differ silently."""
    try:
        import triton  # noqa: F401
        from triton.backends.compiler import GPUTarget  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        fail("cannot import triton in %s (%s: %s)" % (sys.executable, type(e).__name__, e))
    triton = sys.modules["triton"]
    if ".".join(triton.__version__.split(".")[:2]) not in SUPPORTED_TRITON:
        fail("kpack supports Triton %s; found %s in %s" % (supported_range(), triton.__version__, sys.executable))
    return triton


def make_slicer(request):
    path = SearchPath(request.get("python_path", []), request.get("root")).with_source(request["source"])
    return Slicer(path, request.get("assume"))


def entry_slice(request):
    """(slicer, KernelSlice) of a request's entry, read from source."""
    slicer = make_slicer(request)
    module = slicer.module_for_file(request["source"], request.get("source_name"))
    return slicer, KernelSlice(slicer, module, request["entry"])


# ---- describe ----------------------------------------------------------------------------

def describe_kernel(request):
    out = {"errors": [], "inputs": []}
    try:
        slicer, ks = entry_slice(request)
    except (OSError, SyntaxError, UnicodeDecodeError) as e:
        out["errors"].append({"loc": "%s:%d:%d" % (request.get("source_name") or request["source"],
                                                   getattr(e, "lineno", 0) or 0, getattr(e, "offset", 0) or 0),
                              "message": "cannot read the kernel's source: %s" % e})
        return out
    try:
        fdef = ks.entry()
        keywords = jit_keywords(slicer, fdef)
    except SliceError as e:
        out["errors"].append({"loc": str(e.loc), "message": e.message})
        out["inputs"] = slicer.inputs
        return out
    dns = keywords.get("do_not_specialize") or []
    dnsoa = keywords.get("do_not_specialize_on_alignment") or []
    out["line"] = fdef.node.lineno
    try:
        out["params"] = describe_params(slicer, fdef, dns, dnsoa)
    except ValueError as e:
        out["errors"].append({"loc": str(fdef.module.loc(fdef.node)), "message": str(e)})
        out["params"] = []
    names = [p["name"] for p in out["params"]]
    for p in out["params"]:
        if "error" in p:  # Triton could not tell whether it is a tl.constexpr
            out["errors"].append({"loc": p["loc"], "message": "parameter '%s' of %s: %s; load: execute runs the "
                                  "kernel's module instead" % (p["name"], fdef.node.name, p["error"])})
    out["decorators"] = []
    for kind, dec in fdef.decorators:
        if kind == "autotune":
            autotune = describe_autotune(slicer, fdef, dec)
            if "key_error" in autotune:
                out["errors"].append({"loc": autotune["loc"], "message": "the autotune decorator of %s: %s"
                                      % (fdef.node.name, autotune["key_error"])})
            out["decorators"].append(dict(autotune, kind="autotune"))
        elif kind == "heuristics":
            out["decorators"].append({"kind": "heuristics", "loc": str(fdef.module.loc(dec)),
                                      "values": describe_heuristics(slicer, fdef, dec, names)})
    if request.get("load", "slice") == "slice":
        for e in ks.check():
            out["errors"].append({"loc": str(e.loc), "message": e.message})
    out["inputs"] = slicer.inputs
    return out


def describe(request_path, out_path):
    triton = import_triton()
    with open(request_path) as f:
        request = json.load(f)
    kernels = [describe_kernel(k) for k in request["kernels"]]
    with open(out_path, "w") as f:
        json.dump({"triton_version": triton.__version__, "kernels": kernels}, f, sort_keys=True)


# ---- compile -----------------------------------------------------------------------------

def execute_module(triton, request):
    """`load: execute`: runs the kernel's module, as the JIT does.  A module
    of a package is imported by name from the python path (its package's
    __init__ runs too, and line info names the installed files); a loose
    file runs from its own directory, so it can import its neighbours, with
    its code named `source_name` (root-relative, so the cubin does not
    depend on where the build runs)."""
    source, name = request["source"], request.get("source_name") or os.path.basename(request["source"])
    path = SearchPath(request.get("python_path", []), request.get("root")).with_source(source)
    qualname = path.qualname_of(source)
    try:
        if "." in qualname:
            sys.path[0:0] = path.dirs
            module = importlib.import_module(qualname)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(source)))
            module = types.ModuleType("kpack_triton_source")
            module.__file__ = os.path.abspath(source)
            with open(source) as f:
                text = f.read()
            # Triton reads the kernel's text back through inspect, which finds
            # it under `name` here (an mtime of None keeps checkcache from
            # dropping it).
            linecache.cache[name] = (len(text), None, text.splitlines(True), name)
            exec(compile(text, name, "exec"), module.__dict__)
    except Exception as e:
        fail("cannot import %s: %s: %s" % (source, type(e).__name__, e))
    fn = getattr(module, request["entry"], None)
    while fn is not None and not isinstance(fn, triton.runtime.JITFunction) and hasattr(fn, "fn"):
        fn = fn.fn  # an Autotuner or Heuristics wraps the JITFunction
    if not isinstance(fn, triton.runtime.JITFunction):
        fail("%s has no @triton.jit function named '%s'" % (source, request["entry"]))
    return fn, [os.path.abspath(source)]


def load_kernel(triton, request):
    """The entry's JITFunction, the files it was made from and every JIT
    function made (to place Triton's errors)."""
    if request.get("load", "slice") == "execute":
        fn, inputs = execute_module(triton, request)
        return fn, inputs, [fn]
    try:
        slicer, ks = entry_slice(request)
        return ks.build(), slicer.inputs, ks.functions()
    except SliceError as e:
        fail(str(e))


def where(error, functions):
    """'file:line:col: error: reason' of a Triton CompilationError, whose
    position is relative to the JIT function it stopped in (the entry or one
    it calls); None when it has no position."""
    node, src = getattr(error, "node", None), getattr(error, "src", None)
    if node is None or not hasattr(node, "lineno") or src is None:
        return None
    for f in functions:
        if getattr(f, "src", None) == src:
            reason = (getattr(error, "error_message", "") or "").strip().splitlines()
            return "%s:%d:%d: error: %s" % (f.fn.__code__.co_filename, f.starting_line_number + node.lineno - 1,
                                            node.col_offset + 1, reason[-1] if reason else type(error).__name__)
    return None


def bind_parameters(fn, request):
    """The manifest's constexprs must be tl.constexpr parameters of the
    kernel, and its params the kernel's runtime parameters in order.  A
    constexpr the manifest does not give takes its default from the
    signature, and a runtime parameter it does not list whose default is
    None is passed as None (a constexpr, as the JIT does).  Returns the
    constexpr values by name."""
    kernel_constexprs = [p.name for p in fn.params if p.is_constexpr]
    # Floats come as {"float": "1e-06"}: a JSON 3 would be Python's int 3.
    constexprs = {name: float(v["float"]) if isinstance(v, dict) else v for name, v in request["constexprs"].items()}
    for name in constexprs:
        if name not in kernel_constexprs:
            fail("manifest constexpr '%s' is not a tl.constexpr parameter of %s (its tl.constexpr parameters: %s)"
                 % (name, fn.__name__, ", ".join(kernel_constexprs) or "none"))
    listed = [p["name"] for p in request["params"]]
    runtime = []
    for p in fn.params:
        if p.is_constexpr and p.name not in constexprs:
            if not p.has_default:
                fail("%s's tl.constexpr parameter '%s' has no values in the manifest's constexprs and no default"
                     % (fn.__name__, p.name))
            constexprs[p.name] = p.default
        elif not p.is_constexpr and p.name not in listed and p.has_default and p.default is None:
            constexprs[p.name] = None
        elif not p.is_constexpr:
            runtime.append(p.name)
    if listed != runtime:
        fail("the manifest's params (%s) are not %s's runtime parameters in order (%s)"
             % (", ".join(listed), fn.__name__, ", ".join(runtime)))
    return constexprs


def compile_kernel(request_path, cubin_path, meta_path):
    triton = import_triton()
    with open(request_path) as f:
        request = json.load(f)
    from triton.backends.compiler import GPUTarget
    fn, inputs, functions = load_kernel(triton, request)
    constexprs = bind_parameters(fn, request)
    signature, attrs = {}, {}
    params = {p["name"]: p for p in request["params"]}
    for name, p in params.items():
        if p.get("equal_to_1"):
            constexprs[name] = 1  # as the JIT specializes an integer argument equal to 1
    for index, p in enumerate(fn.params):
        if p.name in constexprs:
            signature[p.name] = "constexpr"
            continue
        param = params[p.name]
        if param["triton_type"].startswith("tensordesc_im2col<"):
            fail("%s: parameter '%s' is an im2col tensor descriptor (%s), which kpack does not encode"
                 % (fn.__name__, p.name, param["triton_type"]))
        signature[p.name] = param["triton_type"]
        if param.get("divisibility") == 16:
            attrs[(index,)] = [["tt.divisibility", 16]]
    options = dict(request.get("options", {}))
    options["debug"] = bool(request.get("debug", False))
    # Always explicit: Triton's default comes from the environment
    # (TRITON_DEFAULT_FP_FUSION), and 3.9 warns when it is not given (its
    # default is to change in 3.10).
    options.setdefault("enable_fp_fusion", True)
    target = GPUTarget("cuda", int(request["arch"]), 32)
    try:
        backend = triton.compiler.make_backend(target)
        parsed = backend.parse_options(options)
        check_options(triton, fn, options, parsed, int(request["arch"]))  # a HelperError is not an Exception
        src = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
        started = cpu_seconds()
        try:
            compiled = triton.compile(src, target=target, options=parsed.__dict__)
        finally:
            COMPILE_CPU[0] += cpu_seconds() - started
    except Exception as e:
        # The kernel's own line first, as a compiler reports it, then
        # Triton's text (its excerpt of the source, with a caret).
        located = where(e, functions)
        fail("%sTriton failed to compile %s: %s: %s" % (located + "\n" if located else "", fn.__name__,
                                                        type(e).__name__, e))
    # Triton 3.9's TRITON_FORCE_DISABLE_FP_FUSION overrides even an explicit
    # request: a cubin other than the one asked for, under the same key.
    fused = getattr(compiled.metadata, "enable_fp_fusion", options["enable_fp_fusion"])
    if bool(fused) != bool(options["enable_fp_fusion"]):
        fail("%s: Triton compiled it with enable_fp_fusion=%s, not the %s kpack asked for: "
             "TRITON_FORCE_DISABLE_FP_FUSION is set in the environment (unset it, or give the kernel the option "
             "enable_fp_fusion: false)" % (fn.__name__, bool(fused), bool(options["enable_fp_fusion"])))
    write_outputs(triton, fn, compiled, request, inputs, cubin_path, meta_path)


def check_options(triton, fn, options, parsed, arch):
    """What parse_options does not say: it drops names its CUDAOptions does
    not have (they differ between versions), and the environment may
    override the arch (TRITON_OVERRIDE_ARCH).  Either would give a cubin
    other than the one asked for."""
    unknown = sorted(set(options) - set(parsed.__dataclass_fields__))
    if unknown:
        fail("%s: Triton %s has no compile option %s; it would ignore %s silently"
             % (fn.__name__, triton.__version__, ", ".join("'%s'" % u for u in unknown),
                "it" if len(unknown) == 1 else "them"))
    if getattr(parsed, "arch", "sm%d" % arch) != "sm%d" % arch:
        fail("%s: Triton would compile it for %s, not sm_%d: TRITON_OVERRIDE_ARCH is set in the environment "
             "(unset it)" % (fn.__name__, parsed.arch, arch))


# Triton's tensordesc_meta elem_type is the PTX tensormap enum, which
# equals CUtensorMapDataType but for these (TMA_DTYPE_DEVICE_TO_HOST).
DEVICE_TO_HOST_TMA_DTYPE = {8: 10, 9: 8, 10: 9}


def descriptor_layouts(fn, md):
    """The TMA layout Triton chose for each host tensor descriptor param, in
    order: what the launcher encodes its CUtensorMap with.  The box is
    Triton's block_size (cut to the swizzle span, and per CTA of a
    cluster), not the block the manifest gives."""
    layouts = []
    for i, d in enumerate(getattr(md, "tensordesc_meta", None) or []):
        if d.get("fp4_padded"):
            fail("%s: tensor descriptor %d is fp4-padded, which kpack does not encode" % (fn.__name__, i))
        # Triton 3.8 added is_im2col to every entry: an im2col CUtensorMap
        # has pixel-box corners and element strides kpack does not encode.
        if d.get("is_im2col"):
            fail("%s: tensor descriptor %d is an im2col descriptor, which kpack does not encode" % (fn.__name__, i))
        unknown = set(d) - {"swizzle", "elem_size", "elem_type", "block_size", "fp4_padded", "is_im2col"}
        if unknown:
            fail("%s: tensor descriptor %d has metadata kpack does not know (%s): this Triton is newer than "
                 "kpack supports" % (fn.__name__, i, ", ".join(sorted(unknown))))
        layouts.append({"data_type": DEVICE_TO_HOST_TMA_DTYPE.get(d["elem_type"], d["elem_type"]),
                        "elem_bytes": int(d["elem_size"]), "box": [int(b) for b in d["block_size"]],
                        "swizzle": int(d["swizzle"])})
    return layouts


def write_outputs(triton, fn, compiled, request, inputs, cubin_path, meta_path):
    md = compiled.metadata
    descriptors = [p for p in request["params"] if p["triton_type"].startswith("tensordesc<")]
    layouts = descriptor_layouts(fn, md)
    if len(layouts) != len(descriptors):
        fail("%s: Triton laid out %d tensor descriptors for the %d tensordesc params" % (fn.__name__, len(layouts),
                                                                                        len(descriptors)))
    meta = {
        "name": md.name,
        "shared": int(md.shared),
        "num_warps": int(md.num_warps),
        "num_stages": int(md.num_stages),
        "num_ctas": int(getattr(md, "num_ctas", 1) or 1),
        # Triton >= 3.3 appends global_scratch and profile_scratch pointers
        # to every kernel; the launcher passes the runtime's scratch (NULL
        # where a kernel needs none).  Sizes are per CTA.
        "hidden_pointer_params": 2,
        "global_scratch": [int(getattr(md, "global_scratch_size", 0) or 0),
                           int(getattr(md, "global_scratch_align", 1) or 1)],
        "profile_scratch": [int(getattr(md, "profile_scratch_size", 0) or 0),
                            int(getattr(md, "profile_scratch_align", 1) or 1)],
        "tensordesc": layouts,
        "triton_version": triton.__version__,
        # Every file the kernel was made from: the cache and Ninja rebuild
        # the unit when one changes.
        "inputs": sorted(set(inputs)),
    }
    with open(cubin_path, "wb") as f:
        f.write(compiled.asm["cubin"])
    with open(meta_path, "w") as f:
        json.dump(meta, f, sort_keys=True)


# Environment variables that may change what triton.compile produces:
# every TRITON_* (TRITON_PTXAS_PATH, TRITON_LIBDEVICE_PATH,
# TRITON_KERNEL_OVERRIDE, TRITON_F32_DEFAULT, ...) and LLVM's optimization
# switch, less the ones known to change only where files go or what is
# printed.  Set ones are part of `version`'s line, which kpack puts in every
# Triton unit's cache key and compiler-server identity: a build with another
# ptxas never reuses a cubin, and the inventory names the override.
CODEGEN_ENV_PREFIXES = ("TRITON_",)
CODEGEN_ENV_NAMES = ("DISABLE_LLVM_OPT", "DISABLE_MMA_V3", "DISABLE_MMA_V5")
NON_CODEGEN_ENV = frozenset((
    "TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR", "TRITON_BACKENDS_IN_TREE",
    "TRITON_PRINT_AUTOTUNING", "TRITON_INTERPRET", "TRITON_CACHE_MANAGER", "TRITON_REMOTE_CACHE_BACKEND",
    "TRITON_ALWAYS_COMPILE", "TRITON_STORE_BINARY_ONLY", "TRITON_KERNEL_DUMP",
    "TRITON_DUMP_PTXAS_LOG", "TRITON_PTXAS_VERBOSE"))


def codegen_environment():
    """`NAME=value` of each set variable that may change the code, sorted."""
    names = [n for n in os.environ
             if (n.startswith(CODEGEN_ENV_PREFIXES) or n in CODEGEN_ENV_NAMES) and n not in NON_CODEGEN_ENV]
    return ["%s=%s" % (n, os.environ[n]) for n in sorted(names)]


def version():
    triton = import_triton()
    print(" ".join(["triton %s python %d.%d.%d" % ((triton.__version__,) + tuple(sys.version_info[:3]))]
                   + codegen_environment()))


# ---- serve -------------------------------------------------------------------------------
#
# One server per job slot of a build (compiler/triton_server.h).  Every
# request must compile exactly as `compile` in a fresh process would: the
# cubin and metadata byte for byte, and an error word for word.  So each
# request runs in the client's directory, with the interpreter state a
# fresh process has after importing Triton restored afterwards: sys.path,
# sys.argv, os.environ, the warnings filters and their once-registries,
# linecache, and the modules the request imported (a kernel's package run
# by `load: execute`, the synthetic kpack_triton_source is never in
# sys.modules).  What stays loaded is Triton, the standard library and
# installed packages, whose import is what the server saves.  Triton's
# JITFunction caches live on the function objects, which each request
# makes anew.  Output on fds 1 and 2 (Python's and Triton's C++ side) is
# captured per request: it is the error text of a failed one.

def _installed_dirs():
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(sys.modules["triton"].__file__))))
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs)


def _installed(module, dirs):
    """Whether a module a request imported may stay: Triton's own lazily
    imported parts, builtins and anything installed; not the project's."""
    if module is None:
        return False
    name = getattr(module, "__name__", "") or ""
    if name == "triton" or name.startswith("triton."):
        return True
    path = getattr(module, "__file__", None)
    if path is None:
        spec = getattr(module, "__spec__", None)
        return spec is not None and spec.origin in ("built-in", "frozen")
    return os.path.realpath(path).startswith(dirs)


class CleanState:
    """Puts back, after a request, what a fresh process would have."""

    def __init__(self, installed_dirs):
        self.dirs = installed_dirs
        self.cwd = os.getcwd()
        self.path = list(sys.path)
        self.argv = list(sys.argv)
        self.environ = dict(os.environ)
        self.modules = set(sys.modules)
        self.lines = dict(linecache.cache)
        self.filters = list(warnings.filters)

    def restore(self):
        sys.path[:] = self.path
        sys.argv[:] = self.argv
        if dict(os.environ) != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        for name in set(sys.modules) - self.modules:
            if not _installed(sys.modules.get(name), self.dirs):
                del sys.modules[name]
        linecache.cache.clear()
        linecache.cache.update(self.lines)
        warnings.filters[:] = self.filters
        if hasattr(warnings, "_filters_mutated"):
            warnings._filters_mutated()  # "once" warnings show again, as in a new process
        importlib.invalidate_caches()
        os.chdir(self.cwd)


class Capture:
    """Sends fds 1 and 2 to one file while a request runs (interleaved, as
    the one-shot's pipe has them) and hands back what was written.  The file
    is SOCKET.out, so that what a compile printed before it crashed the
    process (an LLVM assertion, a stack dump) is there for the client."""

    def __init__(self, path):
        self.file = open(path, "w+b")
        self.saved = (os.dup(1), os.dup(2))

    def start(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.file.seek(0)
        self.file.truncate()
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)

    def stop(self):
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        self.file.seek(0)
        return self.file.read().decode("utf-8", "replace")


def serve_compile(message, capture, dirs):
    """Runs one compile request as `compile` would run it; the response."""
    state = CleanState(dirs)
    started, ok = cpu_seconds(), False
    COMPILE_CPU[0] = 0.0
    capture.start()
    try:
        os.chdir(message.get("cwd") or state.cwd)
        sys.argv[:] = [os.path.abspath(__file__), "compile", message["request"], message["cubin"], message["meta"]]
        compile_kernel(message["request"], message["cubin"], message["meta"])
        ok = True
    except HelperError as e:
        sys.stderr.write(e.message.rstrip() + "\n")
    except SystemExit as e:  # the kernel's module exited, as it would end `compile`
        ok = e.code in (None, 0)
        if isinstance(e.code, str):
            sys.stderr.write(e.code + "\n")
    except BaseException:  # a bug: the traceback `compile` would print
        traceback.print_exc()
    finally:
        output = capture.stop()
        state.restore()
    return {"ok": ok, "error": "" if ok else output, "cpu": cpu_seconds() - started, "compile_cpu": COMPILE_CPU[0]}


def serve_connection(conn, hello, capture, dirs):
    """Answers one client's requests; True when it asked the server to quit."""
    conn.sendall((json.dumps(hello) + "\n").encode())
    with conn.makefile("rb") as lines:
        for line in lines:
            message = json.loads(line)
            if message.get("op") == "quit":
                return True
            if message.get("op") == "compile":
                response = serve_compile(message, capture, dirs)
            else:
                response = {"ok": False, "error": "unknown op %r" % message.get("op"), "cpu": 0, "compile_cpu": 0}
            conn.sendall((json.dumps(response) + "\n").encode())
    return False


def serve(sock_path, idle):
    """Listens on sock_path until a client says quit or `idle` seconds pass
    without a connection (which ends a server whose kpack was killed).
    The socket is bound by its name in its own directory: a build
    directory's path may be longer than a socket address allows."""
    triton = import_triton()
    import triton.compiler  # noqa: F401  (what every compile needs, loaded once)
    from triton.backends.compiler import GPUTarget
    triton.compiler.make_backend(GPUTarget("cuda", 80, 32))  # imports the NVIDIA backend
    dirs = _installed_dirs()
    # Start-up: everything this process has run so far (Python, the helper's
    # modules, Triton and its backend).
    hello = {"pid": os.getpid(), "startup_cpu": cpu_seconds(), "triton_version": triton.__version__}
    directory, name = os.path.split(os.path.abspath(sock_path))
    os.chdir(directory)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(name)
    bound = os.stat(name).st_ino
    listener.listen(16)
    listener.settimeout(idle)
    capture = Capture(name + ".out")
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                return 0
            conn.settimeout(None)
            with conn:
                try:
                    if serve_connection(conn, hello, capture, dirs):
                        return 0
                except (OSError, ValueError):
                    pass  # the client went away or sent garbage: wait for the next
    finally:
        # Only our own socket: a server started after we stopped listening
        # may have bound the name again.
        try:
            if os.stat(os.path.join(directory, name)).st_ino == bound:
                os.unlink(os.path.join(directory, name))
        except OSError:
            pass
        listener.close()


def main(argv):
    try:
        if len(argv) == 2 and argv[1] == "version":
            version()
            return 0
        if len(argv) == 4 and argv[1] == "describe":
            describe(argv[2], argv[3])
            return 0
        if len(argv) == 5 and argv[1] == "compile":
            compile_kernel(argv[2], argv[3], argv[4])
            return 0
        if len(argv) in (3, 5) and argv[1] == "serve" and (len(argv) == 3 or argv[3] == "--idle"):
            return serve(argv[2], float(argv[4]) if len(argv) == 5 else 60.0)
        fail("usage: triton_helper.py version | describe REQUEST.json OUT.json | compile REQUEST.json OUT.cubin "
             "OUT.meta.json | serve SOCKET [--idle SECONDS]")
    except HelperError as e:
        sys.stderr.write(e.message.rstrip() + "\n")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
