#!/usr/bin/env bash
# The Meson wiring of the debug guard: only buildtype=debug passes
# --allow-debug-kernels to kpack; debugoptimized, release and a custom
# -Ddebug=true do not, so debug kernels cannot slip into an optimized build.
# Configures the engine example (no compile) and reads its kpack command
# from `meson introspect`.
#
#   debug_wiring.sh KPACK_SOURCE_DIR KPACK_EXE
set -u
src=$1 kpack=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/checks.sh"

cp -r "$src/tests/subproject/engine" "$work/engine"
mkdir -p "$work/engine/subprojects"
ln -s "$src" "$work/engine/subprojects/kpack"

# allows OPTIONS...: prints yes/no, whether the engine's kpack command has the flag.
allows() {
  rm -rf "$work/engine/out"
  (cd "$work/engine" && meson setup out -Dkpack:kpack_exe="$kpack" "$@" >"$work/setup.log" 2>&1) ||
    { cat "$work/setup.log" >&2; echo "setup failed"; return; }
  meson introspect "$work/engine/out" --targets > "$work/targets.json"
  python3 - "$work/targets.json" <<'PY'
import json, sys
targets = [t for t in json.load(open(sys.argv[1])) if t["name"] == "engine-kpack"]
if len(targets) != 1:
    print("no engine-kpack target")
    sys.exit(0)
command = targets[0]["target_sources"][0]["compiler"] + targets[0]["target_sources"][0]["parameters"]
print("yes" if "--allow-debug-kernels" in command else "no")
PY
}

for case in "debug yes" "debugoptimized no" "release no" "plain no"; do
  set -- $case
  got=$(allows -Dbuildtype="$1")
  [ "$got" = "$2" ] && pass "buildtype=$1: --allow-debug-kernels $2" || fail "buildtype=$1: expected $2, got $got"
done
got=$(allows -Dbuildtype=release -Ddebug=true)
[ "$got" = no ] && pass "-Ddebug=true on an optimized build does not allow debug kernels" || fail "custom -Ddebug=true: got $got"

finish
