#!/usr/bin/env bash
# Device run 64, second call (the same warm machine, right after run64.sh PART=3): memcheck over
# the nnz-split slices at the sanitizer width with the stripped release xtask of cfdf8a7,
# 16 processes at a time, within the device time left (280 s).
W=out64-4; mkdir -p $W/san
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
timeout 280 ./.device/b64/xtask gpu-check --spmm-only --spmm-variants 'nnz-split' --spmm-widths 1 \
  --sanitizer-tools memcheck --sanitizer-jobs 16 --sanitizer-timeout 265 --matrices .device/none \
  --out $W/san > $W/san.log 2>&1
echo "exit $?" >> $W/san.log
tar -C $W -czf $OUT/run64-4.tar.gz .
grep -h -E "SpMM (memcheck|initcheck):|sanitizer:" $W/san.log; tail -n 2 $W/san.log
