#!/bin/sh
# Runs a consumer and checks that it does not depend on libcuda at link time.
set -eu
exe=$1
if readelf -d "$exe" | grep -q 'NEEDED.*libcuda'; then
  echo "FAILED: $exe links against libcuda:"
  readelf -d "$exe" | grep NEEDED
  exit 1
fi
exec "$exe"
