#!/usr/bin/env bash
# A library whose embedded fatbins total more than 2 GiB links into a
# consumer program (default code model, no -mcmodel) and every blob is read
# back through the generated table: no "relocation truncated to fit".  The
# object goes into a static archive that the consumer links with -l, as
# users link libkernels.a.
#   large_library.sh EMBED_GEN RUNTIME_INCLUDE_DIR CC_COMMAND...
# CC_COMMAND is the compiler with any launcher Meson put before it.
# Needs ~10 GiB of free disk in $TMPDIR (blobs, object, program); skips (77)
# with less.
set -eu
gen=$(realpath "$1"); inc=$(realpath "$2"); shift 2; cc=("$@"); here=$(dirname "$(realpath "$0")")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
free_kib=$(df -Pk "$work" | awk 'NR == 2 {print $4}')
if [ "$free_kib" -lt $((10 * 1024 * 1024)) ]; then
  echo "skipped: needs 10 GiB free in $work, has $((free_kib / 1024)) MiB"
  exit 77
fi
cd "$work"
# Four blobs of 768 MiB (sparse: only the markers are written): the last
# one starts more than 2 GiB past the code.
blob_size=$((768 * 1024 * 1024))
blobs=()
for i in 0 1 2 3; do
  f=blob$i.fatbin
  truncate -s $blob_size "$f"
  marker=$(printf 'KPACKBLOB%07d' "$i")
  printf '%s' "$marker" | dd of="$f" conv=notrunc status=none
  printf '%s' "$marker" | dd of="$f" bs=1 seek=$((blob_size - 16)) conv=notrunc status=none
  blobs+=("$work/$f")
done
"$gen" big.S big "${blobs[@]}"
start=$SECONDS
"${cc[@]}" -c big.S -o big.o
ar rcs libbig.a big.o
rm big.o  # the archive holds a copy: keep the peak disk use at ~10 GiB
"${cc[@]}" -O1 -I"$inc" "$here/consumer.c" -L. -lbig -o consumer
echo "assembled, archived ($(du -h --apparent-size libbig.a | cut -f1)) and linked" \
  "$(du -h --apparent-size consumer | cut -f1) in $((SECONDS - start)) s"
./consumer 4
