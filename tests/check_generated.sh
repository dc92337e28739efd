#!/bin/sh
# Fails when the committed generated/ header differs from the built one.
set -u
built=$1 committed=$2
if cmp -s "$built" "$committed"; then
  echo "generated/kernels.h is up to date"
  exit 0
fi
echo "FAILED: generated/kernels.h is stale. Regenerate it with:"
echo "  meson compile -C build update-generated"
diff -u "$committed" "$built" | head -40
exit 1
