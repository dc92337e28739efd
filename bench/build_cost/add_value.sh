#!/usr/bin/env bash
# The cost of adding one value to a manifest (issue 18): a kernel of one int
# constexpr with 64 values, for sm_80 and sm_90, built clean, then built
# again after a 65th value is added.  Before batches that rebuild compiled
# the new unit of each arch; with batches it compiles the batch the new
# specialization joins (or that batch's two halves), once per arch.
#   bench/build_cost/add_value.sh KPACK OUT_FILE   (KPACK: the kpack to measure)
set -eu
kpack=$(realpath "$1"); out=$2
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
python3 "$here/../scale/gen_package.py" pkg --a "${VALUES:-64}" --b 1 > /dev/null
build() {  # log
  python3 "$here/cputime.py" "$1.cpu" "$kpack" build pkg/kpack.yaml --header gen/s.h --launcher gen/s.c \
    --asm gen/s.S --work-dir gen/work --cuda-root "${CUDA_ROOT:-/usr/local/cuda}" -j "${JOBS:-$(nproc)}" \
    --quiet -v > "$1" 2>&1
}
build cold.log
sed -i "s/values: \[1, /values: [$(( ${VALUES:-64} + 1 )), 1, /" pkg/axpb.yaml
build add.log
{
  echo "cold: $(grep 'units:' cold.log) | $(cat cold.log.cpu)"
  echo "add one value: $(grep 'units:' add.log) | $(cat add.log.cpu)"
} | tee "$out"
