"""kpack's bridge to Triton's compiler, run by `kpack build` at build time only.

    python3 triton_helper.py version
    python3 triton_helper.py compile REQUEST.json OUT.cubin OUT.meta.json

The request names the source file (and the root-relative name to record in
line info), the @triton.jit function, the Triton
signature of each runtime parameter, the constexpr values, the divisibility
hints, num_warps, num_stages and the target arch.  The helper checks that the
manifest and the kernel agree on parameters, compiles for the explicit target
(no GPU or driver needed), and writes the cubin and its metadata.

Errors go to stderr as one line (plus Triton's own message) with exit code 1;
kpack prefixes them with the manifest position and the specialization.  The
compiler proper stays in C++: this file only does what needs Python.
"""
import json
import linecache
import os
import sys
import types


def fail(message):
    sys.stderr.write(message.rstrip() + "\n")
    sys.exit(1)


def import_triton():
    try:
        import triton  # noqa: F401
        from triton.backends.compiler import GPUTarget  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        fail("cannot import triton (%s: %s)" % (type(e).__name__, e))
    return sys.modules["triton"]


def load_kernel(triton, source, entry, name):
    """Runs the kernel's module with its code named `name` (the source's path
    relative to the project root): Triton records that name in the cubin's
    line info, and an absolute path there would make the cubin depend on
    where the build runs."""
    # The module runs from its own directory, as Triton's AOT tool does, so
    # it can import its neighbours.
    sys.path.insert(0, os.path.dirname(os.path.abspath(source)))
    module = types.ModuleType("kpack_triton_source")
    module.__file__ = os.path.abspath(source)
    try:
        with open(source) as f:
            text = f.read()
        # Triton reads the kernel's text back through inspect, which finds it
        # under `name` here (an mtime of None keeps checkcache from dropping it).
        linecache.cache[name] = (len(text), None, text.splitlines(True), name)
        exec(compile(text, name, "exec"), module.__dict__)
    except Exception as e:
        fail("cannot import %s: %s: %s" % (source, type(e).__name__, e))
    fn = getattr(module, entry, None)
    if not isinstance(fn, triton.runtime.JITFunction):
        fail("%s has no @triton.jit function named '%s'" % (source, entry))
    return fn


def check_parameters(fn, request):
    """The manifest's params must be the kernel's runtime parameters, in
    order, and its constexprs exactly the kernel's tl.constexpr ones."""
    kernel_constexprs = [p.name for p in fn.params if p.is_constexpr]
    kernel_runtime = [p.name for p in fn.params if not p.is_constexpr]
    manifest_constexprs = list(request["constexprs"].keys())
    for name in manifest_constexprs:
        if name not in kernel_constexprs:
            fail("manifest constexpr '%s' is not a tl.constexpr parameter of %s (its tl.constexpr parameters: %s)"
                 % (name, fn.__name__, ", ".join(kernel_constexprs) or "none"))
    for name in kernel_constexprs:
        if name not in manifest_constexprs:
            fail("%s's tl.constexpr parameter '%s' has no values in the manifest's constexprs"
                 % (fn.__name__, name))
    manifest_runtime = [p["name"] for p in request["params"]]
    if manifest_runtime != kernel_runtime:
        fail("the manifest's params (%s) are not %s's runtime parameters in order (%s)"
             % (", ".join(manifest_runtime), fn.__name__, ", ".join(kernel_runtime)))


def compile_kernel(request_path, cubin_path, meta_path):
    with open(request_path) as f:
        request = json.load(f)
    triton = import_triton()
    from triton.backends.compiler import GPUTarget
    fn = load_kernel(triton, request["source"], request["entry"],
                     request.get("source_name") or os.path.basename(request["source"]))
    check_parameters(fn, request)

    signature = {}
    attrs = {}
    constexprs = request["constexprs"]
    for index, p in enumerate(fn.params):
        if p.is_constexpr:
            signature[p.name] = "constexpr"
            continue
        param = next(q for q in request["params"] if q["name"] == p.name)
        signature[p.name] = param["triton_type"]
        if param.get("divisibility") == 16:
            attrs[(index,)] = [["tt.divisibility", 16]]
    target = GPUTarget("cuda", int(request["arch"]), 32)
    try:
        backend = triton.compiler.make_backend(target)
        options = backend.parse_options({"num_warps": request["num_warps"], "num_stages": request["num_stages"],
                                         "debug": bool(request.get("debug", False))})
        src = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
        compiled = triton.compile(src, target=target, options=options.__dict__)
    except Exception as e:
        fail("Triton failed to compile %s: %s: %s" % (fn.__name__, type(e).__name__, e))

    md = compiled.metadata
    global_scratch = getattr(md, "global_scratch_size", 0) or 0
    profile_scratch = getattr(md, "profile_scratch_size", 0) or 0
    if global_scratch > 0:
        fail("%s needs %d bytes of global scratch memory, which the kpack runtime cannot provide yet"
             % (fn.__name__, global_scratch))
    if profile_scratch > 0:
        fail("%s needs %d bytes of profile scratch memory, which the kpack runtime cannot provide yet"
             % (fn.__name__, profile_scratch))
    meta = {
        "name": md.name,
        "shared": int(md.shared),
        "num_warps": int(md.num_warps),
        "num_stages": int(request["num_stages"]),
        # Triton >= 3.3 appends global_scratch and profile_scratch pointers
        # to every kernel; the launcher passes NULL for each.
        "hidden_pointer_params": 2,
        "triton_version": triton.__version__,
    }
    with open(cubin_path, "wb") as f:
        f.write(compiled.asm["cubin"])
    with open(meta_path, "w") as f:
        json.dump(meta, f, sort_keys=True)


def main(argv):
    if len(argv) == 2 and argv[1] == "version":
        triton = import_triton()
        print("triton %s python %d.%d.%d" % ((triton.__version__,) + tuple(sys.version_info[:3])))
        return 0
    if len(argv) == 5 and argv[1] == "compile":
        compile_kernel(argv[2], argv[3], argv[4])
        return 0
    fail("usage: triton_helper.py version | compile REQUEST.json OUT.cubin OUT.meta.json")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
