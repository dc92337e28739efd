#!/bin/bash
# Times the README's first command on a fresh clone at COMMIT, as on a fresh
# machine except for Debian's packages (apt is a no-op both ways): empty pip,
# corpus, sccache, ccache and unit caches, and a python3 without Triton first
# on PATH; the compilers without Meson's ccache/sccache wrapper (a running
# sccache server would serve its old cache) and an empty Triton cache.   setup_time.sh COMMIT DIR
set -eu
commit=$1 dir=$2
rm -rf "$dir" "$dir.cache" "$dir.py"
git clone -q /work/main "$dir" && cd "$dir" && git checkout -q "$commit"
python3 -m venv "$dir.py"
export PATH="$dir.py/bin:$PATH" PIP_CACHE_DIR="$dir.cache/pip" XDG_CACHE_HOME="$dir.cache" \
       KPACK_CORPUS_CACHE="$dir.cache/kpack/corpus" KPACK_SCCACHE_HOME="$dir.cache/kpack/sccache" CCACHE_DISABLE=1 \
       TRITON_CACHE_DIR="$dir.cache/triton" CC=gcc CXX=g++
python3 -c 'import triton' 2>/dev/null && { echo "python3 has triton"; exit 1; }
start=$(date +%s.%N)
/usr/bin/time -f "cpu user %U sys %S wall %e" bash -c '.ci/setup && meson setup build && meson compile -C build' > "$dir.log" 2>&1
rc=$?
end=$(date +%s.%N)
echo "commit $commit rc $rc wall $(echo "$end - $start" | bc) s"; tail -2 "$dir.log"
