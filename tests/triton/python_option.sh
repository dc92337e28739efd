#!/usr/bin/env bash
# Meson's `python` option (meson.build's kpack_python) reaches the bundled
# package's `kpack build` as --python: by default the source root's
# .venv/bin/python3 when it exists, else python3 on PATH; -Dpython=PATH
# that PATH; a Python that does not exist fails the configure.  Configures
# this source tree with a prebuilt kpack and no tests, so nothing is
# compiled, and reads the custom target's argv as meson_options.sh does.
#
#   python_option.sh SOURCE_DIR KPACK
set -u
src=$(realpath "$1") kpack=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$src/tests/e2e/checks.sh"

# The argument after --python in the kpack build argv of a build directory
# configured with the given options; nothing if the configure failed.
python_arg() {  # build dir name, options
  local dir=$work/$1; shift
  meson setup "$dir" "$src" -Dkpack_exe="$kpack" -Dtests=false -Dbench=false "$@" > "$work/setup.log" 2>&1 || return
  meson introspect --targets "$dir" | python3 -c '
import json, sys
[t] = [t for t in json.load(sys.stdin) if t["name"] == "kernels-kpack"]
argv = t["target_sources"][0]["compiler"]
print(argv[argv.index("--python") + 1])'
}

if [ -x "$src/.venv/bin/python3" ]; then default=$src/.venv/bin/python3; else default=$(command -v python3); fi
got=$(python_arg defaults)
[ "$got" = "$default" ] && pass "the default is $default" || fail "the default: --python '$got', not $default"

other=$(python3 -c 'import sys; print(sys.executable)')
got=$(python_arg set -Dpython="$other")
[ "$got" = "$other" ] && pass "-Dpython=$other passes --python $other" || fail "-Dpython: --python '$got'"

python_arg missing -Dpython="$work/no-such-python" > /dev/null
grep -q "no-such-python" "$work/setup.log" && [ ! -f "$work/missing/build.ninja" ] &&
  pass "-Dpython naming no program fails the configure, naming it" || { fail "-Dpython=missing"; tail -5 "$work/setup.log"; }
finish
