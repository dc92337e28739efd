#!/usr/bin/env bash
# Fetches the corpus's pinned wheels (requirements.txt) from PyPI into the
# corpus cache and unpacks each, unchanged, into CACHE/<name>-<version>/.
# Idempotent: a complete unpacked wheel is kept.  Needs pip and unzip.
#
#   fetch.sh [CACHE]     (default: $KPACK_CORPUS_CACHE or ~/.cache/kpack/corpus)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-${KPACK_CORPUS_CACHE:-$HOME/.cache/kpack/corpus}}
mkdir -p "$cache"
missing=()
while read -r spec _; do
  [[ -z "$spec" || "$spec" == \#* ]] && continue
  name=${spec%%==*} version=${spec##*==}
  [ -f "$cache/${name//-/_}-$version/.complete" ] || missing+=("$spec")
done < "$here/requirements.txt"
((${#missing[@]})) || { echo "kpack corpus: cached in $cache"; exit 0; }
download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
# --require-hashes checks every wheel against requirements.txt.
python3 -m pip download -q --no-deps --only-binary=:all: --require-hashes -r "$here/requirements.txt" -d "$download"
for wheel in "$download"/*.whl; do
  base=$(basename "$wheel")
  name=${base%%-*} rest=${base#*-} version=${rest%%-*}
  target=$cache/$name-$version
  [ -f "$target/.complete" ] && continue
  rm -rf "$target.partial"
  unzip -q "$wheel" -d "$target.partial"
  rm -rf "$target" && mv "$target.partial" "$target"
  touch "$target/.complete"
  echo "kpack corpus: $name $version unpacked into $target"
done
