#!/usr/bin/env bash
# A CMake engine packaging its own kernels with kpack_add_package()
# (tests/cmake_engine: a CUDA and a Triton package in one program, run
# through the fake driver), with kpack found three ways: find_package from
# a `meson install --destdir` of this build, under Ninja and under Make, and
# add_subdirectory of packaging/cmake with KPACK_EXECUTABLE.  Rebuilds are
# counted from kpack's own Ninja log in each package's work directory: a
# no-op build runs nothing, a new value rebuilds one batch per arch of its
# package only; a bad manifest's error reaches the build output as kpack
# wrote it; CMake-side errors are checked word for word.  The unit cache is
# the main build's (CACHE_DIR), so only the first run compiles.
#
#   cmake_engine.sh SOURCE_DIR BUILD_DIR PREFIX LIBDIR CACHE_DIR KPACK FAKE_CUDA CUDA_ROOT PYTHON
set -u
src=$(realpath "$1") build=$(realpath "$2") prefix=$3 libdir=$4 cache=$5
kpack=$(realpath "$6") fake=$(realpath "$7") cuda_root=$8 python=$9
if ! "$python" -c 'import triton' 2>/dev/null; then
  echo "Triton is not installed for $python: skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
. "$src/tests/e2e/checks.sh"
fail() { failed=$((failed + 1)); echo "FAILED: $1"; [ -f log ] && sed 's/^/  | /' log | tail -40; }

stage=$work/stage
root=$stage$prefix
engine=$work/engine
cp -r "$src/tests/cmake_engine" "$engine"

# CMake wraps its messages and indents them: compare words, not lines.
flat() { tr '\n' ' ' < "$1" | tr -s ' '; }
expect_message() {  # description, the message as written
  if flat log | grep -qF -- "$2"; then pass "$1"; else fail "$1: want '$2'"; fi
}
configure() {  # build dir, generator, more cmake arguments...
  local dir=$1 generator=$2; shift 2
  cmake -S "$engine" -B "$dir" -G "$generator" -DKPACK_CUDA_ROOT="$cuda_root" -DKPACK_CACHE_DIR="$cache" \
    -DKPACK_PYTHON="$python" -DENGINE_FAKE_CUDA_DIR="$src/tests/fake_cuda" "$@" > log 2>&1
}
build() { cmake --build "$1" -j 2 > log 2>&1; }
# The program's own checks, and what it prints of each package.
run_engine() {  # build dir, axpy's specializations
  local want
  want="linalg: $2 specializations
activ: 2 specializations
axpy: no specialization T=bf16 ITEMS=1; built: $3
cmake engine: ok"
  if "$1/engine_test" "$fake" > log 2>&1 && [ "$(cat log)" = "$want" ]; then pass "$1: the program's launches check out"
  else fail "$1: engine_test (want: $want)"; fi
  readelf -d "$1/engine_test" | grep -q 'NEEDED.*libcuda' && fail "$1: engine_test links libcuda"
}
# Ninja edges kpack ran in a package's work directory since mark(): the
# lines its Ninja appended to .ninja_log, as unit and fatbin file names.
declare -A marks
mark() { local p; for p in linalg activ; do marks[$1/$p]=$(wc -l < "$1/$p.kpack/work/.ninja_log"); done; }
edges() {  # build dir, package
  tail -n +"$((marks[$1/$2] + 1))" "$1/$2.kpack/work/.ninja_log" | awk '{ n = split($4, p, "/"); print p[n - 1] "/" p[n] }' |
    sort | tr '\n' ' '
}
expect_edges() {  # description, build dir, linalg's edges, activ's edges
  local l a
  l=$(edges "$2" linalg) a=$(edges "$2" activ)
  if [ "$l" = "$3" ] && [ "$a" = "$4" ]; then pass "$1"
  else fail "$1: linalg ran '$l' (want '$3'), activ ran '$a' (want '$4')"; fi
}
built_f32_f16() {  # ITEMS values
  local out="" t i
  for t in f32 f16; do for i in "$@"; do out="$out${out:+, }T=$t ITEMS=$i"; done; done
  echo "$out"
}

# ---- The install ------------------------------------------------------------
# The runtime a CMake project compiles is every .c in the runtime's
# directory (KpackAddPackage.cmake's glob): runtime/meson.build must list
# exactly those, and install them with their headers.
listed=$(sed -n "/^kpack_runtime_sources = files(/,/^)/p; /^kpack_runtime_headers = files(/,/^)/p" \
           "$src/runtime/meson.build" | grep -o "'[^']*\.[ch]'" | tr -d "'" | sort | tr '\n' ' ')
present=$(cd "$src/runtime" && ls *.c *.h | sort | tr '\n' ' ')
[ "$listed" = "$present" ] && pass "runtime/meson.build lists every runtime source and header" ||
  fail "runtime/meson.build lists '$listed', runtime/ has '$present'"

meson install -C "$build" --no-rebuild --quiet --destdir "$stage" > log 2>&1 || fail "meson install"
missing=""
for f in bin/kpack "$libdir/cmake/kpack/kpackConfig.cmake" "$libdir/cmake/kpack/kpackConfigVersion.cmake" \
         "$libdir/cmake/kpack/KpackAddPackage.cmake" share/kpack/triton/triton_helper.py share/kpack/triton/kpack_jit.py \
         share/kpack/triton/kpack_slice.py share/kpack/triton/kpack_wrappers.py; do
  [ -f "$root/$f" ] || missing="$missing $f"
done
for f in $listed; do [ -f "$root/share/kpack/runtime/$f" ] || missing="$missing share/kpack/runtime/$f"; done
[ -z "$missing" ] && pass "meson install puts kpack's CMake package, compiler, helper and runtime in place" ||
  fail "meson install did not install:$missing"
# The package finds the prefix from its own place: Meson allows a libdir
# outside the prefix, the package does not.
meson setup "$work/outside" "$src" -Dtests=false -Dbundled=false -Dbench=false -Dkpack_exe="$kpack" \
  --prefix "$prefix" --libdir=/opt/kpack-lib > log 2>&1
grep -qF "ERROR: Problem encountered: kpack's CMake package finds the prefix from its own place, so libdir must be inside the prefix ($prefix), not /opt/kpack-lib" log &&
  pass "a libdir outside the prefix is refused" || fail "a libdir outside the prefix"

# ---- find_package, Ninja ----------------------------------------------------
nb=$work/ninja
if configure "$nb" Ninja -DCMAKE_PREFIX_PATH="$root" && grep -q "^-- kpack 0.1.0: $root/bin/kpack\$" log; then
  pass "find_package(kpack) from the staged install, with its version"
else fail "configure (Ninja, find_package)"; fi
command=$(grep -A1 '^build linalg.kpack/include/linalg.h ' "$nb/build.ninja" | sed -n 's/^  COMMAND = //p')
case "$command" in
  *" --root $engine --cuda-root $cuda_root --triton-helper $root/share/kpack/triton/triton_helper.py --ninja "*" --cache-dir $cache --python $python && "*)
    pass "kpack build gets the root, toolkit, helper, cache and Python" ;;
  *) fail "kpack's command line: $command" ;;
esac
grep -A1 '^build activ.kpack/include/activations.h ' "$nb/build.ninja" | grep -q -- " --cache-dir $cache -j 2 --python $python && " &&
  pass "JOBS reaches its package only" || fail "activ's -j 2"
build "$nb" && pass "Ninja builds both packages and the program" || fail "Ninja build"
run_engine "$nb" 4 "$(built_f32_f16 1 4)"
build "$nb" && grep -qx 'ninja: no work to do.' log && pass "Ninja: a no-op build runs nothing" || fail "Ninja no-op build"
# TUNER: the package's tuning harness, which lists the tuning work without a GPU.
"$nb/linalg-tune" --list > log 2>&1 &&
  grep -q '^{"kernel":{"name":"axpy",.*"key":\["n"\],"grid":\[\[4096,1048576\]\].*"tuned":\["ITEMS"\],"combos":\["T=f32","T=f16"\],"candidates":\["ITEMS=1","ITEMS=4"\]' log &&
  pass "TUNER builds the package's tuning harness, whose --list shows axpy's grid and candidates" ||
  { fail "linalg-tune --list"; cat log; }

mark "$nb"
sed -i 's/values: \[1, 4\], tag: items/values: [1, 4, 8], tag: items/' "$engine/manifests/axpy.yaml"
build "$nb"
expect_edges "Ninja: a new value reruns kpack for its package only, one batch per arch" "$nb" \
  "fatbins/axpy.batch-all.fatbin units/axpy.batch-all.sm_80.bin units/axpy.batch-all.sm_90.bin " ""
grep -q 'kpack: packaging manifests/activ.yaml' log && fail "Ninja: activ was packaged again"
run_engine "$nb" 6 "$(built_f32_f16 1 4 8)"

# The Triton kernel's source is in kpack's depfile too.
mark "$nb"
echo '# an edit' >> "$engine/kernels/leaky_relu.py"
build "$nb"
expect_edges "Ninja: editing the Triton source rebuilds its units only" "$nb" "" \
  "fatbins/leaky_relu_f32_b1024.fatbin fatbins/leaky_relu_f32_b256.fatbin units/leaky_relu_f32_b1024.sm_80.bin units/leaky_relu_f32_b256.sm_80.bin "

cp "$engine/manifests/axpy.yaml" axpy.good
sed -i 's/values: \[f32, f16\]/values: [f32, f16, q99]/' "$engine/manifests/axpy.yaml"
bad="$engine/manifests/axpy.yaml:6:47: error: unknown dtype 'q99' (expected one of: f32, f16, bf16, f64, i8, i16, i32, i64, u8, u16, u32, u64)"
if build "$nb"; then fail "Ninja: a bad manifest must fail the build"
else grep -qxF -- "$bad" log && pass "Ninja: kpack's error reaches the build output as it wrote it" || fail "Ninja: the error"; fi
cp axpy.good "$engine/manifests/axpy.yaml"
build "$nb" && pass "Ninja: fixed, it builds" || fail "Ninja: build after the fix"

# ---- add_subdirectory of the source tree, KPACK_EXECUTABLE -------------------
sb=$work/subdir
if configure "$sb" Ninja -DKPACK_SUBDIRECTORY="$src/packaging/cmake" -DKPACK_EXECUTABLE="$kpack" &&
   grep -q "^-- kpack 0.1.0: $kpack\$" log; then pass "add_subdirectory(packaging/cmake) with KPACK_EXECUTABLE"
else fail "configure (add_subdirectory)"; fi
grep -A1 '^build linalg.kpack/include/linalg.h ' "$sb/build.ninja" | grep -qF -- " --triton-helper $src/compiler/triton_helper.py " &&
  pass "the source tree's Triton helper" || fail "the source tree's helper"
build "$sb" && pass "add_subdirectory: Ninja builds both packages" || fail "add_subdirectory build"
grep -q "kpack_runtime.dir$src/runtime/kpack_runtime.c.o" "$sb/build.ninja" && pass "the source tree's runtime" ||
  fail "the runtime is not the source tree's"
run_engine "$sb" 6 "$(built_f32_f16 1 4 8)"

# ---- add_subdirectory, kpack built by Meson (ExternalProject) -----------------
# A stand-in for Meson (building kpack for real costs minutes): it records
# its calls, and `setup` writes a build.ninja whose compiler/kpack is a copy
# of this build's kpack, remade whenever kpack-src changes.
mkdir -p "$work/bin" && cp "$kpack" "$work/kpack-src"
cat > "$work/bin/meson" <<EOF
#!/bin/sh
echo "\$*" >> "$work/meson-calls"
if [ "\$1" = setup ]; then
  mkdir -p "\$2" && printf 'rule cp\n  command = cp \$in \$out\nbuild compiler/kpack: cp %s\n' "$work/kpack-src" > "\$2/build.ninja"
fi
EOF
chmod +x "$work/bin/meson"
eb=$work/external
configure "$eb" Ninja -DKPACK_SUBDIRECTORY="$src/packaging/cmake" -DKPACK_MESON="$work/bin/meson" &&
  grep -q "^-- kpack 0.1.0: $eb/kpack/kpack-meson/compiler/kpack\$" log &&
  pass "add_subdirectory without KPACK_EXECUTABLE: kpack from its Meson build" || fail "configure (ExternalProject)"
build "$eb" && pass "ExternalProject: Meson's kpack is built before the packages that need it" ||
  fail "ExternalProject build"
[ "$(cat "$work/meson-calls")" = "setup $eb/kpack/kpack-meson $src -Dbundled=false -Dtests=false -Dbench=false -Dtoolkit_root=$cuda_root --buildtype=release" ] &&
  pass "Meson builds only the compiler, for the toolkit" || fail "Meson's calls: $(cat "$work/meson-calls")"
run_engine "$eb" 6 "$(built_f32_f16 1 4 8)"
build "$eb" && ! grep -q 'kpack: packaging' log && pass "ExternalProject: an unchanged kpack reruns no package" ||
  fail "ExternalProject no-op build"
touch "$work/kpack-src"
build "$eb" && grep -q 'kpack: packaging manifests/linalg.yaml' log && grep -q 'kpack: packaging manifests/activ.yaml' log &&
  pass "ExternalProject: a rebuilt kpack reruns every package" || fail "ExternalProject: kpack changed"
cmake "$eb" -DKPACK_MESON_OPTIONS=-Dllvm_config=llvm-config-20 > log 2>&1 && build "$eb" &&
  [ "$(tail -n 1 "$work/meson-calls")" = "configure $eb/kpack/kpack-meson -Dbundled=false -Dtests=false -Dbench=false -Dtoolkit_root=$cuda_root --buildtype=release -Dllvm_config=llvm-config-20" ] &&
  pass "KPACK_MESON_OPTIONS reconfigures the Meson build" || fail "KPACK_MESON_OPTIONS: $(tail -n 1 "$work/meson-calls")"

# ---- FetchContent of a release archive ----------------------------------------
# The archive's layout (packaging/release.sh): the install's kpack files and
# packaging/cmake/CMakeLists.txt at its root.
(cd "$root" && tar -cJf "$work/kpack-archive.tar.xz" --transform 's|^|kpack-0.1.0/|' bin/kpack share/kpack \
   "$libdir/cmake/kpack" -C "$src/packaging/cmake" CMakeLists.txt)
fb=$work/fetch
configure "$fb" Ninja -DKPACK_ARCHIVE_URL="file://$work/kpack-archive.tar.xz" &&
  grep -q "^-- kpack 0.1.0: $fb/_deps/kpack-src/bin/kpack\$" log &&
  pass "FetchContent of a release archive: its bin/kpack, and version" || fail "configure (FetchContent)"
grep -A1 '^build linalg.kpack/include/linalg.h ' "$fb/build.ninja" |
  grep -qF -- " --triton-helper $fb/_deps/kpack-src/share/kpack/triton/triton_helper.py " &&
  grep -q "^build CMakeFiles/kpack_runtime.dir/_deps/kpack-src/share/kpack/runtime/kpack_runtime.c.o: " "$fb/build.ninja" &&
  pass "the archive's Triton helper and runtime" || fail "the archive's helper and runtime"
build "$fb" && pass "FetchContent: Ninja builds both packages" || fail "FetchContent build"
run_engine "$fb" 6 "$(built_f32_f16 1 4 8)"

# ---- find_package, Unix Makefiles --------------------------------------------
mb=$work/make
configure "$mb" "Unix Makefiles" -DCMAKE_PREFIX_PATH="$root" && pass "configure (Unix Makefiles)" || fail "configure (Make)"
build "$mb" && pass "Make builds both packages and the program" || fail "Make build"
run_engine "$mb" 6 "$(built_f32_f16 1 4 8)"
build "$mb" && ! grep -qE 'kpack: packaging|Building|Linking' log && pass "Make: a no-op build runs nothing" ||
  fail "Make no-op build"
mark "$mb"
sed -i 's/values: \[1, 4, 8\], tag: items/values: [1, 4, 8, 2], tag: items/' "$engine/manifests/axpy.yaml"
build "$mb"
expect_edges "Make: a new value reruns kpack for its package only, one batch per arch" "$mb" \
  "fatbins/axpy.batch-all.fatbin units/axpy.batch-all.sm_80.bin units/axpy.batch-all.sm_90.bin " ""
run_engine "$mb" 8 "$(built_f32_f16 1 4 8 2)"
sed -i 's/values: \[f32, f16\]/values: [f32, f16, q99]/' "$engine/manifests/axpy.yaml"
if build "$mb"; then fail "Make: a bad manifest must fail the build"
else grep -qxF -- "$bad" log && pass "Make: kpack's error reaches the build output as it wrote it" || fail "Make: the error"; fi

# ---- CMake-side errors, word for word (configure only) -----------------------
probe=$work/probe
mkdir -p "$probe/manifests"
cp "$engine/manifests/activ.yaml" "$probe/manifests/"
probe_case() {  # CMakeLists.txt body after cmake_minimum_required, then cmake arguments
  printf 'cmake_minimum_required(VERSION 3.20)\n%s\n' "$1" > "$probe/CMakeLists.txt"; shift
  rm -rf "$work/probe-build"
  ! cmake -S "$probe" -B "$work/probe-build" -G Ninja "$@" > log 2>&1
}
found='project(probe C ASM)
find_package(kpack REQUIRED)'

# Every argument reaches kpack build as its option, in the package's order;
# only a Debug build implies --allow-debug-kernels.
all_args='HEADER p_api.h ARCHS sm_80 sm_90 INCLUDE_DIRS inc PYTHON_PATH py COMPRESS size CACHE_DIR c LAUNCHER ccache
  JOBS 3 JOB_MEMORY 1024 BATCH 4 PYTHON /usr/bin/python3 ROOT . ALLOW_STALE_TUNING EXTRA_ARGS -v --quiet'
pb=$work/probe-build
wiring() {  # description, kpack_add_package's arguments, build type, the options kpack gets after --ninja X
  local command
  printf 'cmake_minimum_required(VERSION 3.20)\n%s\nkpack_add_package(p manifests/activ.yaml %s)\n' "$found" "$2" \
    > "$probe/CMakeLists.txt"
  rm -rf "$pb"
  cmake -S "$probe" -B "$pb" -G Ninja -DCMAKE_PREFIX_PATH="$root" -DKPACK_CUDA_ROOT="$cuda_root" -DCMAKE_BUILD_TYPE="$3" \
    > log 2>&1
  command=$(grep -A1 '^build p.kpack/include/' "$pb/build.ninja" | sed -n 's/^  COMMAND = //p')
  case "$command" in
    *" --root $probe --cuda-root $cuda_root --triton-helper $root/share/kpack/triton/triton_helper.py --ninja "*" $4 && "*)
      pass "$1" ;;
    *) fail "$1: $command" ;;
  esac
}
wiring "every argument reaches kpack build" "$all_args" Release \
  "--archs sm_80,sm_90 -I $probe/inc --python-path $probe/py --compress-mode size --cache-dir $pb/c --nvcc-launcher ccache -j 3 --job-memory 1024 --batch 4 --python /usr/bin/python3 --allow-stale-tuning -v --quiet"
grep -q "^build p.kpack/include/p_api.h " "$pb/build.ninja" && pass "HEADER names the header" || fail "HEADER"
wiring "a Debug build allows debug kernels" "JOBS 1" Debug "-j 1 --allow-debug-kernels"
wiring "RelWithDebInfo refuses them" "JOBS 1" RelWithDebInfo "-j 1"
wiring "ALLOW_DEBUG_KERNELS allows them" "JOBS 1 ALLOW_DEBUG_KERNELS" RelWithDebInfo "-j 1 --allow-debug-kernels"
probe_case "$found
kpack_add_package(p manifests/activ.yaml ARCH sm_80 JOBS)" -DCMAKE_PREFIX_PATH="$root" &&
  expect_message "an unknown argument" "kpack_add_package(p): unknown arguments: ARCH sm_80"
probe_case "$found
kpack_add_package(p manifests/activ.yaml JOBS)" -DCMAKE_PREFIX_PATH="$root" &&
  expect_message "a keyword without its value" "kpack_add_package(p): no value for JOBS"
probe_case "$found
kpack_add_package(p manifests/missing.yaml)" -DCMAKE_PREFIX_PATH="$root" &&
  expect_message "a missing package file" "kpack_add_package(p): no package file $probe/manifests/missing.yaml"
probe_case "$found
kpack_add_package(p manifests/activ.yaml)" -DCMAKE_PREFIX_PATH="$root" -DKPACK_CUDA_ROOT="$work/no-cuda" &&
  expect_message "no toolkit" "kpack_add_package(p): no cuda.h in KPACK_CUDA_ROOT ($work/no-cuda/include): set KPACK_CUDA_ROOT to the CUDA Toolkit's root"
probe_case 'project(probe C CXX)
find_package(kpack REQUIRED)
kpack_add_package(p manifests/activ.yaml)' -DCMAKE_PREFIX_PATH="$root" &&
  expect_message "ASM not enabled" "kpack_add_package(p): enable the C and ASM languages first (project(<name> C CXX ASM) or enable_language(C ASM)): the launchers are C and the fatbins are embedded by a .S file"
probe_case "project(probe C ASM)
include($src/packaging/cmake/KpackAddPackage.cmake)
kpack_add_package(p manifests/activ.yaml)" &&
  expect_message "no kpack::kpack" "kpack_add_package(p): no kpack::kpack here: call find_package(kpack) in this directory or a parent, or add_subdirectory(<kpack>/packaging/cmake) before"
# An install that lacks a file: find_package says which, and fails.
mkdir -p "$work/broken/$libdir/cmake" && cp -r "$root/$libdir/cmake/kpack" "$work/broken/$libdir/cmake/"
probe_case "$found" -DCMAKE_PREFIX_PATH="$work/broken" &&
  expect_message "an incomplete install" "the kpack install is incomplete: no $work/broken/bin/kpack"
# packaging/cmake: a KPACK_EXECUTABLE that is not there; no Meson to build
# kpack with (system paths off, PATH empty); neither a tree nor an archive.
nothing='project(probe NONE)'
probe_case "$nothing
add_subdirectory($src/packaging/cmake kpack)" -DKPACK_EXECUTABLE="$work/no-kpack" &&
  expect_message "a KPACK_EXECUTABLE that is not there" "kpack: KPACK_EXECUTABLE is not a file: $work/no-kpack"
ninja_prog=$(command -v ninja)
rm -rf "$work/probe-build"
printf 'cmake_minimum_required(VERSION 3.20)\n%s\nadd_subdirectory(%s kpack)\n' "$nothing" "$src/packaging/cmake" > "$probe/CMakeLists.txt"
! env PATH="$work/empty" "$(command -v cmake)" -S "$probe" -B "$work/probe-build" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja_prog" \
    -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF > log 2>&1 &&
  expect_message "no Meson" "kpack: building kpack from its sources needs Meson, Ninja, LLVM 19 and yaml-cpp; not found: meson, ninja (install it, or set KPACK_EXECUTABLE to a kpack built elsewhere)"
mkdir -p "$work/elsewhere" && cp "$src/packaging/cmake/CMakeLists.txt" "$src/packaging/cmake/KpackAddPackage.cmake" "$work/elsewhere/"
probe_case "$nothing
add_subdirectory($work/elsewhere kpack)" &&
  expect_message "neither a source tree nor an archive" "kpack: $work/elsewhere is neither packaging/cmake in a kpack source tree nor the root of a kpack release archive (bin/kpack, share/kpack/runtime/kpack.h, lib/cmake/kpack/KpackAddPackage.cmake)"

finish
