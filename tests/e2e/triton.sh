#!/usr/bin/env bash
# End to end for Triton kernels through the real kpack, Python and Triton:
# a kernel builds for sm_80 and sm_90 (as sm_90a) with no GPU; by default
# (variants: jit) every specialization is also built as the JIT builds an
# ordinary call (i32, hinted), with variants: each the aligned and i32
# variants separately; the manifest and the kernel must agree on constexprs
# and params (checked when the source is read, at the manifest's and the
# source's lines); Triton's own errors and a missing Python are reported
# against the manifest; the debug guard refuses a `debug: true` Triton
# kernel unless allowed; no partial outputs.
set -u
kpack=$(realpath "$1")
cuda_root=$2
python=${3:-python3}
if ! "$python" -c 'import triton' 2>/dev/null; then
  echo "Triton is not installed for $python: skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
. "$(dirname "$0")/checks.sh"

write_package() {
  mkdir -p m
  printf 'package: tk\narchs: [sm_80, sm_90]\nkernels: [add.yaml]\n' > m/kpack.yaml
  cat > m/add.py <<'PY'
import triton
import triton.language as tl


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)
PY
  cat > m/add.yaml <<'YAML'
kernel: add
language: triton
source: add.py
entry: add
variants: none
constexprs:
  - {name: T, type: dtype, values: [f16]}
  - {name: BLOCK, type: int, values: [1024], tag: b}
  - {name: num_warps, type: int, values: [4, 8], tag: w}
params:
  - {name: x, type: const T*, divisibility: 16}
  - {name: y, type: const T*, divisibility: 16}
  - {name: out, type: T*, divisibility: 16}
  - {name: n, type: i32}
launch:
  grid: ["cdiv(n, BLOCK)"]
YAML
}

build() {
  rm -rf out
  "$kpack" build m/kpack.yaml --header out/tk.h --launcher out/tk.c --asm out/tk.S \
    --work-dir work --cuda-root "$cuda_root" --python "$python" -v "$@" > log 2>&1
}

# 1. Builds with no GPU: SASS for sm_80 and sm_90a, launchers with Triton's block.
write_package
if build && grep -q '4 units: 4 compiled, 0 from cache' log \
   && grep -q 'static const uint32_t kpack_archs_0\[\] = {80, 90 | KPACK_ARCH_SPECIFIC};' out/tk.c \
   && grep -q 'const int64_t kpack_block\[3\] = {256, 1, 1};' out/tk.c \
   && grep -q '(void \*)&kpack_scratch\[1\]};' out/tk.c; then
  pass "a Triton kernel builds for sm_80 and sm_90a, 32 x num_warps threads, NULL scratch"
else
  fail "Triton build"; cat log; cat out/tk.c 2>/dev/null | head -120
fi
build
grep -q '4 units: 0 compiled, 0 from cache, 4 up to date' log && pass "a rebuild runs no unit" || { fail "rebuild"; cat log; }

# 1b. divisibility: auto with variants: each: every specialization also
# builds an aligned variant, hinted in Triton's request, checked, packed and
# embedded beside the unhinted build, and the launcher picks it by the values.
sed -i 's/divisibility: 16}/divisibility: auto}/; s/{name: n, type: i32}/{name: n, type: i32, divisibility: auto}/; s/variants: none/variants: each/' m/add.yaml
u=work/units/add_f16_b1024_w4
if build && grep -q '8 units (4 of aligned variants): 8 compiled, 0 from cache' log \
   && grep -q '"divisibility":16,"name":"x"' $u.aligned.sm_80.json && ! grep -q divisibility $u.sm_80.json \
   && grep -q '"divisibility":16,"name":"y"' $u.aligned.sm_90a.json && grep -q '"divisibility":16,"name":"n"' $u.aligned.sm_90a.json \
   && [ -s $u.aligned.sm_80.bin ] && ! cmp -s $u.aligned.sm_80.bin $u.sm_80.bin \
   && grep -q '\.incbin "work/fatbins/add_f16_b1024_w8.aligned.fatbin"' out/tk.S \
   && grep -q 'const int kpack_aligned = (((uint64_t)(uintptr_t)x | (uint64_t)(uintptr_t)y | (uint64_t)(uintptr_t)out | (uint64_t)n) & 15) == 0;' out/tk.c \
   && grep -q '{{&kpack_spec_0, 128, [0-9]*, 0, 0}, {&kpack_spec_2, 128, [0-9]*, 0, 0}}};' out/tk.c \
   && grep -q '{{&kpack_spec_1, 256, [0-9]*, 0, 0}, {&kpack_spec_3, 256, [0-9]*, 0, 0}}};' out/tk.c \
   && grep -q 'const kpack_build_ \*kpack_b = &kpack_builds\[kpack_base\]\[(kpack_aligned ? 1 : 0)\];' out/tk.c \
   && grep -q 'return kpack_launch(kpack_b->kernel, stream' out/tk.c \
   && grep -q '"add_f16_b1024_w4 (aligned variant)"' out/tk.c \
   && grep -q 'size_t tk_num_specializations(void) { return 2; }' out/tk.c \
   && ! grep -q 'must be 16-byte aligned' out/tk.c; then
  pass "divisibility: auto builds, checks and embeds an aligned variant per specialization; the launcher picks"
else
  fail "aligned variants"; cat log; ls work/units work/fatbins; cat out/tk.c 2>/dev/null | sed -n '/^kpack_status tk_add_f16_b1024_w4(/,/^}/p'
fi
build
grep -q '8 units (4 of aligned variants): 0 compiled, 0 from cache, 8 up to date' log && pass "aligned variants are up to date" \
  || { fail "aligned variants cache"; cat log; }

# 1c. width: auto: an i64 param also gets i32 builds (of the unhinted build
# and of the aligned variant), with i32 in Triton's request; kpack's layout
# check of each cubin proves Triton took n as 4 bytes there and 8 in the
# others.  The launcher passes a 32-bit copy when n fits.  (A fresh work
# directory: the i32 builds equal earlier steps' builds, whose n was i32,
# and a cache hit writes no request file.)
sed -i 's/{name: n, type: i32, divisibility: auto}/{name: n, type: i64, width: auto}/' m/add.yaml
rm -rf work
if build && grep -q '16 units (12 of aligned and i32 variants): 16 compiled, 0 from cache' log \
   && grep -q '"name":"n","triton_type":"i32"' $u.i32.sm_80.json && grep -q '"name":"n","triton_type":"i32"' $u.aligned.i32.sm_90a.json \
   && grep -q '"name":"n","triton_type":"i64"' $u.sm_80.json && grep -q '"name":"n","triton_type":"i64"' $u.aligned.sm_90a.json \
   && grep -q '"divisibility":16,"name":"x"' $u.aligned.i32.sm_80.json && ! grep -q divisibility $u.i32.sm_80.json \
   && [ -s $u.i32.sm_80.bin ] && ! cmp -s $u.i32.sm_80.bin $u.sm_80.bin \
   && grep -q '\.incbin "work/fatbins/add_f16_b1024_w8.aligned.i32.fatbin"' out/tk.S \
   && grep -q 'const int kpack_narrow = n >= INT32_MIN && n <= INT32_MAX;' out/tk.c \
   && grep -q 'const int32_t kpack_i32_n = (int32_t)n;' out/tk.c \
   && grep -q '(kpack_b->narrow ? (void \*)&kpack_i32_n : (void \*)&n)' out/tk.c \
   && grep -q 'kpack_builds\[kpack_base\]\[(kpack_aligned && kpack_narrow ? 3 : (kpack_narrow ? 2 : (kpack_aligned ? 1 : 0)))\];' out/tk.c \
   && grep -q '{{&kpack_spec_0, 128, [0-9]*, 0, 0}, {&kpack_spec_2, 128, [0-9]*, 0, 0}, {&kpack_spec_3, 128, [0-9]*, 1, 0}, {&kpack_spec_4, 128, [0-9]*, 1, 0}}};' out/tk.c \
   && grep -q '"add_f16_b1024_w4 (aligned i32 variant)"' out/tk.c \
   && grep -q 'size_t tk_num_specializations(void) { return 2; }' out/tk.c; then
  pass "width: auto builds, checks and embeds i32 variants with i32 in Triton's request; the launcher picks"
else
  fail "i32 variants"; cat log; ls work/units work/fatbins; cat out/tk.c 2>/dev/null | sed -n '/^kpack_status tk_add_f16_b1024_w4(/,/^}/p'
fi

# 1d. The default, variants: jit, with params listed plainly: each
# specialization is built as the general build (n as i64, nothing hinted)
# and as Triton's JIT builds an ordinary call (n as i32, every pointer and
# integer hinted); the launcher runs the latter when the call allows.
sed -i '/^variants: each$/d; s/, divisibility: auto}/}/g; s/{name: n, type: i64, width: auto}/{name: n, type: i64}/' m/add.yaml
rm -rf work
if build && grep -q '8 units (4 of aligned and i32 variants): 8 compiled, 0 from cache' log \
   && ! grep -q divisibility $u.sm_80.json && grep -q '"name":"n","triton_type":"i64"' $u.sm_80.json \
   && grep -q '"divisibility":16,"name":"n","triton_type":"i32"' $u.aligned.i32.sm_90a.json \
   && grep -q '"divisibility":16,"name":"x"' $u.aligned.i32.sm_80.json \
   && grep -q 'kpack_builds\[kpack_base\]\[(kpack_aligned && kpack_narrow ? 1 : 0)\];' out/tk.c \
   && grep -q ' \* Variants: each specialization is also built as Triton.s JIT builds an' out/tk.h \
   && grep -q ' \*   hinted divisible by 16 (pointers: 16-byte aligned): x, y, out and n;' out/tk.h \
   && grep -q ' \*   passed as i32 (they fit in 32 bits): n;' out/tk.h; then
  pass "by default a specialization is also built as the JIT builds an ordinary call (i32, hinted): two builds"
else
  fail "jit variants"; cat log; ls work/units; cat out/tk.h 2>/dev/null | sed -n '/==== add/,/\*\//p'
fi

# 1e. equal_to_1: auto: the aligned builds take the param as the constant 1,
# as Triton's JIT does with an integer argument equal to 1 (Triton drops it
# from the kernel's parameters, which kpack's layout check sees); the
# launcher runs them only when the value is 1 and then leaves it out of the
# arguments.
cat > m/add.py <<'PY'
import triton
import triton.language as tl


@triton.jit
def add(x, y, out, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs * stride, tl.load(x + offs * stride, mask=mask) + tl.load(y + offs * stride, mask=mask), mask=mask)
PY
sed -i 's/  - {name: n, type: i64}/  - {name: n, type: i64}\n  - {name: stride, type: i64, equal_to_1: auto}/' m/add.yaml
rm -rf work
if build && grep -q '8 units (4 of aligned and i32 variants): 8 compiled, 0 from cache' log \
   && grep -q '"equal_to_1":true,"name":"stride","triton_type":"i32"' $u.aligned.i32.sm_90a.json \
   && ! grep -q equal_to_1 $u.sm_90a.json \
   && grep -q 'const int kpack_aligned = (((uint64_t)(uintptr_t)x | (uint64_t)(uintptr_t)y | (uint64_t)(uintptr_t)out | (uint64_t)n) & 15) == 0 && stride == 1;' out/tk.c \
   && grep -q 'void \*\*kpack_args = kpack_b->ones ? kpack_args_ones : kpack_args_all;' out/tk.c \
   && grep -q ' \*   taken as the constant 1 (they are 1): stride;' out/tk.h; then
  pass "equal_to_1: auto builds the aligned builds with the constant 1, checked without the param, run when it is 1"
else
  fail "equal_to_1"; cat log; cat out/tk.c 2>/dev/null | sed -n '/^kpack_status tk_add_f16_b1024_w4(/,/^}/p'
fi
write_package

# 2. A manifest constexpr the kernel lacks: found when the source is read,
# before any unit compiles.
sed -i 's/{name: BLOCK, type: int, values: \[1024\], tag: b}/{name: BLOCK, type: int, values: [1024], tag: b}\n  - {name: EXTRA, type: int, values: [1]}/' m/add.yaml
build; rc=$?
if [ $rc -eq 1 ] && [ "$(cat log)" = "m/add.yaml:9:5: error: constexpr 'EXTRA' is not a tl.constexpr parameter of add (its tl.constexpr parameters: BLOCK)" ] \
   && [ ! -e out/tk.h ]; then
  pass "a manifest constexpr the kernel lacks: one error at the manifest's line and no other output (no unit ran)"
else
  fail "extra constexpr (rc=$rc)"; cat log
fi
write_package

# 3. A kernel constexpr the manifest lacks (and no default in the source):
# at the source's line.
sed -i 's/def add(x, y, out, n, BLOCK: tl.constexpr):/def add(x, y, out, n, BLOCK: tl.constexpr, SCALE: tl.constexpr):/' m/add.py
build; rc=$?
if [ $rc -eq 1 ] && [ "$(cat log)" = "m/add.py:6:44: error: add's tl.constexpr parameter 'SCALE' has no values in the manifest's constexprs and no default (m/add.yaml lists the values to build)" ]; then
  pass "a kernel constexpr the manifest lacks, at the source's line"
else
  fail "missing constexpr (rc=$rc)"; cat log
fi
# ... and with a default in the source it takes the default.
sed -i 's/SCALE: tl.constexpr):/SCALE: tl.constexpr = 2):/' m/add.py
build && pass "a kernel constexpr with a default needs no manifest entry" || { fail "constexpr default"; cat log; }
write_package

# 4. Params out of order.
sed -i 's/def add(x, y, out, n,/def add(x, y, n, out,/' m/add.py
build; rc=$?
if [ $rc -eq 1 ] && [ "$(cat log)" = "m/add.yaml:10:1: error: the manifest's params (x, y, out, n) are not add's runtime parameters in order (x, y, n, out); mark params the kernel does not take launch_only: true" ]; then
  pass "params that differ from the kernel's"
else
  fail "param order (rc=$rc)"; cat log
fi
write_package

# 5. Triton's own compile error is shown (a range Triton refuses: not a
# power of two), at the kernel's line and column, under kpack's error that
# names the kernel and specialization, once for the four units.
sed -i 's/tl.arange(0, BLOCK)/tl.arange(0, BLOCK - 1)/' m/add.py
build; rc=$?
if [ $rc -eq 1 ] && grep -q "^m/add.yaml:1:9: error: Triton failed (exit code 1) for kernel 'add' specialization add_f16_b1024_w4 (T=f16, BLOCK=1024, num_warps=4) for sm_80$" log \
   && [ "$(grep -A1 -x "m/add.py:7:39: error: arange's range must be a power of 2" log | tail -1)" = "Triton failed to compile add: CompilationError: at 2:38:" ] \
   && [ "$(grep -c "arange's range must be a power of 2" log)" = 2 ] \
   && grep -q "^note: 3 more unit(s) of kernel 'add' failed with the same output" log; then
  pass "Triton's compile error is shown at the kernel's line, with kernel and specialization, once"
else
  fail "Triton compile error (rc=$rc)"; cat log
fi
write_package

# 6. No Python (or no Triton): say how to install it.
install_hint="  install it with: python3 -m pip install triton==3.6.0 (or run .ci/setup, which makes .venv), and name that Python with --python (Meson: -Dpython)"
build --python /nonexistent/python3; rc=$?
if [ $rc -eq 1 ] && grep -qxF "m/add.yaml:1:9: error: Triton kernels need Python 3 with Triton 3.6 to 3.9 at build time (cannot run /nonexistent/python3: No such file or directory)" log \
   && grep -qxF "$install_hint" log && [ ! -e out ]; then
  pass "missing Python: how to install it"
else
  fail "missing python (rc=$rc)"; cat log
fi

# 6a. A Triton outside 3.6 to 3.9 (a stand-in package first on the path):
# refused with the range and the Python, before anything is compiled.
mkdir -p fake/triton/backends
printf '__version__ = "3.10.0"\n' > fake/triton/__init__.py
: > fake/triton/backends/__init__.py
printf 'class GPUTarget:\n    pass\n' > fake/triton/backends/compiler.py
executable=$("$python" -c 'import sys; print(sys.executable)')
PYTHONPATH=$PWD/fake build; rc=$?
if [ $rc -eq 1 ] && grep -qxF "m/add.yaml:1:9: error: Triton kernels need Python 3 with Triton 3.6 to 3.9 at build time (kpack supports Triton 3.6 to 3.9; found 3.10.0 in $executable)" log \
   && grep -qxF "$install_hint" log && [ ! -e out ]; then
  pass "Triton 3.10: refused, naming the supported range and the Python"
else
  fail "unsupported Triton (rc=$rc)"; cat log
fi
rm -rf fake

# 6b. The debug guard on a Triton kernel: `debug: true` (Triton's debug=True)
# is refused in a release build at the key, writing nothing; allowed, it is
# compiled with debug on and recorded as debug in the inventory and by inspect.
write_package
sed -i 's/archs: \[sm_80, sm_90\]/archs: [sm_80]/' m/kpack.yaml
sed -i 's/values: \[4, 8\], tag: w/values: [4], tag: w/' m/add.yaml
printf 'debug: true\n' >> m/add.yaml
build --inventory out/tk.json; rc=$?
if [ $rc -eq 1 ] && grep -qx "m/add.yaml:17:1: error: kernel 'add' is a debug build (debug: true) and this is a release build; debug kernels run many times slower. Remove it, or add 'allow_debug: true' to the manifest to ship a debug kernel" log \
   && [ ! -e out ] && ! grep -qs '"debug":true' work/units/add_f16_b1024_w4.sm_80.json; then
  pass "a Triton kernel with debug: true is refused in a release build, at the key, with nothing written"
else
  fail "Triton debug refused (rc=$rc)"; cat log
fi
build --inventory out/tk.json --allow-debug-kernels; rc=$?
if [ $rc -eq 0 ] && grep -q '"debug":true' work/units/add_f16_b1024_w4.sm_80.json \
   && grep -q '"num_debug_specializations": 1' out/tk.json && grep -q '"build_mode": "debug"' out/tk.json \
   && ! grep -q '"build_mode": "release"' out/tk.json && grep -q 'info->build_mode = "debug";' out/tk.c \
   && cc -c out/tk.S -o fatbins.o && "$kpack" inspect fatbins.o > inspect.txt \
   && awk -v v="$("$python" -c 'import triton; print(triton.__version__)')" \
        'NR == 1 { h = ($10 == "triton") } NR == 2 { exit !(h && $1 == "add" && $2 == "add_f16_b1024_w4" && $3 == "sm_80" && $9 == "debug" && $10 == v) }' inspect.txt \
   && grep -q "1 DEBUG images (slow)" inspect.txt; then
  pass "allowed, a Triton debug kernel builds with debug=True and is recorded as debug (inventory, build_info, inspect, which shows its Triton)"
else
  fail "Triton debug allowed (rc=$rc)"; cat log; cat out/tk.json inspect.txt 2>/dev/null
fi

# 6c. An environment variable that may change Triton's code (here its ptxas,
# the one Triton would use anyway) is part of the helper's identity line:
# of every Triton unit's cache key (tests/compiler/plan_test.cc) and of the
# inventory, which names it; one that only moves files is not.
write_package
sed -i 's/archs: \[sm_80, sm_90\]/archs: [sm_80]/' m/kpack.yaml
ptxas=$("$python" -c 'import os, triton; print(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas"))')
TRITON_PTXAS_PATH=$ptxas TRITON_CACHE_DIR=$PWD/tcache build --inventory out/tk.json; rc=$?
if [ $rc -eq 0 ] && grep -q "\"triton\": \"triton [0-9.]* python [0-9.]* TRITON_PTXAS_PATH=$ptxas\"" out/tk.json; then
  pass "TRITON_PTXAS_PATH is part of the Triton identity (cache keys, inventory); TRITON_CACHE_DIR is not"
else
  fail "Triton codegen environment (rc=$rc)"; cat log; grep -A3 toolchain out/tk.json
fi

# 7. Device-side TMA descriptors need Triton's global scratch memory: the
# launcher asks the runtime for Triton's figure per program, right before
# the launch (tests/e2e/tma.sh and tests/runtime/tma_launch_test.cc go
# further).
write_package
cat > m/add.py <<'PY'
import triton
import triton.language as tl


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    desc = tl.make_tensor_descriptor(x, shape=[n], strides=[1], block_shape=[BLOCK])
    out_desc = tl.make_tensor_descriptor(out, shape=[n], strides=[1], block_shape=[BLOCK])
    offset = tl.program_id(0) * BLOCK
    out_desc.store([offset], desc.load([offset]))
PY
sed -i 's/archs: \[sm_80, sm_90\]/archs: [sm_90]/' m/kpack.yaml
build; rc=$?
if [ $rc -eq 0 ] && grep -q 'kpack_scratch_for_("add_f16_b1024_w4", stream, kpack_grid, 256, 128, 0, 1, kpack_scratch)' out/tk.c; then
  pass "a kernel needing global scratch gets Triton's figure (2 descriptors x 128 bytes a program) from the runtime"
else
  fail "global scratch (rc=$rc)"; cat log; grep -n scratch out/tk.c
fi

finish
