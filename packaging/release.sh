#!/usr/bin/env bash
# kpack's self-contained release archive, kpack-<version>-linux-<arch>.tar.xz:
# the compiler linked statically against LLVM and yaml-cpp, its Triton
# helper, the runtime's sources, the CMake package and a Meson project at
# the root, so that a machine with the CUDA Toolkit (and Python with Triton,
# for Triton kernels) and none of kpack's build dependencies packages kernels
# from Meson, CMake or plain Make.  docs/shipping.md, "Release archive".
#
#   meson setup build-dist -Dstatic_kpack=true -Dbundled=false -Dtests=false -Dbench=false --libdir=lib
#   meson compile -C build-dist dist-kpack       # or: packaging/release.sh build-dist [OUT_DIR]
#
# The archive is `meson install` of BUILD_DIR (staged with --destdir), the
# kpack executable stripped, plus packaging/meson-glue (the root's
# meson.build), packaging/cmake/CMakeLists.txt (for add_subdirectory and
# FetchContent) and packaging/ARCHIVE_README.md; its one top directory is
# kpack-<version>/.  It is written into OUT_DIR (default BUILD_DIR) under a
# temporary name and renamed into place, so a failed or killed run leaves no
# partial archive.  --no-rebuild: install what is built (dist-kpack's
# run_target builds kpack before it runs this).
#
#   release.sh [--no-rebuild] BUILD_DIR [OUT_DIR]
set -euo pipefail
export LC_ALL=C  # sorted names and tool messages the same everywhere

die() { echo "release.sh: error: $*" >&2; exit 1; }
rebuild=()
if [ "${1:-}" = "--no-rebuild" ]; then rebuild=(--no-rebuild); shift; fi
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: release.sh [--no-rebuild] BUILD_DIR [OUT_DIR]" >&2; exit 2; }
[ -f "$1/meson-private/coredata.dat" ] || die "$1 is not a configured Meson build directory of kpack"
build=$(realpath "$1")
out=$(realpath "${2:-$1}")
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The version and the install directories, from the build's own record.
read -r version prefix bindir datadir libdir < <(
  python3 - "$(meson introspect --projectinfo "$build")" "$(meson introspect --buildoptions "$build")" <<'PY'
import json, sys
project, options = json.loads(sys.argv[1]), {o["name"]: o["value"] for o in json.loads(sys.argv[2])}
print(project["version"], options["prefix"], options["bindir"], options["datadir"], options["libdir"])
PY
)
# kpackConfig.cmake finds the prefix from its own place (lib/cmake/kpack),
# so the archive's layout is the install's: the directories must be these.
[ "$bindir/$datadir/$libdir" = "bin/share/lib" ] ||
  die "the archive's layout needs --bindir=bin --datadir=share --libdir=lib; $build has bindir=$bindir," \
      "datadir=$datadir, libdir=$libdir (meson configure $build --libdir=lib)"

mkdir -p "$out"
tmp=$(mktemp -d "$out/.kpack-release.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp/stage" --quiet "${rebuild[@]}" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; die "meson install -C $build failed"; }
root=$tmp/kpack-$version
mv "$tmp/stage$prefix" "$root"

# Exactly the tool's layout: a bundled package's library or headers (a
# -Dbundled=true build) do not belong in it, and an install rule that puts
# the tool's files elsewhere would leave the archive incomplete.
stray=$(cd "$root" && find . ! -type d | sed 's|^\./||' |
        grep -Ev '^(bin/kpack|share/kpack/.+|lib/cmake/kpack/.+)$' | head -n 3 || true)
[ -z "$stray" ] || die "meson install put files outside bin/kpack, share/kpack and lib/cmake/kpack:" $stray \
                       "(configure $build with -Dbundled=false)"
for f in bin/kpack share/kpack/triton/triton_helper.py share/kpack/runtime/kpack.h; do
  [ -f "$root/$f" ] || die "meson install did not install $f"
done
if [ -f "$src/packaging/cmake/kpackConfig.cmake.in" ] && [ ! -f "$root/lib/cmake/kpack/kpackConfig.cmake" ]; then
  die "meson install did not install lib/cmake/kpack/kpackConfig.cmake"
fi

# The executable must run where LLVM and yaml-cpp are not installed: only
# libraries of a base Debian or Ubuntu system (libz and libzstd come with
# LLVM's static libraries, and both are Priority: required).  No RUNPATH
# into a build tree either.
strip --strip-all "$root/bin/kpack"
needed=$(readelf -d "$root/bin/kpack" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
for lib in $needed; do
  case $lib in
    libLLVM*|libyaml-cpp*|libclang*)
      die "bin/kpack needs $lib: the build links it dynamically; configure $build with -Dstatic_kpack=true" ;;
    libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|libz.so.*|libzstd.so.*|libtinfo.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
    *) die "bin/kpack needs $lib, which a base system may lack: link it statically" ;;
  esac
done
! readelf -d "$root/bin/kpack" | grep -Eq '\((RPATH|RUNPATH)\)' || die "bin/kpack has an RPATH or RUNPATH"
[ "$("$root/bin/kpack" --version)" = "kpack $version" ] || die "bin/kpack --version is not 'kpack $version'"
case $(readelf -h "$root/bin/kpack" | sed -n 's/^ *Machine: *//p') in
  *X86-64*) arch=x86_64 ;;
  AArch64) arch=aarch64 ;;
  *) die "bin/kpack is for an architecture this script does not name" ;;
esac

# The root: a Meson project (an engine's subprojects/kpack), the CMake
# project of add_subdirectory and FetchContent, the version and a README.
cp "$src/packaging/meson-glue/meson.build" "$src/packaging/meson-glue/meson_options.txt" "$root/"
echo "$version" >"$root/VERSION"
cp "$src/packaging/ARCHIVE_README.md" "$root/README.md"
if [ -f "$src/packaging/cmake/CMakeLists.txt" ]; then cp "$src/packaging/cmake/CMakeLists.txt" "$root/"; fi
# The Meson project lists the runtime's sources (Meson has no glob): the
# same files as runtime/meson.build installs.
for c in "$root"/share/kpack/runtime/*.c; do
  grep -q "runtime_dir / '$(basename "$c")'" "$root/meson.build" ||
    die "packaging/meson-glue/meson.build does not list the runtime source $(basename "$c")"
done

# Reproducible: names sorted, no owners, one time (the commit's, or
# SOURCE_DATE_EPOCH), modes from the install.
mtime=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || echo 0)}
name=kpack-$version-linux-$arch.tar.xz
tar -C "$tmp" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" \
    --mode=u+rwX,go+rX,go-w -cJf "$tmp/$name" "kpack-$version"
mv -f "$tmp/$name" "$out/$name"
echo "release.sh: wrote $out/$name ($(stat -c %s "$out/$name") bytes); bin/kpack needs: $needed"
