#!/usr/bin/env bash
# Fetches the corpus's pinned wheels (requirements.txt) from PyPI into the
# corpus cache and unpacks each, unchanged, into CACHE/<name>-<version>/:
# whole, or only the members its line's `# extract:` patterns name
# (requirements.txt says how).  Every unpacked file is checked against the
# sha256 in the wheel's RECORD (verify_record.py) before the directory is
# marked complete.  Idempotent: a complete unpacked wheel is kept, and only
# the missing wheels are downloaded.  Needs pip, unzip and python3.
#
#   fetch.sh [CACHE]     (default: $KPACK_CORPUS_CACHE or ~/.cache/kpack/corpus)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-${KPACK_CORPUS_CACHE:-$HOME/.cache/kpack/corpus}}
mkdir -p "$cache"
missing=()               # requirement lines whose wheel is not in the cache
keys=()                  # their wheels' name-version, lower case
declare -A extract=()    # name-version (lower case) -> its `# extract:` patterns
while IFS= read -r line || [ -n "$line" ]; do
  read -r spec _ <<< "$line" || true
  [[ -z "$spec" || "$spec" == \#* ]] && continue
  name=${spec%%==*} version=${spec##*==}
  [ -f "$cache/${name//-/_}-$version/.complete" ] && continue
  key=${name//[-.]/_}-$version
  key=${key,,}
  missing+=("$line") keys+=("$key")
  if [[ "$line" == *"# extract:"* ]]; then
    extract[$key]=${line#*# extract:}
    [ -n "${extract[$key]// /}" ] || { echo "kpack corpus: $spec: no patterns after '# extract:'" >&2; exit 1; }
  fi
done < "$here/requirements.txt"
((${#missing[@]})) || { echo "kpack corpus: cached in $cache"; exit 0; }
download=$(mktemp -d)
target=
trap 'rm -rf "$download" ${target:+"$target.partial"}' EXIT
printf '%s\n' "${missing[@]}" > "$download/requirements.txt"
# --require-hashes checks every wheel against requirements.txt.
python3 -m pip download -q --no-deps --only-binary=:all: --require-hashes -r "$download/requirements.txt" -d "$download"
declare -A unpacked=()
for wheel in "$download"/*.whl; do
  [ -e "$wheel" ] || continue
  base=$(basename "$wheel")
  name=${base%%-*} rest=${base#*-} version=${rest%%-*}
  target=$cache/$name-$version
  key=${name,,}-$version
  unpacked[$key]=1
  [ -f "$target/.complete" ] && continue
  rm -rf "$target.partial"
  if [ -n "${extract[$key]+set}" ]; then
    read -ra patterns <<< "${extract[$key]}"   # split on blanks; no glob expansion
    # unzip matches each pattern against the wheel's member names (its `*`
    # crosses `/`) and fails when one matches nothing.
    unzip -q "$wheel" "${patterns[@]}" -d "$target.partial"
    what="${patterns[*]}"
  else
    patterns=('*')
    unzip -q "$wheel" -d "$target.partial"
    what=whole
  fi
  if ! python3 "$here/verify_record.py" "$target.partial" --expect "${patterns[@]}" > /dev/null; then
    echo "kpack corpus: FAILED: $base is not as its RECORD says; nothing of it kept" >&2
    exit 1
  fi
  # The marker goes in before the one rename: the directory appears complete
  # or not at all.
  touch "$target.partial/.complete"
  rm -rf "$target" && mv "$target.partial" "$target"
  echo "kpack corpus: $name $version unpacked ($what, $(du -sh "$target" | cut -f1)) into $target"
done
# Every missing requirement must have been unpacked, under the name its
# patterns were recorded by.
for i in "${!missing[@]}"; do
  if [ -z "${unpacked[${keys[$i]}]:-}" ]; then
    echo "kpack corpus: FAILED: no wheel named ${keys[$i]}-*.whl unpacked for: ${missing[$i]}" >&2
    exit 1
  fi
done
