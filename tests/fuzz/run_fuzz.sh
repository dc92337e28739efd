#!/usr/bin/env bash
# run_fuzz.sh FUZZER SEED_DIR [libFuzzer options...]
#
# Runs the fuzz target over the seed corpus and then on fresh mutations.
# New inputs go to a scratch directory, never into the committed seeds; a
# crashing input is kept as crash-* in $KPACK_FUZZ_ARTIFACTS (default: the
# working directory).  Prints libFuzzer's final "Done N runs" line.
set -u
fuzzer=$1 seeds=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts=${KPACK_FUZZ_ARTIFACTS:-$PWD}
mkdir -p "$artifacts"
dict=$(dirname "$0")/manifest.dict
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  "$fuzzer" -dict="$dict" -max_len=4096 -timeout=25 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$@" "$work" "$seeds" 2>&1 | tee "$work.log" | grep -v '^#[0-9]*.*\(NEW\|REDUCE\|pulse\)'
status=${PIPESTATUS[0]}
grep -E '^Done [0-9]+ runs|stat::number_of_executed_units' "$work.log" | tail -2
rm -f "$work.log"
exit "$status"
