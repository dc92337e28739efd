#!/usr/bin/env bash
# meson install, then the installed package consumed three ways: a C program
# through pkg-config and make, a C++ program through CMake's find_package,
# and the JSON inventory, checked against what `kpack inspect` reads from the
# installed libkernels.a.
#
#   install.sh BUILD_DIR SOURCE_DIR PREFIX LIBDIR [FATBIN_COMPRESS]
# FATBIN_COMPRESS is the build's -Dfatbin_compress.
set -euo pipefail
build=$1 src=$2 prefix=$3 libdir=$4 compress=${5:-}
here=$src/tests/consumer
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/stage
root=$stage$prefix

meson install -C "$build" --no-rebuild --quiet --destdir "$stage" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
for f in include/kernels.h include/kpack.h "$libdir/libkernels.a" "$libdir/pkgconfig/kernels.pc" \
         "$libdir/cmake/kernels/kernelsConfig.cmake" "$libdir/cmake/kernels/kernelsConfigVersion.cmake" \
         share/kernels/kernels.json bin/kpack; do
  [ -f "$root/$f" ] || { echo "FAILED: meson install did not install $f"; exit 1; }
done
echo "install: ok"

# C through pkg-config and make.  SYSROOT_DIR maps the .pc's /usr/local
# paths into the staging directory, as for any DESTDIR install.
PKG_CONFIG_PATH=$root/$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$stage \
  make -s -f "$here/installed/Makefile" SRC="$here/consumer.c" OUT="$work/consumer_make"
"$src/tests/consumer/check_no_libcuda.sh" "$work/consumer_make"
echo "pkg-config + make: ok"

# C++ through CMake's find_package; the package finds its prefix from its
# own location, so the staged tree works as it is.
cmake -S "$here/installed" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$root" \
  -DCONSUMER_SOURCE="$here/consumer.cc" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
grep -q "kernels 0.1.0 inventory: $root/share/kernels/kernels.json" "$work/cmake.log" ||
  { echo "FAILED: find_package(kernels) did not report the version and inventory"; cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake" >"$work/cmake-build.log" 2>&1 || { cat "$work/cmake-build.log"; exit 1; }
"$src/tests/consumer/check_no_libcuda.sh" "$work/cmake/consumer_cmake"
echo "cmake find_package: ok"

# The inventory lists every specialization and arch the library holds, with
# the registers, static shared and local memory the check pass read and the
# size of each cubin: compare with what kpack inspect reads from the
# installed library.  Units record the launch's dynamic shared memory too:
# the manifest's expression for CUDA kernels, Triton's figure and
# num_stages for Triton ones.  Under a compressing -Dfatbin_compress inspect
# reads none of those facts (the images are compressed): then every listed
# image must be there, compressed.
"$root/bin/kpack" inspect --json "$root/$libdir/libkernels.a" >"$work/inspect.json"
python3 - "$root/share/kernels/kernels.json" "$work/inspect.json" "$compress" <<'PY'
import json, sys
inventory = json.load(open(sys.argv[1]))
inspect = json.load(open(sys.argv[2]))
compressed = sys.argv[3] in ("speed", "balance", "size")
assert inventory["format"] == "kpack-inventory/1", inventory["format"]
if sys.argv[3]:
    assert inventory["compress_mode"] == sys.argv[3], (inventory["compress_mode"], sys.argv[3])
FACTS = ("registers", "static_shared_bytes", "local_bytes", "size")
listed = {}
for k in inventory["kernels"]:
    if k["language"] == "cuda":
        assert isinstance(k["launch_shared_mem"], str) and k["launch_shared_mem"], k["name"]
    else:
        assert "launch_shared_mem" not in k, k["name"]
    for s in k["specializations"]:
        assert s["build_mode"] == "release", s["name"]
        assert len(s["fatbin"]["blake3"]) == 64 and s["fatbin"]["size"] > 0, s["name"]
        for u in s["units"]:
            if k["language"] == "triton":
                assert u["num_stages"] >= 1 and u["dynamic_shared_bytes"] >= 0, (s["name"], u)
            else:
                assert "num_stages" not in u and "dynamic_shared_bytes" not in u, (s["name"], u)
            if u["kind"] == "sass":
                listed[(k["name"], s["name"], u["arch"])] = tuple(u[f] for f in FACTS)
assert all(i["compressed"] == compressed for i in inspect["images"]), compressed
if not compressed:
    assert any(f[1] > 0 for f in listed.values()), "no unit with static shared memory: the comparison proves little"
else:
    listed = {key: None for key in listed}
seen = {(i["kernel"], i["specialization"], i["arch"]): None if compressed else tuple(i.get(f) for f in FACTS)
        for i in inspect["images"]}
assert seen == listed, sorted(set(seen.items()) ^ set(listed.items()))[:5]
# Specializations compiled in one batch share its fatbin.
assert inventory["num_fatbins"] == inspect["fatbins"], (inventory["num_fatbins"], inspect["fatbins"])
assert inventory["num_specializations"] >= inspect["fatbins"], (inventory["num_specializations"], inspect["fatbins"])
assert inventory["fatbin_bytes"] == inspect["fatbin_bytes"], (inventory["fatbin_bytes"], inspect["fatbin_bytes"])
print("inventory: %d specializations, %d images, all in kpack inspect %s"
      % (inventory["num_specializations"], len(listed),
         "compressed" if compressed else "with the same registers, shared and local memory and sizes"))
PY
