"""Reading Triton kernels from source without running their modules
(compiler/kpack_slice.py, kpack_jit.py, kpack_wrappers.py, and the helper's
describe and compile commands).

    python3 slice_test.py COMPILER_DIR

Each test writes a small package of its own into a temporary directory: a
module that imports torch (which is not installed: importing it would fail),
runs GPU work at import time (raises), and defines kernels behind conditions,
try/except imports and relative imports.  The slicer must package what the
kernels reach and report, word for word, what it cannot.  The compile tests
also prove the sliced kernel is the JIT's: its cubin is byte-identical to the
one Triton builds from the module run normally.
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

COMPILER = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "..", "compiler")
sys.path.insert(0, COMPILER)

try:
    import triton  # noqa: F401
except ImportError:
    if os.environ.get("CI") == "true":
        sys.exit("FAILED: Triton is not installed (.ci/setup installs it)")
    print("Triton is not installed: skipped")
    sys.exit(77)

from kpack_jit import KernelSlice  # noqa: E402
from kpack_slice import SearchPath, SliceError, Slicer  # noqa: E402
from kpack_wrappers import describe_autotune, describe_heuristics, translate_heuristic, Untranslatable  # noqa: E402

HELPER = os.path.join(COMPILER, "triton_helper.py")

# A package whose modules cannot be imported: `torch` does not exist, and
# the top level raises if it ever runs.
PACKAGE = {
    "pkg/__init__.py": "import torch\nraise RuntimeError('pkg/__init__ ran')\n",
    "pkg/ops/__init__.py": "from .helpers import scale_of\n",
    "pkg/ops/helpers.py": """\
        import os
        import triton
        import triton.language as tl
        import torch

        FACTOR: tl.constexpr = tl.constexpr(3)
        _UNUSED = torch.zeros(4).cuda()

        if os.environ.get('PKG_FAST', '0') == '1':
            @triton.jit
            def scale_of(x):
                return x * 100
        else:
            @triton.jit
            def scale_of(x):
                return x * FACTOR

        def on_gpu():
            return torch.cuda.is_available()
        """,
    "pkg/ops/kernels.py": """\
        import torch
        import triton
        import triton.language as tl

        from .helpers import scale_of, on_gpu
        from . import helpers as h
        try:
            from triton.language.extra.libdevice import rsqrt
        except ModuleNotFoundError:
            from triton.language.math import rsqrt

        torch.cuda.synchronize()  # GPU work at import: kpack never runs it

        if on_gpu():
            @triton.jit
            def pick(x):
                return x
        else:
            @triton.jit
            def pick(x):
                return -x

        if torch.version.hip is not None and False:
            MODE: tl.constexpr = tl.constexpr(1)
        else:
            MODE: tl.constexpr = tl.constexpr(0)

        @triton.jit
        def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr, SQUARE: tl.constexpr = False):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask, other=1.0)
            y = scale_of(x) + h.FACTOR + MODE
            if SQUARE:
                y = y * y
            tl.store(y_ptr + offs, rsqrt(y), mask=mask)

        @triton.jit
        def picked(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, pick(tl.load(x_ptr + offs)), mask=offs < n)

        @triton.jit
        def uses_torch(x_ptr, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), torch.float32)

        @triton.heuristics({'EVEN': lambda args: args['n'] % args['BLOCK'] == 0,
                            'HAS_Y': lambda args: args['y_ptr'] is not None,
                            'B2': lambda args: triton.next_power_of_2(args['n']) // 2,
                            'BAD': lambda args: isinstance(args['n'], int)})
        @triton.autotune(configs=[triton.Config({'BLOCK': b}, num_warps=w) for b in [64, 128] for w in [4, 8]],
                         key=['n'], reset_to_zero=['y_ptr'])
        @triton.jit(do_not_specialize=['n'])
        def wrapped(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr, HAS_Y: tl.constexpr,
                    B2: tl.constexpr, BAD: tl.constexpr):
            tl.store(x_ptr, n)

        CONFIGS = [triton.Config({'BLOCK': 64})] if on_gpu() else [triton.Config({'BLOCK': 32})]

        @triton.autotune(configs=CONFIGS, key=[])
        @triton.jit
        def device_configs(x_ptr, BLOCK: tl.constexpr):
            tl.store(x_ptr, BLOCK)
        """,
}


def elf_section(data, name):
    """The bytes of ELF64 section `name` (a cubin's SASS is .text.KERNEL)."""
    import struct
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    def header(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    strtab = header(shstrndx)
    for i in range(shnum):
        h = header(i)
        start = strtab[4] + h[0]
        if data[start:data.index(b"\0", start)].decode() == name:
            return data[h[4]:h[4] + h[5]]
    raise KeyError(name)


def write_package(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(textwrap.dedent(text))


class SliceTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        write_package(self.root, PACKAGE)
        self.source = os.path.join(self.root, "pkg", "ops", "kernels.py")

    def tearDown(self):
        self.dir.cleanup()

    def slice(self, entry, assume=None):
        slicer = Slicer(SearchPath([self.root], self.root).with_source(self.source), assume)
        module = slicer.module_for_file(self.source)
        return slicer, KernelSlice(slicer, module, entry)

    def check_messages(self, entry, assume=None):
        return [str(e) for e in self.slice(entry, assume)[1].check()]

    def test_reaches_functions_through_relative_imports_and_conditions(self):
        slicer, ks = self.slice("scale")
        self.assertEqual(ks.check(), [])
        fn = ks.build()
        self.assertEqual(fn.__name__, "scale")
        # os.environ.get takes its default: the x * FACTOR definition.
        helper = fn.__globals__["scale_of"]
        self.assertIn("x * FACTOR", helper.src)
        self.assertEqual(fn.__globals__["MODE"].value, 0)
        self.assertEqual(fn.__globals__["h"].FACTOR.value, 3)
        # Only what the kernel reaches was read: not pkg/__init__.py (pkg.ops
        # is read for `from . import helpers`).
        self.assertEqual(sorted(os.path.relpath(p, self.root) for p in slicer.inputs),
                         ["pkg/ops/__init__.py", "pkg/ops/helpers.py", "pkg/ops/kernels.py"])

    def test_try_except_import_takes_the_import_that_works(self):
        import triton.language.extra.libdevice as libdevice
        fn = self.slice("scale")[1].build()
        self.assertIs(fn.__globals__["rsqrt"], libdevice.rsqrt)

    def test_undecidable_condition_names_the_assume_key(self):
        self.assertEqual(self.check_messages("picked"), [
            "pkg/ops/kernels.py:41:28: 'pick' (used by 'picked') cannot be resolved without running code: "
            "pkg/ops/kernels.py:14:4: it calls pkg.ops.helpers.on_gpu(), which kpack does not run; "
            "assume: {pkg.ops.helpers.on_gpu: VALUE} in the manifest gives it a value, or load: execute runs the "
            "kernel's module"])

    def test_assume_decides_it(self):
        slicer, ks = self.slice("picked", {"pkg.ops.helpers.on_gpu": False})
        self.assertEqual(ks.check(), [])
        self.assertIn("-x", ks.build().__globals__["pick"].src)

    def test_a_name_from_a_module_kpack_does_not_import(self):
        self.assertEqual(self.check_messages("uses_torch"), [
            "pkg/ops/kernels.py:45:43: 'torch' (used by 'uses_torch') is module 'torch' (imported at "
            "pkg/ops/kernels.py:1:1), which kpack does not import; load: execute in the manifest runs the kernel's "
            "module instead"])

    def test_missing_entry(self):
        with self.assertRaises(SliceError) as e:
            self.slice("nope")[1].entry()
        self.assertEqual(str(e.exception), "pkg/ops/kernels.py:1:1: pkg/ops/kernels.py has no @triton.jit function "
                                           "named 'nope'")

    def test_autotune_configs_and_key(self):
        slicer, ks = self.slice("wrapped")
        fdef = ks.entry()
        kinds = [kind for kind, _ in fdef.decorators]
        self.assertEqual(kinds, ["heuristics", "autotune", "jit"])
        autotune = describe_autotune(slicer, fdef, fdef.decorators[1][1])
        self.assertEqual(autotune["key"], ["n"])
        self.assertEqual([(c["kwargs"], c["num_warps"], c["num_stages"]) for c in autotune["configs"]],
                         [({"BLOCK": "64"}, 4, 3), ({"BLOCK": "64"}, 8, 3), ({"BLOCK": "128"}, 4, 3),
                          ({"BLOCK": "128"}, 8, 3)])

    def test_autotune_configs_that_need_the_device(self):
        slicer, ks = self.slice("device_configs")
        fdef = ks.entry()
        autotune = describe_autotune(slicer, fdef, fdef.decorators[0][1])
        self.assertEqual(autotune["configs_error"],
                         "its configs cannot be evaluated without running code (pkg/ops/kernels.py:58:45: it calls "
                         "pkg.ops.helpers.on_gpu(), which kpack does not run); list them in the manifest's autotune: "
                         "configs: or assume: {pkg.ops.helpers.on_gpu: VALUE}")

    def test_heuristics_translate(self):
        slicer, ks = self.slice("wrapped")
        fdef = ks.entry()
        values = describe_heuristics(slicer, fdef, fdef.decorators[0][1], [])
        self.assertEqual([(v["name"], v.get("expr"), v.get("error")) for v in values], [
            ("EVEN", "(floormod(n, BLOCK) == 0)", None),
            ("HAS_Y", "y_ptr != NULL", None),
            ("B2", "floordiv(next_pow2(n), 2)", None),
            ("BAD", None, "pkg/ops/kernels.py:50:41: it calls isinstance(), which has no kpack equivalent"),
        ])

    def test_heuristic_translation_refusals(self):
        import ast
        slicer, ks = self.slice("scale")
        module = ks.module
        cases = {
            "lambda args: args['n'] / 2": "operator / has no kpack equivalent (integer arithmetic only)",
            "lambda args: args['x'] is None or 1 < args['n'] < 3": "chained comparisons have no kpack equivalent",
            "lambda args: N": "it reads 'N', which is not one of the kernel's arguments (args['...'])",
            "lambda args: 0.5": "the constant 0.5 is not an integer",
        }
        for text, why in cases.items():
            with self.assertRaises(Untranslatable) as e:
                translate_heuristic(slicer, module, ast.parse(text, mode="eval").body)
            self.assertTrue(str(e.exception).endswith(why), str(e.exception))

    def test_kleene_and_or(self):
        import ast
        slicer, ks = self.slice("scale")
        ev = lambda text: slicer.evaluate(ks.module, ast.parse(text, mode="eval").body)
        self.assertEqual(ev("on_gpu() and False"), False)
        # hasattr and getattr see a module's names, read from source or real.
        self.assertEqual(ev("hasattr(h, 'scale_of')"), True)
        self.assertEqual(ev("hasattr(h, 'nothing')"), False)
        self.assertEqual(ev("hasattr(tl, 'gather')"), True)
        self.assertEqual(ev("getattr(h, 'nothing', 7)"), 7)
        self.assertEqual(ev("on_gpu() or True"), True)
        from kpack_slice import Undecidable
        with self.assertRaises(Undecidable):
            ev("on_gpu() and True")


class HelperTest(unittest.TestCase):
    """triton_helper.py describe and compile, as kpack runs them."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        write_package(self.root, PACKAGE)
        self.source = os.path.join(self.root, "pkg", "ops", "kernels.py")

    def tearDown(self):
        self.dir.cleanup()

    def run_helper(self, *args, env=None):
        return subprocess.run([sys.executable, HELPER] + list(args), capture_output=True, text=True, env=env)

    def request(self, entry, **extra):
        r = {"source": self.source, "source_name": "pkg/ops/kernels.py", "entry": entry,
             "python_path": [self.root], "arch": 90, "options": {"num_warps": 4, "num_stages": 3},
             "constexprs": {"BLOCK": 128}, "params": [{"name": "x_ptr", "triton_type": "*fp32", "divisibility": 16},
                                                      {"name": "y_ptr", "triton_type": "*fp32", "divisibility": 16},
                                                      {"name": "n", "triton_type": "i32"}]}
        r.update(extra)
        path = os.path.join(self.root, "request.json")
        with open(path, "w") as f:
            json.dump(r, f)
        return path

    def compile(self, request, env=None):
        cubin, meta = os.path.join(self.root, "out.cubin"), os.path.join(self.root, "out.meta")
        result = self.run_helper("compile", request, cubin, meta, env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        # Nothing printed: no warning (Triton 3.9 warns when enable_fp_fusion
        # is not given) reaches the output kpack shows.
        self.assertEqual(result.stderr, "")
        with open(cubin, "rb") as f, open(meta) as g:
            return f.read(), json.load(g)

    def compile_error(self, request, env=None):
        result = self.run_helper("compile", request, os.path.join(self.root, "c"), os.path.join(self.root, "m"),
                                 env=env)
        self.assertEqual(result.returncode, 1, result.stderr)
        return result.stderr

    def test_describe(self):
        path = os.path.join(self.root, "describe.json")
        with open(path, "w") as f:
            json.dump({"kernels": [{"source": self.source, "source_name": "pkg/ops/kernels.py", "entry": "scale",
                                    "python_path": [self.root], "root": self.root}]}, f)
        out = os.path.join(self.root, "answer.json")
        result = self.run_helper("describe", path, out)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(out) as f:
            kernel = json.load(f)["kernels"][0]
        self.assertEqual(kernel["errors"], [])
        self.assertEqual(kernel["line"], 29)
        params = [(p["name"], p["constexpr"], p.get("default")) for p in kernel["params"]]
        self.assertEqual(params, [("x_ptr", False, None), ("y_ptr", False, None), ("n", False, None),
                                  ("BLOCK", True, None), ("SQUARE", True, "false")])

    def test_sliced_kernel_is_the_jit_kernel(self):
        """The kernel built from the slice and the kernel Triton's JIT gets
        from the module imported normally (a twin of the package that can
        be imported: no torch) compile to the same machine code.  Only the
        file names in line info differ: the slice records package-relative
        names, the import absolute ones."""
        constexprs = {"BLOCK": 128, "SQUARE": True}
        sliced, meta = self.compile(self.request("scale", constexprs=constexprs))
        self.assertEqual(meta["name"], "scale")
        self.assertEqual(sorted(os.path.relpath(p, self.root) for p in meta["inputs"]),
                         ["pkg/ops/__init__.py", "pkg/ops/helpers.py", "pkg/ops/kernels.py"])
        twin = os.path.join(self.root, "twin")
        for name, text in PACKAGE.items():
            text = textwrap.dedent(text).replace("import torch\n", "").replace("raise RuntimeError", "str")
            text = text.replace("_UNUSED = torch.zeros(4).cuda()", "_UNUSED = 0").replace("torch.cuda.synchronize()", "")
            text = text.replace("torch.version.hip is not None", "False").replace("torch.cuda.is_available()", "True")
            write_package(twin, {name.replace("pkg/", "twinpkg/"): text.replace("torch.float32", "0")})
        import importlib
        import triton
        from triton.backends.compiler import GPUTarget
        sys.path.insert(0, twin)
        fn = importlib.import_module("twinpkg.ops.kernels").scale
        signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr", "SQUARE": "constexpr"}
        attrs = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}
        target = GPUTarget("cuda", 90, 32)
        options = triton.compiler.make_backend(target).parse_options({"num_warps": 4, "num_stages": 3, "debug": False})
        jit = triton.compile(triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs),
                             target=target, options=options.__dict__).asm["cubin"]
        self.assertEqual(elf_section(sliced, ".text.scale"), elf_section(jit, ".text.scale"))
        self.assertEqual(elf_section(sliced, ".nv.info.scale"), elf_section(jit, ".nv.info.scale"))
        # load: execute imports the (importable) twin by name from the python
        # path, package and all, and builds the same code.
        executed, meta = self.compile(self.request("scale", constexprs=constexprs, load="execute",
                                                   source=os.path.join(twin, "twinpkg", "ops", "kernels.py"),
                                                   python_path=[twin]))
        self.assertEqual(elf_section(executed, ".text.scale"), elf_section(sliced, ".text.scale"))
        self.assertEqual(meta["inputs"], [os.path.join(twin, "twinpkg", "ops", "kernels.py")])

    def test_compile_reports_slice_errors(self):
        result = self.run_helper("compile", self.request("uses_torch", constexprs={"BLOCK": 128},
                                                         params=[{"name": "x_ptr", "triton_type": "*fp32"}]),
                                 os.path.join(self.root, "c"), os.path.join(self.root, "m"))
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr, "pkg/ops/kernels.py:45:43: 'torch' (used by 'uses_torch') is module 'torch' "
                                        "(imported at pkg/ops/kernels.py:1:1), which kpack does not import; load: "
                                        "execute in the manifest runs the kernel's module instead\n")

    def test_every_command_refuses_another_triton(self):
        """A stand-in Triton of another version, first on the path: every
        command refuses it before reading its request."""
        fake = os.path.join(self.root, "fake")
        write_package(fake, {"triton/__init__.py": "",
                             "triton/backends/__init__.py": "",
                             "triton/backends/compiler.py": "class GPUTarget:\n    pass\n"})
        for version in ("3.5.1", "3.10.0"):
            with open(os.path.join(fake, "triton", "__init__.py"), "w") as f:
                f.write("__version__ = %r\n" % version)
            env = dict(os.environ, PYTHONPATH=fake)
            for args in (["version"], ["describe", "r.json", "o.json"], ["compile", "r.json", "c", "m"],
                         ["serve", os.path.join(self.root, "s.sock")]):
                result = self.run_helper(*args, env=env)
                self.assertEqual((result.returncode, result.stderr),
                                 (1, "kpack supports Triton 3.6 to 3.9; found %s in %s\n" % (version, sys.executable)),
                                 args)
        with open(os.path.join(fake, "triton", "__init__.py"), "w") as f:
            f.write("raise ImportError('a broken install')\n")
        result = self.run_helper("version", env=dict(os.environ, PYTHONPATH=fake))
        self.assertEqual((result.returncode, result.stderr),
                         (1, "cannot import triton in %s (ImportError: a broken install)\n" % sys.executable))

    def test_version(self):
        import triton
        result = self.run_helper("version")
        self.assertEqual(result.stdout, "triton %s python %d.%d.%d\n" % ((triton.__version__,) + sys.version_info[:3]))

    def test_fp_fusion_is_asked_for_explicitly(self):
        """enable_fp_fusion goes to Triton in every request (True unless the
        manifest says otherwise), so the environment's default does not
        change the cubin; Triton 3.9's TRITON_FORCE_DISABLE_FP_FUSION, which
        overrides it, is an error."""
        import triton
        plain, _ = self.compile(self.request("scale"))
        env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="0")
        self.assertEqual(self.compile(self.request("scale"), env=env)[0], plain)
        unfused, _ = self.compile(self.request("scale", options={"num_warps": 4, "num_stages": 3,
                                                                 "enable_fp_fusion": False}))
        self.assertNotEqual(unfused, plain)
        env = dict(os.environ, TRITON_FORCE_DISABLE_FP_FUSION="1")
        if tuple(int(v) for v in triton.__version__.split(".")[:2]) >= (3, 9):
            self.assertEqual(self.compile_error(self.request("scale"), env=env),
                             "scale: Triton compiled it with enable_fp_fusion=False, not the True kpack asked for: "
                             "TRITON_FORCE_DISABLE_FP_FUSION is set in the environment (unset it, or give the kernel "
                             "the option enable_fp_fusion: false)\n")
        else:  # not a knob before 3.9
            self.assertEqual(self.compile(self.request("scale"), env=env)[0], plain)

    def test_options_triton_would_drop_or_override(self):
        import triton
        request = self.request("scale", options={"num_warps": 4, "num_stages": 3, "no_such_option": 1})
        self.assertEqual(self.compile_error(request), "scale: Triton %s has no compile option 'no_such_option'; it "
                                                      "would ignore it silently\n" % triton.__version__)
        self.assertEqual(self.compile_error(self.request("scale"), env=dict(os.environ, TRITON_OVERRIDE_ARCH="sm80")),
                         "scale: Triton would compile it for sm80, not sm_90: TRITON_OVERRIDE_ARCH is set in the "
                         "environment (unset it)\n")

    def test_im2col_descriptors_are_refused(self):
        """Triton 3.8's im2col tensor descriptors: a param of that type, and
        metadata that says is_im2col (3.8 adds the key to every descriptor,
        False for a tiled one)."""
        request = self.request("scale", params=[
            {"name": "x_ptr", "triton_type": "tensordesc_im2col<fp32[64, 64],input_rank=4>"},
            {"name": "y_ptr", "triton_type": "*fp32"}, {"name": "n", "triton_type": "i32"}])
        self.assertEqual(self.compile_error(request), "scale: parameter 'x_ptr' is an im2col tensor descriptor "
                                                      "(tensordesc_im2col<fp32[64, 64],input_rank=4>), which kpack "
                                                      "does not encode\n")
        import types
        import triton_helper

        def k():
            pass
        tiled = {"swizzle": 3, "elem_size": 2, "elem_type": 6, "block_size": [64, 64], "fp4_padded": False}
        for meta in (tiled, dict(tiled, is_im2col=False)):
            self.assertEqual(triton_helper.descriptor_layouts(k, types.SimpleNamespace(tensordesc_meta=[meta])),
                             [{"data_type": 6, "elem_bytes": 2, "box": [64, 64], "swizzle": 3}])
        with self.assertRaises(triton_helper.HelperError) as e:
            triton_helper.descriptor_layouts(k, types.SimpleNamespace(tensordesc_meta=[dict(tiled, is_im2col=True)]))
        self.assertEqual(e.exception.message, "k: tensor descriptor 0 is an im2col descriptor, which kpack does not "
                                              "encode")
        with self.assertRaises(triton_helper.HelperError) as e:
            triton_helper.descriptor_layouts(k, types.SimpleNamespace(tensordesc_meta=[dict(tiled, lut=1)]))
        self.assertEqual(e.exception.message, "k: tensor descriptor 0 has metadata kpack does not know (lut): this "
                                              "Triton is newer than kpack supports")

    def test_defaults_and_floats(self):
        # SQUARE takes its default (False) when the request leaves it out.
        _, meta = self.compile(self.request("scale"))
        self.assertEqual(meta["name"], "scale")


if __name__ == "__main__":
    unittest.main(verbosity=2)
