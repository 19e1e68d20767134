#!/usr/bin/env bash
# Device run 4: memcheck and initcheck of the narrow row-warp groups (1 and 2 lanes, unroll 4: several pairs per lane).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=<work dir>; rm -rf $W; mkdir -p $W
X=./.device/bin/xtask
san() { # tool filter timeout
  local T=$(date +%s)
  timeout $3 compute-sanitizer --tool $1 --error-exitcode 1 --print-limit 50 $X gpu-check --sanitizer-pass --spmm-only --spmm-variants "$2" --out $W > $W/$1-$2.log 2>&1
  echo "exit $? after $(( $(date +%s) - T )) s" >> $W/$1-$2.log
  tar czf "$OUT/run4.tar.gz" -C $W .
}
san memcheck row-warp.b256.g1. 75
san memcheck row-warp.b256.g2. 75
san initcheck row-warp.b256.g2. 60
tail -n 3 $W/*.log
