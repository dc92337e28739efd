#!/bin/bash
# bench/compute/.bin/run.sh: the device run of cuda_gemm_check (check every
# config, then time those that passed).
B=bench/compute/.bin/cuda_gemm_check
O=${OUT:-/tmp}
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/device.txt 2>&1
if ldd $B | grep -q "not found"; then
  L=$(find / -name 'libcublas.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
  export LD_LIBRARY_PATH=$(dirname "$L"):$LD_LIBRARY_PATH
fi
ldd $B | grep -E "cublas" >> $O/device.txt
cat $O/device.txt
echo "HGMMA in SASS: $(cuobjdump -sass $B 2>/dev/null | grep -c HGMMA)"
PASS=""
for c in $($B --list); do
  timeout ${CHECK_T:-20} $B --check $c >> $O/check.log 2>&1; rc=$?
  echo "check $c rc=$rc $(grep -c FAIL <(grep "check $c" $O/check.log)) fails; $(grep "check summary" $O/check.log | tail -1)"
  [ $rc = 0 ] && PASS="$PASS,$c"
done
PASS=${PASS#,}
echo "bench configs: $PASS"
[ -n "$PASS" ] && timeout ${BENCH_T:-100} $B --bench "$PASS" > $O/bench.log 2>&1; echo "bench rc=$?"
grep -E "^best|^geomean|^config" $O/bench.log; grep -c "(auto)" $O/bench.log
