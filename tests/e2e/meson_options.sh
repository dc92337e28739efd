#!/usr/bin/env bash
# kpack's Meson options reach the command line of the bundled package's
# `kpack build` (manifests/meson.build): configures this source tree twice,
# with a prebuilt kpack and no tests, so nothing is compiled (~3 s each),
# and reads the custom target's argv from `meson introspect --targets`.
# What kpack does with each flag is tested through kpack itself
# (incremental.sh, compress.sh).
#
#   meson_options.sh SOURCE_DIR KPACK
set -u
src=$1 kpack=$(realpath "$2")
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$here/checks.sh"

# Prints the kpack build argv of a build directory configured with the given
# options, one argument a line; nothing if the configure failed.
kpack_argv() {  # build dir name, options
  local dir=$work/$1; shift
  meson setup "$dir" "$src" -Dkpack_exe="$kpack" -Dtests=false -Dbench=false "$@" > "$work/setup.log" 2>&1 ||
    { sed 's/^/  | /' "$work/setup.log" | tail -20; return; }
  meson introspect --targets "$dir" | python3 -c '
import json, sys
[t] = [t for t in json.load(sys.stdin) if t["name"] == "kernels-kpack"]
print("\n".join(t["target_sources"][0]["compiler"]))'
}
# Whether the argv (stdin) holds FLAG immediately followed by VALUE.
has_pair() { python3 -c 'import sys; a = sys.stdin.read().split("\n"); print(any(a[i:i+2] == sys.argv[1:3] for i in range(len(a))))' "$1" "$2" | grep -qx True; }

argv=$(kpack_argv defaults)
[ -n "$argv" ] && pass "configure with the defaults" || fail "configure with the defaults"
has_pair -j 0 <<< "$argv" && has_pair --job-memory 2048 <<< "$argv" &&
  pass "defaults: -j 0 --job-memory 2048" || fail "defaults lack -j 0 --job-memory 2048"
grep -qx -- '--nvcc-launcher' <<< "$argv" && fail "defaults pass --nvcc-launcher" || pass "defaults pass no launcher"
grep -qx -- '--compress-mode' <<< "$argv" && fail "defaults pass --compress-mode" || pass "defaults pass no compress mode"

argv=$(kpack_argv set -Dnvcc_launcher=ccache -Dkpack_jobs=3 -Dkpack_job_memory=4096 -Dfatbin_compress=size)
has_pair --nvcc-launcher ccache <<< "$argv" && pass "-Dnvcc_launcher=ccache passes --nvcc-launcher ccache" ||
  fail "-Dnvcc_launcher=ccache: argv is $(echo $argv)"
has_pair -j 3 <<< "$argv" && has_pair --job-memory 4096 <<< "$argv" &&
  pass "-Dkpack_jobs=3 -Dkpack_job_memory=4096 pass -j 3 --job-memory 4096" || fail "jobs options: argv is $(echo $argv)"
has_pair --compress-mode size <<< "$argv" && pass "-Dfatbin_compress=size passes --compress-mode size" ||
  fail "-Dfatbin_compress=size: argv is $(echo $argv)"

finish
