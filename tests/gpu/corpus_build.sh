#!/usr/bin/env bash
# Builds each corpus package (tests/corpus/P/package.yaml) into a shared
# library for tests/gpu/corpus_parity.py: libP.so holds the launchers, the
# embedded fatbins and the kpack runtime (no libcuda: the runtime dlopens
# it), and P.json is kpack's inventory, which the harness reads the
# launchers' signatures from.
#
#   corpus_build.sh KPACK OUT_DIR [CACHE] [ARCHS] [PYTHON]
#
# CACHE is the corpus cache (tests/corpus/fetch.sh); ARCHS defaults to the
# manifests' own; PYTHON runs Triton (default: the source root's .venv, else
# python3), and corpus_parity.py must run with the same Triton.
set -euo pipefail
kpack=$(realpath "$1") out=$(mkdir -p "$2" && cd "$2" && pwd)
cache=${3:-${KPACK_CORPUS_CACHE:-$HOME/.cache/kpack/corpus}}
archs=${4:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${5:-python3}
[ -n "${5:-}" ] || [ ! -x "$root/.venv/bin/python3" ] || python=$root/.venv/bin/python3
declare -A WHEELS=([liger]=liger_kernel-0.8.5 [fla]=fla_core-0.6.0)
for package in liger fla; do
  [ -f "$root/tests/corpus/$package/package.yaml" ] || continue
  work=$out/$package.kpack
  "$kpack" build "$root/tests/corpus/$package/package.yaml" --root "$root/tests/corpus" \
    --python-path "$cache/${WHEELS[$package]}" --python "$python" --header "$work/$package.h" --launcher "$work/${package}_launch.c" \
    --asm "$work/${package}_fatbins.S" --work-dir "$work" --inventory "$out/$package.json" \
    ${archs:+--archs "$archs"} --quiet -v
  cc -shared -fPIC -O2 -std=c11 -I "$work" -I "$root/runtime" -I /usr/local/cuda/include \
    "$work/${package}_launch.c" "$work/${package}_fatbins.S" \
    "$root/runtime/kpack_runtime.c" "$root/runtime/driver.c" "$root/runtime/errors.c" \
    "$root/runtime/workspace.c" "$root/runtime/tensor_map.c" \
    -ldl -lpthread -o "$out/lib$package.so"
  echo "corpus_build: $out/lib$package.so"
done
git -C "$root" rev-parse HEAD > "$out/COMMIT"
