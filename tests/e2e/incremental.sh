#!/usr/bin/env bash
# Builds at scale, end to end (issues 5 and 18): each batch of a kernel's
# specializations (one arch, one nvcc run) is one Ninja edge, so kpack
# compiles exactly the batches that changed.  Counts come from `kpack build
# -v`: "N units: C compiled, H from cache, U up to date (nvcc batches: ...)".
#   incremental.sh KPACK CUDA_ROOT RUNTIME_INCLUDE_DIR
set -u
kpack=$(realpath "$1")
cuda_root=$2
runtime_inc=$(realpath "$3")
work=$(mktemp -d)
trap 'sccache --stop-server >/dev/null 2>&1; rm -rf "$work"' EXIT
cd "$work"
passed=0 failed=0 skipped=0
pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAILED: $1"; [ -f log ] && sed 's/^/  | /' log | tail -40; }
# A missing tool skips its cases, and then the whole test reports skipped
# (77) rather than passed; under CI=true a missing tool is a failure.
skip() {
  if [ "${CI:-}" = true ]; then fail "$1 (CI=true: every tool must be installed)"; return; fi
  skipped=$((skipped + 1)); echo "skipped: $1"
}
expect_counts() {  # description, expected "N units: ..." text
  if grep -q "^kpack: $2\$" log; then pass "$1"; else fail "$1 (want '$2', got '$(grep 'units:' log)')"; fi
}

# Two kernels: k1 with values B=1,2 (includes shared.cuh), k2 with B=1.
write_project() {  # dir
  mkdir -p "$1"
  cat > "$1/kpack.yaml" <<'YAML'
package: inc
archs: [sm_80, sm_90]
kernels: [k1.yaml, k2.yaml]
YAML
  for k in k1 k2; do
    cat > "$1/$k.yaml" <<YAML
kernel: $k
source: $k.cuh
entry: $k
constexprs:
  - {name: B, type: int, values: [$([ $k = k1 ] && echo 1, 2 || echo 1)], tag: b}
params:
  - {name: n, type: i64}
  - {name: out, type: f32*}
launch: {grid: 1, block: 32}
YAML
  done
  echo '__device__ __forceinline__ float scale() { return 2.0f; }' > "$1/shared.cuh"
  cat > "$1/k1.cuh" <<'CUH'
#include "shared.cuh"
template <int B> __device__ __forceinline__ void k1(int64_t n, float* out) {
  if (threadIdx.x < n) out[threadIdx.x] = B * scale();
}
CUH
  cat > "$1/k2.cuh" <<'CUH'
template <int B> __device__ __forceinline__ void k2(int64_t n, float* out) {
  if (threadIdx.x < n) out[threadIdx.x] = B;
}
CUH
}

build() {  # project dir, then extra options
  local dir=$1; shift
  "$kpack" build "$dir/kpack.yaml" --header out/inc.h --launcher out/inc.c --asm out/inc.S \
    --work-dir out/work --cache-dir cache --cuda-root "$cuda_root" -v "$@" > log 2>&1
}

write_project m
build m && expect_counts "first build compiles every unit" "6 units: 6 compiled, 0 from cache (nvcc batches: 2 compiled, 0 from cache, 0 up to date)"
# Progress: Ninja's status line, one per compile (k1's batch and k2's one
# unit, for 2 archs) and fatbin (2).
[ "$(grep -cE '^\[[1-6]/6\] unit (k1\.batch-all|k2_b1)\.sm_[89]0$' log)" = 4 ] &&
  pass "a build prints Ninja's [n/N] unit line for each compile" || fail "no [n/N] unit status lines"
cp out/inc.S first.S
build m && expect_counts "a no-op rebuild runs no unit" "6 units: 0 compiled, 0 from cache, 6 up to date (nvcc batches: 0 compiled, 0 from cache, 2 up to date)"
grep -q '\[.*\] unit' log && fail "no-op rebuild started a unit edge" || pass "no-op rebuild started no edge"

sed -i 's/values: \[1, 2\]/values: [1, 2, 3]/' m/k1.yaml
build m && expect_counts "adding a value compiles its batch, once per arch" "8 units: 6 compiled, 0 from cache, 2 up to date (nvcc batches: 2 compiled, 0 from cache, 0 up to date)"
grep -q 'k1_b3' out/inc.h && pass "the new specialization is in the header" || fail "k1_b3 missing from the header"

echo '// edited' >> m/k2.cuh
echo 'template <int B> __device__ __forceinline__ void unused_k2_helper() {}' >> m/k2.cuh
build m --quiet && expect_counts "editing a template rebuilds only its kernel's units" "8 units: 2 compiled, 0 from cache, 6 up to date (nvcc batches: 0 compiled, 0 from cache, 2 up to date)"
grep -qE '^\[[0-9]+/[0-9]+\]' log && fail "--quiet printed a status line" || pass "--quiet removes the status line"
echo '__device__ __forceinline__ float unused_helper() { return 1.0f; }' >> m/shared.cuh
build m && expect_counts "editing an included header rebuilds the units that read it" "8 units: 6 compiled, 0 from cache, 2 up to date (nvcc batches: 2 compiled, 0 from cache, 0 up to date)"
echo '// a comment only' >> m/shared.cuh
build m && expect_counts "a comment-only edit is served by the preprocessed key" "8 units: 0 compiled, 6 from cache, 2 up to date (nvcc batches: 0 compiled, 2 from cache, 0 up to date)"

# A clean rebuild with a warm cache compiles nothing; so does a copy of the
# project in another directory (the preprocessed key has no paths in it).
rm -rf out
build m && expect_counts "a clean rebuild with a warm cache compiles nothing" "8 units: 0 compiled, 8 from cache (nvcc batches: 0 compiled, 2 from cache, 0 up to date)"
cp out/inc.S clean.S
mkdir -p elsewhere/deeper && cp -r m elsewhere/deeper/m && rm -rf out
build elsewhere/deeper/m && expect_counts "another checkout shares the cache" "8 units: 0 compiled, 8 from cache (nvcc batches: 0 compiled, 2 from cache, 0 up to date)"

# Two checkouts share one cache directory, as a team shares one.  One is
# built through an absolute path (nvcc then records absolute inputs), the
# other from a build directory beside it, as Meson does, and its k1.cuh
# differs: it must compile its own k1 units, not be served the other's
# cubins (the direct key pins the include directories' absolute paths).
for t in one two; do mkdir -p $t/build && write_project $t/m; done
sed -i 's/B \* scale()/B * scale() + 1.0f/' two/m/k1.cuh
build "$work/one/m" --cache-dir "$work/shared-cache"
expect_counts "checkout one compiles its units" "6 units: 6 compiled, 0 from cache (nvcc batches: 2 compiled, 0 from cache, 0 up to date)"
(cd two/build && build ../m --root .. --cache-dir "$work/shared-cache"; cp log ../../log)
expect_counts "checkout two compiles its edited units, shares the others" "6 units: 4 compiled, 2 from cache (nvcc batches: 2 compiled, 0 from cache, 0 up to date)"
rm -rf out

# A corrupt cache entry is rebuilt, not trusted: truncate every entry.
rm -rf out
for f in cache/*/*.bin; do : > "$f"; done
build m && expect_counts "a corrupt cache is rebuilt" "8 units: 8 compiled, 0 from cache (nvcc batches: 2 compiled, 0 from cache, 0 up to date)"

# The unit pool: -j sets its depth; -j 0 (the default) is the cores, capped
# at physical memory / --job-memory MiB (getconf reads what kpack reads).
build m -j 1 && grep -q '^  depth = 1$' out/work/build.ninja && pass "-j 1 makes a pool of depth 1" || fail "pool depth"
memory_mib=$(( $(getconf _PHYS_PAGES) * $(getconf PAGE_SIZE) >> 20 )) cores=$(getconf _NPROCESSORS_ONLN)
for job_memory in 2048 $((memory_mib / 2)) $memory_mib; do
  want=$(( memory_mib / job_memory < cores ? memory_mib / job_memory : cores ))
  build m -j 0 --job-memory $job_memory && grep -qx "  depth = $want" out/work/build.ninja &&
    pass "-j 0 --job-memory $job_memory makes a pool of depth $want" ||
    fail "-j 0 --job-memory $job_memory: want depth $want, got '$(grep depth out/work/build.ninja)'"
done

# A kernel of 40 values is 5 to 10 batches of at most 8 per arch: adding a
# value compiles one batch per arch (unit test: or a batch split in two),
# and a bad value is reported at its own line while the other batches build.
mkdir -p big
cat > big/kpack.yaml <<'YAML'
package: big
archs: [sm_80, sm_90]
kernels: [k.yaml]
YAML
write_big() {  # values...
  printf 'kernel: k\nsource: k.cuh\nentry: k\nconstexprs:\n  - {name: V, type: int, values: [%s], tag: v}\n' \
    "$(echo "$@" | sed 's/ /, /g')" > big/k.yaml
  printf 'params:\n  - {name: out, type: f32*}\nlaunch: {grid: 1, block: 32}\n' >> big/k.yaml
}
echo 'template <int V> __device__ __forceinline__ void k(float* out) { static_assert(V != 99, "V = 99 is bad"); out[threadIdx.x] = V; }' > big/k.cuh
write_big $(seq 1 40)
build big && grep -q '^kpack: 80 units: 80 compiled, 0 from cache (nvcc batches: [0-9]* compiled' log &&
  pass "40 values x 2 archs build in batches" || fail "big first build"
batches=$(sed -n 's/.*(nvcc batches: \([0-9]*\) compiled.*/\1/p' log)
[ "$batches" -ge 10 ] && [ "$batches" -le 20 ] && pass "$batches batches of at most 8" || fail "batch count $batches"
write_big $(seq 1 41)
# One old batch per arch is replaced: by one with the new value, or (when
# that outgrows 8) by its two halves, which hold at most 8 + 1 units.
build big
counts=$(sed -n 's/^kpack: 82 units: \([0-9]*\) compiled, 0 from cache, [0-9]* up to date (nvcc batches: \([0-9]*\) compiled, 0 from cache, \([0-9]*\) up to date)$/\1 \2 \3/p' log)
read -r units_compiled batches_compiled batches_kept <<< "${counts:-0 0 0}"
[ "$batches_kept" = $((batches - 2)) ] && { [ "$batches_compiled" = 2 ] || [ "$batches_compiled" = 4 ]; } &&
  [ "$units_compiled" -le 18 ] && pass "adding a value to 40 compiles one batch per arch ($units_compiled units in $batches_compiled runs)" ||
  fail "big: one value added: $(grep 'units:' log)"
write_big $(seq 1 41) 99
if build big; then fail "V = 99 must fail"; else
  col=$(awk 'NR == 5 { print index($0, " 99]") + 1 }' big/k.yaml)
  grep -q "^big/k.yaml:5:$col: error: nvcc failed (exit code 1) for kernel 'k' specialization k_v99 (V=99) for sm_80\$" log &&
    pass "a bad value is reported at its own line, as itself" || fail "bad value's error"
  [ "$(ls out/work/units/*.bin | grep -c 'k[._]')" -ge "$batches" ] && pass "the other batches still built" ||
    fail "other batches not built"
fi

# A member that failed inside a batch leaves no error that a later build
# reads as its own: built one by one, then as a batch through a launcher
# that fails (as nvcc killed for memory), then one by one again (every unit
# up to date), the last build succeeds.
printf '#!/bin/sh\nexit 137\n' > failing-nvcc && chmod +x failing-nvcc
build m --batch 1 && ! build m --nvcc-launcher "$PWD/failing-nvcc" --cache-dir fresh-cache &&
  build m --batch 1 && grep -q '^kpack: 8 units: 0 compiled, ' log &&
  pass "a batch's failed members leave nothing behind for their own units" ||
  fail "a member's error outlived its batch: $(grep -E 'units:|error' log | head -3)"
build m > /dev/null

# A failing unit is reported once, at its kernel, and the build fails with
# no outputs changed; fixing it builds only that kernel.
cp m/k2.cuh k2.good
echo '__device__ void broken() { undefined_thing = 1; }' >> m/k2.cuh
sha_before=$(sha256sum out/inc.h)
if build m; then fail "a broken template must fail the build"
else
  grep -q "^m/k2.yaml:1:9: error: nvcc failed (exit code 1) for kernel 'k2' specialization k2_b1 (B=1) for sm_80\$" log &&
    pass "the failure names the kernel, specialization and arch" || fail "failure text"
  [ "$(sha256sum out/inc.h)" = "$sha_before" ] && pass "a failed build leaves the outputs alone" || fail "outputs changed"
fi
cp k2.good m/k2.cuh
build m && expect_counts "fixing it rebuilds only the broken units" "8 units: 0 compiled, 2 from cache, 6 up to date (nvcc batches: 0 compiled, 0 from cache, 2 up to date)"

# Compiler launchers: nvcc through ccache / sccache.  kpack's own cache is
# emptied between the two builds, so the second build's units reach nvcc's
# launcher, which must serve them.
launcher_case() {  # name, stats command
  local name=$1
  if ! command -v "$name" > /dev/null; then skip "$name is not installed"; return; fi
  rm -rf out cache
  build m --nvcc-launcher "$name" || { fail "build through $name"; return; }
  cp out/inc.S launcher1.S
  rm -rf out cache
  build m --nvcc-launcher "$name" && expect_counts "build through $name" "8 units: 8 compiled, 0 from cache (nvcc batches: 2 compiled, 0 from cache, 0 up to date)"
  cmp -s launcher1.S out/inc.S && pass "$name builds the same fatbins" || fail "$name output differs"
}
export CCACHE_DIR=$work/ccache
launcher_case ccache
if command -v ccache > /dev/null; then
  hits=$(ccache --print-stats | awk '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" {s += $2} END {print s + 0}')
  [ "$hits" -ge 4 ] && pass "ccache served the second build ($hits hits)" || fail "ccache hits: $hits"
fi
export SCCACHE_DIR=$work/sccache SCCACHE_IDLE_TIMEOUT=60
launcher_case sccache
if command -v sccache > /dev/null; then
  hits=$(sccache --show-stats 2>/dev/null | awk '/^Cache hits \(CUDA\)/ {print $4}')
  [ "${hits:-0}" -ge 4 ] && pass "sccache served the second build ($hits hits)" || fail "sccache hits: ${hits:-none}"
fi

# Through Meson: a project whose custom target runs kpack, as
# manifests/meson.build does.  A no-op `meson compile` does nothing at all,
# and adding a value compiles one unit per arch and relinks.
if command -v meson > /dev/null; then
  rm -rf out cache meson-proj && mkdir meson-proj && cp -r m meson-proj/m
  cat > meson-proj/meson.build <<EOF2
project('inc', 'c')
gen = custom_target('inc-kpack', input : 'm/kpack.yaml', output : ['inc.h', 'inc.c', 'inc.S'],
  depfile : 'inc.d', console : true,
  command : ['$kpack', 'build', '@INPUT@', '--header', '@OUTPUT0@', '--launcher', '@OUTPUT1@',
             '--asm', '@OUTPUT2@', '--work-dir', '@OUTDIR@/inc.kpack', '--depfile', '@DEPFILE@',
             '--root', meson.project_source_root(), '--cuda-root', '$cuda_root', '-v'])
static_library('inc', gen[1], gen[2], include_directories : include_directories('$runtime_inc'))
EOF2
  if meson setup meson-build meson-proj > log 2>&1 && meson compile -C meson-build > log 2>&1; then
    expect_counts "meson: the first build compiles every unit" "8 units: 8 compiled, 0 from cache (nvcc batches: 2 compiled, 0 from cache, 0 up to date)"
    meson compile -C meson-build > log 2>&1
    grep -q 'ninja: no work to do' log && ! grep -q 'units:' log && pass "meson: a no-op build does nothing" ||
      fail "meson: no-op build did work"
    sed -i 's/values: \[1\]/values: [1, 4]/' meson-proj/m/k2.yaml
    meson compile -C meson-build > log 2>&1
    # k2's one unit becomes a batch of two, once per arch; k1's is untouched.
    expect_counts "meson: adding a value compiles one batch per arch" "10 units: 4 compiled, 0 from cache, 6 up to date (nvcc batches: 2 compiled, 0 from cache, 2 up to date)"
    grep -q 'Linking static target libinc.a' log && pass "meson: the library is relinked" || fail "meson: no relink"
  else
    fail "meson project"
  fi
else
  skip "meson is not installed"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] || exit 1
[ "$skipped" -eq 0 ] || exit 77
