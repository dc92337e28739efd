#!/usr/bin/env bash
# kpack inspect on files this build made: the two test packages (Meson's
# thin archives), the bundled libkernels.a, a kpack-named fatbin and a -G
# cubin of the readers' fixtures (tests/compiler/meson.build).  The readers
# are unit-tested (tests/compiler/inspect_test.cc); the inventory
# cross-check is in install.sh.
#
#   inspect.sh KPACK LIBALPHA LIBBETA LIBKERNELS FATBIN CUBIN [FATBIN_COMPRESS]
# FATBIN_COMPRESS is libkernels.a's -Dfatbin_compress: under speed, balance
# or size its images are compressed, and inspect reads no registers there.
set -euo pipefail
kpack=$1 alpha=$2 beta=$3 kernels=$4 fatbin=$5 cubin=$6 compress=${7:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$kpack" inspect "$alpha" > "$work/alpha.txt"
"$kpack" inspect "$beta" > "$work/beta.txt"
cat "$work/alpha.txt" "$work/beta.txt"
# Columns other than sizes and registers, which depend on the toolkit.
shape() { awk '{ print $1, $2, $3, $8, $9 }' "$1" | head -n -1; }
[ "$(shape "$work/alpha.txt")" = "kernel specialization arch ptx mode
scale scale_f32 sm_80 no release
scale scale_f16 sm_80 no release" ] || { echo "FAILED: alpha's table"; exit 1; }
[ "$(shape "$work/beta.txt")" = "kernel specialization arch ptx mode
scale scale_f16 sm_80 no debug" ] || { echo "FAILED: beta's table"; exit 1; }
# alpha's two specializations were compiled in one batch: one fatbin.
grep -qx "static library: 2 images in 1 fatbins ([0-9]* bytes); all release builds" "$work/alpha.txt" ||
  { echo "FAILED: alpha's summary"; exit 1; }
grep -qx "static library: 1 images in 1 fatbins ([0-9]* bytes); 1 DEBUG images (slow)" "$work/beta.txt" ||
  { echo "FAILED: beta's summary"; exit 1; }

# --json of the bundled library: every row named, every cubin read (every
# image compressed, and so no registers, under a compressing mode).
"$kpack" inspect --json "$kernels" | python3 -c '
import json, sys
compressed = sys.argv[1] in ("speed", "balance", "size")
d = json.load(sys.stdin)
assert d["file_kind"] == "static library" and d["fatbins"] > 0, d["fatbins"]
for i in d["images"]:
    assert i["package"] == "kernels" and i["specialization"] and i["build_mode"] == "release", i
    assert i["kind"] == "sass" and i["compressed"] == compressed, i
    assert ("registers" not in i) if compressed else i["registers"] > 0, i
print("libkernels.a: %d images in %d fatbins%s" % (len(d["images"]), d["fatbins"], ", compressed" * compressed))' "$compress"

# A fatbin on its own: kpack's identifier (kpack:pkg:kern:kern_x:release)
# names both images and gives their recorded mode.
"$kpack" inspect "$fatbin" > "$work/fatbin.txt"
cat "$work/fatbin.txt"
[ "$(shape "$work/fatbin.txt")" = "kernel specialization arch ptx mode
kern kern_x sm_80 no release
kern kern_x sm_90 no release" ] || { echo "FAILED: the fatbin's table"; exit 1; }
grep -qx "fatbin: 2 images in 1 fatbins ($(stat -c %s "$fatbin") bytes); all release builds" "$work/fatbin.txt" ||
  { echo "FAILED: the fatbin's summary"; exit 1; }
"$kpack" inspect --json "$fatbin" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["file_kind"] == "fatbin" and d["fatbins"] == 1, d
assert [(i["package"], i["arch"], i["kind"]) for i in d["images"]] == [("pkg", "sm_80", "sass"), ("pkg", "sm_90", "sass")], d'

# A bare cubin built with -G: one row per kernel, its mode read from the
# cubin itself, and the fixtures' 1024 bytes of static shared memory
# (bounded_shared) and of stack (stack_frame); other sizes and registers
# depend on the toolkit.
"$kpack" inspect "$cubin" > "$work/cubin.txt"
cat "$work/cubin.txt"
[ "$(awk 'NR > 1 && $3 == "sm_90" { print $1, $2, $8, $9 }' "$work/cubin.txt" | sort)" = "_Z9templatedIdEvPT_ - no debug
bounded_shared - no debug
calls_helper - no debug
mixed_params - no debug
no_params - no debug
stack_frame - no debug" ] || { echo "FAILED: the cubin's table"; exit 1; }
awk '$1 == "bounded_shared" { s = $6 } $1 == "stack_frame" { l = $7 } END { exit !(s == 1024 && l == 1024) }' \
  "$work/cubin.txt" || { echo "FAILED: the cubin's shared or local memory"; exit 1; }
grep -qx "cubin: 6 images; 6 DEBUG images (slow)" "$work/cubin.txt" || { echo "FAILED: the cubin's summary"; exit 1; }

# Errors: the file and the reason, exit 1; usage, exit 2.
echo "not a library" > "$work/notes.txt"
set +e
"$kpack" inspect "$work/notes.txt" 2> "$work/err.txt"; status=$?
set -e
[ $status -eq 1 ] && [ "$(cat "$work/err.txt")" = "$work/notes.txt: error: not a static library, fatbin or cubin" ] ||
  { echo "FAILED: inspect of a text file: $status $(cat "$work/err.txt")"; exit 1; }
set +e
"$kpack" inspect 2> "$work/err.txt"; status=$?
set -e
[ $status -eq 2 ] || { echo "FAILED: inspect without a file exits $status"; exit 1; }
echo "inspect: ok"
