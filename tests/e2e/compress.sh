#!/usr/bin/env bash
# Fatbin compression (issue 5): the package file's `compress:` and
# `kpack build --compress-mode` reach fatbinary, so `kpack inspect` finds
# every image of the fatbins compressed and the fatbins shrink; the flag
# overrides the key; an unknown mode is an exact, located error.
#   compress.sh KPACK CUDA_ROOT
set -u
kpack=$(realpath "$1")
cuda_root=$2
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
. "$here/checks.sh"

# One kernel, two specializations, two archs: 4 SASS images in 2 fatbins.
# set_mode rewrites only the package file, so the units stay up to date.
set_mode() { printf 'package: z\narchs: [sm_80, sm_90]\ncompress: %s\nkernels: [k.yaml]\n' "$1" > m/kpack.yaml; }
write_package() {
  mkdir -p m
  cat > m/k.yaml <<'YAML'
kernel: k
source: k.cuh
entry: k
constexprs:
  - {name: B, type: int, values: [1, 2], tag: b}
params:
  - {name: x, type: const f32*}
  - {name: out, type: f32*}
  - {name: n, type: i64}
launch: {grid: 'cdiv(n, 128)', block: 128}
YAML
  cat > m/k.cuh <<'CUH'
template <int B>
__device__ __forceinline__ void k(const float* x, float* out, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = expf(x[i]) * B + sinf(x[i] * B);
}
CUH
}

build() {
  "$kpack" build m/kpack.yaml --header out/z.h --launcher out/z.c --asm out/z.S --work-dir out/work \
    --cache-dir cache --cuda-root "$cuda_root" --quiet -v "$@" > log 2>&1
}

# What kpack inspect reads from the fatbins the .S embeds:
# "<compressed images> <plain images> <fatbin bytes>".
survey() {
  local z=0 plain=0 bytes=0 f
  for f in out/work/fatbins/*.fatbin; do
    "$kpack" inspect "$f" > inspect.txt || { echo "inspect failed"; return; }
    z=$((z + $(awk 'NR > 1 && $4 ~ /^[0-9]+z$/' inspect.txt | wc -l)))
    plain=$((plain + $(awk 'NR > 1 && $4 ~ /^[0-9]+$/' inspect.txt | wc -l)))
    bytes=$((bytes + $(stat -c %s "$f")))
  done
  echo "$z $plain $bytes"
}
fatbins() { cat out/work/fatbins/*.fatbin; }
# Builds, then surveys into z, plain and bytes; a failed build leaves them
# "failed" rather than the previous build's figures.
build_survey() {
  z=failed plain=failed bytes=failed
  build "$@" && read -r z plain bytes <<< "$(survey)"
}

# none: 4 plain images.
write_package
set_mode none
build_survey; none_bytes=$bytes
[ "$z $plain" = "0 4" ] && pass "compress: none leaves the 4 images plain" || { fail "compress: none ($z $plain)"; cat log; }

# size, by the manifest key: the same units (no nvcc), 4 compressed images, smaller fatbins.
set_mode size
build_survey; size_bytes=$bytes
grep -qx 'kpack: 4 units: 0 compiled, 0 from cache, 4 up to date (nvcc batches: 0 compiled, 0 from cache, 2 up to date)' log &&
  pass "a new mode repacks the fatbins and recompiles no unit" || { fail "units after a mode change"; cat log; }
[ "$z $plain" = "4 0" ] && pass "compress: size compresses all 4 images" || { fail "compress: size ($z $plain)"; cat log; }
[ "$size_bytes" -lt "$none_bytes" ] && pass "size shrinks the fatbins ($none_bytes -> $size_bytes bytes)" ||
  fail "size did not shrink the fatbins ($none_bytes -> $size_bytes bytes)"
grep -q '^z: compressed image; its registers and shared memory are not read$' inspect.txt &&
  pass "inspect explains the z" || fail "inspect's z legend"
fatbins > by_key.bin

# size, by the flag over a manifest that says none: the same bytes as by the key.
set_mode none
build_survey --compress-mode size
[ "$z $plain" = "4 0" ] && fatbins | cmp -s - by_key.bin &&
  pass "--compress-mode size overrides compress: none, same fatbins as the key" || { fail "--compress-mode size ($z $plain)"; cat log; }

# ... and none by the flag over a manifest that says size.
set_mode size
build_survey --compress-mode none
[ "$z $plain $bytes" = "0 4 $none_bytes" ] && pass "--compress-mode none overrides compress: size" ||
  { fail "--compress-mode none ($z $plain $bytes)"; cat log; }

# speed and balance compress SASS too (kpack adds --compress-all).
for mode in speed balance; do
  set_mode $mode
  build_survey
  [ "$z $plain" = "4 0" ] && pass "compress: $mode compresses all 4 images" || { fail "compress: $mode ($z $plain)"; cat log; }
done

# Unknown modes: the key's is located at its value, exit 1, outputs untouched;
# the flag's is a usage error, exit 2.
cp out/z.h before.h
set_mode fast
build; rc=$?
[ $rc -eq 1 ] && [ "$(cat log)" = "m/kpack.yaml:3:11: error: compress must be one of none, speed, balance, size (got 'fast')" ] &&
  cmp -s before.h out/z.h && pass "compress: fast is a located error" || { fail "compress: fast (rc=$rc)"; cat log; }
set_mode none
build --compress-mode fast; rc=$?
[ $rc -eq 2 ] && [ "$(cat log)" = "kpack: error: --compress-mode takes none, speed, balance, size or default" ] &&
  pass "--compress-mode fast is a usage error" || { fail "--compress-mode fast (rc=$rc)"; cat log; }

finish
