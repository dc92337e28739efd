#!/usr/bin/env bash
# Fatbin sizes of the bundled package under each --compress-mode (issue 5).
# Runs here, no GPU: the units come from the shared cache, only fatbinary
# runs again per mode.  Prints a Markdown table.
#   bench/compress/sizes.sh KPACK [CUDA_ROOT] [CACHE_DIR]
set -eu
kpack=$(realpath "$1"); cuda_root=${2:-/usr/local/cuda}
root=$(dirname "$(dirname "$(dirname "$(realpath "$0")")")")
cache=${3:-$(mktemp -d)}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
echo "| mode | fatbins (bytes) | vs none | libkernels fatbin object (bytes) |"
echo "| --- | --- | --- | --- |"
none=0
for mode in none speed balance size; do
  "$kpack" build "$root/manifests/kpack.yaml" --header "$work/$mode.h" --launcher "$work/$mode.c" \
    --asm "$work/$mode.S" --work-dir "$work/$mode" --cache-dir "$cache" --cuda-root "$cuda_root" \
    --compress-mode "$mode" --quiet > "$work/$mode.log" 2>&1 || { cat "$work/$mode.log"; exit 1; }
  bytes=$(cat "$work/$mode"/fatbins/*.fatbin | wc -c)
  cc -c "$work/$mode.S" -o "$work/$mode.o"
  [ "$mode" = none ] && none=$bytes
  echo "| $mode | $bytes | $(awk -v a="$bytes" -v b="$none" 'BEGIN {printf "%.2f", a / b}') | $(stat -c %s "$work/$mode.o") |"
done
