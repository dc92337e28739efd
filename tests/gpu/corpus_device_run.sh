#!/usr/bin/env bash
# One device call for issue 14's checks: the bundled GPU checks
# (device_run.sh), the bundled Triton twins against the JIT
# (triton_parity.py), and the corpus against the JIT, bit for bit and timed
# (corpus_parity.py --time).  Staging (tests/gpu/RESULTS.md): .device/ as
# device_run.sh wants it plus .device/corpus/ from corpus_build.sh, and the
# corpus's wheels (and einops, which fla imports) in .whl/.
#
# Everything goes to $OUT: summary.txt, corpus.json and logs.tar.gz (the
# device tool returns at most 8 files).
set -u
out=${OUT:-device-out}
logs=$(mktemp -d)
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  || { echo "cannot install the corpus wheels" | tee "$out/summary.txt"; exit 1; }
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
{
  OUT=$logs bash tests/gpu/device_run.sh
  echo "device_run: exit $?"
  python3 tests/gpu/triton_parity.py --lib .device/libkernels_shared.so > "$logs/triton_parity.log" 2>&1
  echo "triton_parity: exit $?; $(grep -E '^[0-9]+ passed' "$logs/triton_parity.log" | tail -1)"
  python3 tests/gpu/corpus_parity.py --lib-dir .device/corpus --time --json "$out/corpus.json" \
    > "$logs/corpus_parity.log" 2>&1
  echo "corpus_parity: exit $?"
  grep -E '^(seed|FAIL|[0-9]+ passed|kpack / JIT)' "$logs/corpus_parity.log"
} 2>&1 | tee "$out/summary.txt"
tar czf "$out/logs.tar.gz" -C "$logs" .
