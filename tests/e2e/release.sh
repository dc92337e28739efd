#!/usr/bin/env bash
# The release archive end to end (packaging/release.sh; docs/shipping.md,
# "Release archive"): pack it from a build of this tree, check its layout,
# its kpack (stripped, no LLVM or yaml-cpp) and the script's refusals word
# for word, then unpack it and, in a bubblewrap sandbox where LLVM, yaml-cpp
# and this checkout are hidden, build engines with it:
#  - tests/subproject/engine, with the archive as its Meson subproject
#    (a [wrap-file] from subprojects/packagecache);
#  - tests/make_engine with plain Make, and again after an edit (the depfile);
#  - tests/cmake_engine through find_package, and the Make engine's sources
#    through FetchContent(URL file://<archive>) and add_subdirectory(<root>);
#  - a Triton package with kpack finding its helper by itself, and a kpack
#    without its share/ refusing it.
# Each engine's launches are checked through the fake driver.  The Make
# engine is also built outside the sandbox against a plain `meson install`.
#
# The archive's kpack is STATIC_KPACK: this build's own objects linked
# statically (compiler/meson.build, kpack-static), so the test costs a link,
# not a second build of the compiler; the archive is packed from a build
# directory that installs it (-Dkpack_exe).  The unit cache is the main
# build's (CACHE_DIR): only new packages compile.
#
#   release.sh SOURCE_DIR BUILD_DIR STATIC_KPACK KPACK FAKE_CUDA CACHE_DIR CUDA_ROOT PYTHON
# (inside the sandbox it runs itself as: release.sh --inside WORK)
set -u

# ---- Inside the sandbox ------------------------------------------------------
if [ "${1:-}" = "--inside" ]; then
  work=$2
  . "$work/t/env.sh"
  . "$work/t/checks.sh"
  fail() { failed=$((failed + 1)); echo "FAILED: $1"; [ -f "$work/log" ] && sed 's/^/  | /' "$work/log" | tail -30; }
  log=$work/log
  root=$work/prefix/kpack-$version
  cd "$work"

  [ "$("$root/bin/kpack" --version 2>&1)" = "kpack $version" ] && pass "sandbox: kpack --version" ||
    fail "sandbox: kpack --version"
  ! ldd "$root/bin/kpack" | grep -q 'not found' && pass "sandbox: kpack finds every library it needs" ||
    { ldd "$root/bin/kpack" > "$log" 2>&1; fail "sandbox: ldd kpack"; }
  # The sandbox does hide LLVM: this build's kpack, if it links LLVM, cannot start here.
  if [ -n "$dynamic_llvm" ]; then
    "$work/t/kpack-dynamic" --version > "$log" 2>&1
    [ $? -eq 127 ] && grep -q "$dynamic_llvm: cannot open shared object file" "$log" &&
      pass "sandbox: LLVM is hidden ($dynamic_llvm)" || fail "sandbox: the dynamic kpack started"
  fi

  # Checks a package's first launch through the fake driver: the kernel's
  # entry, grid and block.  check_launch BUILD_DIR INCLUDE_DIR LIB HEADER LAUNCH ENTRY GRID BLOCK
  check_launch() {
    local what=$1 inc=$2 lib=$3 header=$4 launch=$5 entry=$6 grid=$7 block=$8
    cc -std=c11 -o "$work/check_$what" "$work/t/check_launch.c" -I"$inc" -I"$root/share/kpack/runtime" \
       -I"$work/t" "-DHEADER=\"$header\"" "-DLAUNCH=$launch" "$lib" -ldl -lpthread > "$log" 2>&1 &&
      "$work/check_$what" "$work/t/libfakecuda.so" > "$log" 2>&1 &&
      [ "$(cat "$log")" = "$entry grid $grid block $block" ] &&
      pass "$what: the launch reaches $entry through the fake driver" || fail "$what: the launch"
  }

  # -- The Meson engine, kpack's archive as its subproject ([wrap-file]) ------
  engine=$work/meson-engine
  cp -r "$work/t/subproject-engine" "$engine"
  mkdir -p "$engine/subprojects/packagecache"
  cp "$archive" "$engine/subprojects/packagecache/"
  printf '[wrap-file]\ndirectory = kpack-%s\nsource_url = file://%s\nsource_filename = %s\nsource_hash = %s\n' \
    "$version" "$archive" "$(basename "$archive")" "$(sha256sum "$archive" | cut -d' ' -f1)" \
    > "$engine/subprojects/kpack.wrap"
  if (cd "$engine" && meson setup build -Dkpack:kpack_cache_dir="$cache" -Dkpack:python="$python" > "$log" 2>&1 &&
      meson compile -C build > "$log" 2>&1); then
    pass "meson engine: builds with the archive as subproject, without LLVM or yaml-cpp"
  else fail "meson engine: build"; fi
  grep -q "subprojects/kpack-$version/bin/kpack build " "$engine/build/build.ninja" &&
    pass "meson engine: packages with the archive's bin/kpack" || fail "meson engine: kpack_package_command"
  expected="package engine, kpack $version, ABI 1, release, 2 specializations
scale_f32: sm_80, release, BYTES
scale_f16: sm_80, release, BYTES
KPACK_ERROR_NO_SPECIALIZATION: scale: no specialization T=bf16; built: T=f32, T=f16"
  [ "$("$engine/build/engine" 2>&1 | sed -E 's/[0-9]+ bytes$/BYTES/')" = "$expected" ] &&
    pass "meson engine: the program runs" || { "$engine/build/engine" > "$log" 2>&1; fail "meson engine: output"; }
  check_launch meson-engine "$engine/build" "$engine/build/libengine.a" engine.h \
    'engine_scale(NULL, KPACK_DTYPE_F32, x, x, 2.0f, 1000)' kpack_engine_scale_f32 4 256

  # The Meson project's refusals (configure only, the archive unpacked as subprojects/kpack).
  glue_error() {  # description, message, the archive root to use, meson setup options...
    local what=$1 message=$2 from=$3; shift 3
    rm -rf "$work/glue" && mkdir -p "$work/glue/subprojects" && cp -r "$from" "$work/glue/subprojects/kpack"
    printf "project('glue', 'c')\nkpack = subproject('kpack', default_options : ['tests=false', 'bench=false', 'bundled=false'])\n" \
      > "$work/glue/meson.build"
    ! (cd "$work/glue" && meson setup build "$@" > "$log" 2>&1) && grep -qF -- "ERROR: Problem encountered: $message" "$log" &&
      pass "meson glue: $what" || fail "meson glue: $what"
  }
  glue_error "refuses bundled=true" "-Dkpack:bundled=true: kpack's release archive holds only the compiler and the runtime; build kpack's source tree for its tests, benchmarks and bundled kernels" \
    "$root" -Dkpack:bundled=true
  glue_error "refuses a kpack that does not run" "cannot run $(type -P false) --version (exit code 1)" \
    "$root" -Dkpack:kpack_exe="$(type -P false)"
  cp -r "$root" "$work/other" && echo 9.9.9 > "$work/other/VERSION"
  glue_error "refuses a kpack of another release" "$work/glue/subprojects/kpack/bin/kpack is \"kpack $version\", not kpack 9.9.9 as this archive's VERSION says" \
    "$work/other"

  # -- The plain-Make engine -----------------------------------------------------
  cp -r "$work/t/make-engine" "$work/make-engine"
  mk() { make -C "$work/make-engine" KPACK_PREFIX="$root" O="$work/make" KPACK_FLAGS="--cache-dir $cache" "$@"; }
  mk > "$log" 2>&1 && pass "make engine: builds against the unpacked archive" || fail "make engine: build"
  make_expected="package vec, kpack $version, ABI 1, release, 2 specializations
clamp_f32: sm_80, release, BYTES
clamp_f16: sm_80, release, BYTES
KPACK_ERROR_NO_SPECIALIZATION: clamp: no specialization T=bf16; built: T=f32, T=f16"
  [ "$("$work/make/engine" 2>&1 | sed -E 's/[0-9]+ bytes$/BYTES/')" = "$make_expected" ] &&
    pass "make engine: the program runs" || { "$work/make/engine" > "$log" 2>&1; fail "make engine: output"; }
  check_launch make-engine "$work/make" "$work/make/libengine.a" vec.h \
    'vec_clamp(NULL, KPACK_DTYPE_F16, x, x, -1.0f, 1.0f, 1000)' kpack_vec_clamp_f16 8 128
  mk > "$log" 2>&1 && ! grep -q 'kpack build' "$log" && pass "make engine: nothing changed, kpack does not run" ||
    fail "make engine: a no-op make ran kpack"
  # An edit of the kernel's source (in kpack's depfile) reruns kpack, which
  # rebuilds the one batch, and relinks.
  sed -i 's|// The plain-Make|// (edited) The plain-Make|' "$work/make-engine/kernels/clamp.cuh"
  mk > "$log" 2>&1 && grep -q 'kpack build' "$log" && grep -q 'unit clamp.batch-all.sm_80' "$log" &&
    grep -q -- '-o .*/make/engine ' "$log" && pass "make engine: editing the kernel reruns kpack and relinks" ||
    fail "make engine: the edit did not rebuild"

  # -- CMake ------------------------------------------------------------------------
  # The Make engine's sources as a CMake project, kpack from the archive by
  # FetchContent(URL) or add_subdirectory(<unpacked root>).
  cm=$work/cmake-vec
  cp -r "$work/t/make-engine" "$cm" && rm -f "$cm/Makefile"
  cat > "$cm/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(vec_engine C ASM)
if(KPACK_ARCHIVE)
  include(FetchContent)
  FetchContent_Declare(kpack URL "file://${KPACK_ARCHIVE}" DOWNLOAD_EXTRACT_TIMESTAMP TRUE)
  FetchContent_MakeAvailable(kpack)
else()
  add_subdirectory("${KPACK_ROOT}" kpack)
endif()
message(STATUS "kpack ${kpack_VERSION}: ${kpack_EXECUTABLE}")
kpack_add_package(vec manifests/vec.yaml)
add_executable(engine main.c)
target_link_libraries(engine PRIVATE vec)
CMAKE
  cmake_vec() {  # build directory, what, cmake -D options...
    local dir=$work/$1 what=$2; shift 2
    if cmake -S "$cm" -B "$dir" -G Ninja -DKPACK_CUDA_ROOT="$cuda_root" -DKPACK_CACHE_DIR="$cache" "$@" > "$log" 2>&1 &&
       grep -q -- "-- kpack $version: .*/bin/kpack\$" "$log" && cmake --build "$dir" > "$log" 2>&1 &&
       [ "$("$dir/engine" 2>&1 | sed -E 's/[0-9]+ bytes$/BYTES/')" = "$make_expected" ]; then
      pass "cmake: $what: builds and runs"
    else fail "cmake: $what"; fi
  }
  cmake_vec cmake-fetch "FetchContent(URL file://<archive>)" -DKPACK_ARCHIVE="$archive"
  cmake_vec cmake-subdir "add_subdirectory(<unpacked root>)" -DKPACK_ROOT="$root"
  grep -qF -- "--triton-helper $root/share/kpack/triton/triton_helper.py" "$work/cmake-subdir/build.ninja" &&
    pass "cmake: the archive's Triton helper" || fail "cmake: the helper"

  # -- Triton: kpack finds its helper by itself, or says where it looked -------------
  if [ "$triton" = yes ]; then
    mkdir -p "$work/tk/m" && cd "$work/tk"
    printf 'package: tk\narchs: [sm_80]\nkernels: [add.yaml]\n' > m/kpack.yaml
    printf 'import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef add(x, out, n, BLOCK: tl.constexpr):\n    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    tl.store(out + offs, tl.load(x + offs, mask=offs < n) + 1, mask=offs < n)\n' > m/add.py
    printf 'kernel: add\nlanguage: triton\nsource: add.py\nentry: add\nvariants: none\nconstexprs:\n  - {name: BLOCK, type: int, values: [256], tag: b}\nparams:\n  - {name: x, type: const f32*}\n  - {name: out, type: f32*}\n  - {name: n, type: i32}\nlaunch:\n  grid: ["cdiv(n, BLOCK)"]\n' > m/add.yaml
    tk() { "$1" build m/kpack.yaml --header out/tk.h --launcher out/tk_launch.c --asm out/tk.S --work-dir out/w \
             --python "$python" --cache-dir "$cache" --quiet; }
    tk "$root/bin/kpack" > "$log" 2>&1 && [ -f out/tk.h ] &&
      pass "triton: kpack finds share/kpack/triton/triton_helper.py by itself" || fail "triton: build with the default helper"
    mkdir -p "$work/lonely/bin" && cp "$root/bin/kpack" "$work/lonely/bin/"
    rm -rf out
    tk "$work/lonely/bin/kpack" > "$log" 2>&1; rc=$?
    want="m/add.yaml:1:9: error: Triton kernels need kpack's Triton helper, which is not at $work/lonely/share/kpack/triton/triton_helper.py
  install kpack with its share/kpack/triton (meson install, or the release archive), or pass --triton-helper PATH"
    [ $rc -eq 1 ] && [ "$(cat "$log")" = "$want" ] && [ ! -e out/tk.h ] &&
      pass "triton: a kpack without its share/ says where it looked" || fail "triton: the missing helper (rc=$rc)"
    cd "$work"

    # tests/cmake_engine (a CUDA and a Triton package) through find_package.
    if [ -d "$work/t/cmake-engine" ]; then
      if cmake -S "$work/t/cmake-engine" -B "$work/cmake-engine" -G Ninja -DCMAKE_PREFIX_PATH="$root" \
           -DKPACK_CUDA_ROOT="$cuda_root" -DKPACK_CACHE_DIR="$cache" -DKPACK_PYTHON="$python" \
           -DENGINE_FAKE_CUDA_DIR="$work/t" > "$log" 2>&1 && cmake --build "$work/cmake-engine" > "$log" 2>&1 &&
         "$work/cmake-engine/engine_test" "$work/t/libfakecuda.so" > "$log" 2>&1 && [ "$(tail -1 "$log")" = "cmake engine: ok" ]; then
        pass "cmake engine: find_package(kpack) from the archive; its launches check out"
      else fail "cmake engine"; fi
    fi
  fi
  finish
  exit
fi

# ---- Outside: pack, check, unpack, then the sandbox --------------------------------
src=$(realpath "$1") build=$(realpath "$2") static=$3 kpack=$(realpath "$4") fake=$(realpath "$5")
cache=$6 cuda_root=$7 python=$8
unavailable() {
  if [ "${CI:-}" = true ]; then echo "FAILED: $1 (CI=true: .ci/setup installs everything this test needs)"; exit 1; fi
  echo "skipped: $1"; exit 77
}
[ -n "$static" ] || unavailable "no static kpack: LLVM's or yaml-cpp's static libraries are missing"
static=$(realpath "$static")
command -v bwrap > /dev/null || unavailable "bubblewrap (bwrap) is not installed"
bwrap --ro-bind / / --dev /dev --proc /proc true 2> /dev/null || unavailable "bwrap cannot make a sandbox here"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$src/tests/e2e/checks.sh"
fail() { failed=$((failed + 1)); echo "FAILED: $1"; [ -f "$work/log" ] && sed 's/^/  | /' "$work/log" | tail -30; }
log=$work/log
version=$(meson introspect --projectinfo "$build" | python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
mkdir -p "$cache"

# -- Pack -------------------------------------------------------------------------------
# A build directory that installs the static kpack (-Dkpack_exe), as a
# -Dstatic_kpack=true build installs the one it links.
setup() {  # dir, kpack, meson options...
  local dir=$1 exe=$2; shift 2
  meson setup "$dir" "$src" -Dbundled=false -Dtests=false -Dbench=false -Dkpack_exe="$exe" \
    -Dtoolkit_root="$cuda_root" "$@" > "$log" 2>&1 || { fail "meson setup $dir"; finish; exit; }
}
setup "$work/dist" "$static" --libdir=lib
out=$work/out
if "$src/packaging/release.sh" "$work/dist" "$out" > "$log" 2>&1; then pass "release.sh packs the archive"
else fail "release.sh"; finish; exit; fi
archive=$out/kpack-$version-linux-x86_64.tar.xz
grep -qx "release.sh: wrote $archive ([0-9]* bytes); bin/kpack needs: .*" "$log" && cat "$log" &&
  [ "$(ls -A "$out")" = "$(basename "$archive")" ] && pass "release.sh: one archive, no temporary left" ||
  fail "release.sh's output"

# The layout, file by file.
expected=$(
  cd "$src" && {
    printf '%s\n' bin/kpack VERSION README.md meson.build meson_options.txt CMakeLists.txt \
      lib/cmake/kpack/kpackConfig.cmake lib/cmake/kpack/kpackConfigVersion.cmake lib/cmake/kpack/KpackAddPackage.cmake \
      share/kpack/kpack_tune_main.c share/kpack/kpack_tune.h
    for f in triton_helper.py kpack_jit.py kpack_slice.py kpack_wrappers.py; do echo "share/kpack/triton/$f"; done
    for f in runtime/*.c runtime/*.h; do echo "share/kpack/$f"; done
  } | sed "s|^|kpack-$version/|" | LC_ALL=C sort)
actual=$(tar -tJf "$archive" | grep -v '/$' | LC_ALL=C sort)
[ "$actual" = "$expected" ] && pass "the archive holds exactly the layout" ||
  { diff <(echo "$expected") <(echo "$actual") > "$log"; fail "the archive's layout (- expected, + actual)"; }
tar -tvJf "$archive" | awk '$2 != "0/0" { bad = 1 } END { exit bad }' && tar -tvJf "$archive" |
  grep -q "^-rwxr-xr-x 0/0 .* kpack-$version/bin/kpack$" && pass "owned by 0/0; bin/kpack is executable" ||
  fail "the archive's owners and modes"
mkdir -p "$work/prefix" && tar -C "$work/prefix" -xJf "$archive"
root=$work/prefix/kpack-$version
! readelf -S "$root/bin/kpack" | grep -q '\.symtab' && pass "bin/kpack is stripped" || fail "bin/kpack has a symbol table"
needed=$(readelf -d "$root/bin/kpack" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | LC_ALL=C sort | tr '\n' ' ')
echo "bin/kpack needs: $needed"
case " $needed" in
  *" libLLVM"*|*" libyaml-cpp"*) fail "bin/kpack needs LLVM or yaml-cpp: $needed" ;;
  *) pass "bin/kpack needs neither LLVM nor yaml-cpp" ;;
esac
# Packing again gives the same bytes.
"$src/packaging/release.sh" --no-rebuild "$work/dist" "$work/out2" > "$log" 2>&1 &&
  cmp -s "$archive" "$work/out2/$(basename "$archive")" && pass "release.sh is reproducible" ||
  fail "a second archive differs"

# -- release.sh's refusals, word for word; nothing written -----------------------------
refused() {  # description, message, release.sh arguments...
  local what=$1 message=$2; shift 2
  rm -rf "$work/bad"
  ! "$src/packaging/release.sh" "$@" > "$log" 2>&1 && [ "$(cat "$log")" = "release.sh: error: $message" ] &&
    [ -z "$(ls -A "$work/bad" 2>/dev/null)" ] && pass "release.sh refuses $what" || fail "release.sh: $what"
}
refused "a directory that is not a build" "$work/prefix is not a configured Meson build directory of kpack" \
  "$work/prefix" "$work/bad"
dynamic_llvm=$(readelf -d "$kpack" | sed -n 's/.*(NEEDED).*\[\(libLLVM.*\)\]/\1/p' | head -1)
setup "$work/dyn" "$kpack" --libdir=lib64
refused "another libdir" "the archive's layout needs --bindir=bin --datadir=share --libdir=lib; $work/dyn has bindir=bin, datadir=share, libdir=lib64 (meson configure $work/dyn --libdir=lib)" \
  "$work/dyn" "$work/bad"
if [ -n "$dynamic_llvm" ]; then
  meson configure "$work/dyn" --libdir=lib > "$log" 2>&1
  refused "a kpack that links LLVM" "bin/kpack needs $dynamic_llvm: the build links it dynamically; configure $work/dyn with -Dstatic_kpack=true" \
    "$work/dyn" "$work/bad"
fi

# -- The Make engine against a plain `meson install` (no sandbox) ------------------------
meson install -C "$work/dist" --no-rebuild --quiet --destdir "$work/stage" > "$log" 2>&1 || fail "meson install"
installed=$work/stage$(meson introspect --buildoptions "$work/dist" |
                       python3 -c 'import json, sys; print({o["name"]: o["value"] for o in json.load(sys.stdin)}["prefix"])')
cp -r "$src/tests/make_engine" "$work/make-installed"
make -C "$work/make-installed" KPACK_PREFIX="$installed" O="$work/make-installed/out" KPACK_FLAGS="--cache-dir $cache" \
  > "$log" 2>&1 && "$work/make-installed/out/engine" > "$log" 2>&1 &&
  pass "make engine: builds and runs against a meson install" || fail "make engine against the meson install"

# -- The sandbox ----------------------------------------------------------------------------
# What the sandbox needs from outside the checkout: the engines, the fake
# driver and its header, the launch checker, this script, checks.sh.
t=$work/t
mkdir -p "$t" "$work/home"
cp -r "$src/tests/subproject/engine" "$t/subproject-engine"
cp -r "$src/tests/make_engine" "$t/make-engine"
rm -rf "$t/make-engine/build"
[ -f "$src/tests/cmake_engine/CMakeLists.txt" ] && cp -r "$src/tests/cmake_engine" "$t/cmake-engine"
cp "$src/tests/fake_cuda/fake_cuda.h" "$fake" "$src/tests/e2e/checks.sh" "$0" "$t/"
[ "$(basename "$fake")" = libfakecuda.so ] || mv "$t/$(basename "$fake")" "$t/libfakecuda.so"
[ -n "$dynamic_llvm" ] && cp "$kpack" "$t/kpack-dynamic"
cat > "$t/check_launch.c" <<'C'
/* One launch of a package through the fake driver (argv[1]); prints the
 * kernel's entry, grid and block as the driver saw them. */
#include <stdio.h>

#include HEADER
#include "fake_cuda.h"
#include "kpack_internal.h" /* kpack_set_driver_path_for_testing */

int main(int argc, char **argv) {
  static float x[1024];
  fake_cuda_api fake;
  fake_cuda_launch launch;
  void *handle;
  kpack_status st;
  if (argc != 2 || (handle = dlopen(argv[1], RTLD_NOW)) == NULL || fake_cuda_bind(&fake, handle) != 0) return 2;
  kpack_set_driver_path_for_testing(argv[1]);
  (void)x;
  st = LAUNCH;
  if (st != KPACK_SUCCESS) {
    printf("%s: %s\n", kpack_status_name(st), kpack_last_error_detail());
    return 1;
  }
  if (!fake.last_launch(&launch)) return 1;
  printf("%s grid %u block %u\n", launch.entry, launch.grid[0], launch.block[0]);
  return 0;
}
C
# The Python of the Triton checks, as itself (a pyenv shim needs its HOME).
triton=no
if real_python=$("$python" -c 'import triton, sys; print(sys.executable)' 2>/dev/null); then triton=yes; python=$real_python; fi
python_prefix=$("$python" -c 'import sys; print(sys.prefix)' 2>/dev/null || true)
{
  printf 'version=%q archive=%q cache=%q cuda_root=%q python=%q triton=%q dynamic_llvm=%q\n' \
    "$version" "$archive" "$cache" "$cuda_root" "$python" "$triton" "$dynamic_llvm"
} > "$t/env.sh"

# Hidden: LLVM (every /usr/lib/llvm-*, the libLLVM files), yaml-cpp
# (library, headers, pkg-config and CMake files), this checkout and its
# build.  The root is read-only; the work directory and the unit cache are
# writable, /tmp is empty; no network.  A Python environment inside the
# checkout (.venv) stays visible: it is the Triton to use, not kpack.
hide=(--tmpfs /tmp)
for d in /usr/lib/llvm-* /usr/include/yaml-cpp /usr/lib/*/cmake/yaml-cpp /usr/lib/cmake/yaml-cpp; do
  [ -d "$d" ] && hide+=(--tmpfs "$d")
done
while IFS= read -r f; do hide+=(--ro-bind /dev/null "$f"); done < <(
  find /usr/lib /usr/local/lib -maxdepth 3 -type f \( -name 'libLLVM*.so*' -o -name 'libyaml-cpp*' -o -name 'yaml-cpp.pc' \) 2>/dev/null)
hide+=(--tmpfs "$src")
case $build/ in "$src"/*) ;; *) hide+=(--tmpfs "$build") ;; esac
case $python_prefix/ in "$src"/*) hide+=(--ro-bind "$python_prefix" "$python_prefix") ;; esac
bwrap --ro-bind / / --dev /dev --proc /proc "${hide[@]}" --bind "$work" "$work" --bind "$cache" "$cache" \
  --unshare-net --die-with-parent --setenv HOME "$work/home" --setenv CC cc --setenv CXX c++ \
  bash "$t/$(basename "$0")" --inside "$work" > "$work/inside.log" 2>&1
cat "$work/inside.log"
inner=$(tail -1 "$work/inside.log")
if [[ $inner =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
  passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
else
  fail "the sandbox did not finish"
fi
finish
