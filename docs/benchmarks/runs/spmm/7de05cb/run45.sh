#!/usr/bin/env bash
# Device run 45: compute-sanitizer memcheck, racecheck and initcheck over the `.t` slices that
# run 43 (d1fc1e8) did not finish: every nnz-split `.t` slice and the seven small row-warp
# `.t` slices, as concurrent gpu-check processes (comma-separated `--spmm-variants` parts).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out45; rm -rf $W; mkdir -p $W
[ -x .device/bin/xtask ] || { xz -dk .device/bin/xtask.xz; chmod +x .device/bin/xtask; }
X=./.device/bin/xtask
mkdir -p .device/none
T0=$(date +%s)
san() { # name filter jobs
  mkdir -p $W/$1
  timeout 560 $X gpu-check --spmm-only --spmm-variants "$2" --spmm-widths 1 --matrices .device/none \
    --sanitizer-jobs $3 --sanitizer-timeout 520 --out $W/$1 > $W/$1.log 2>&1
  echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/$1.log
}
san ns-g4 .t,nnz-split.b256.g4. 3 &
san ns-g8 .t,nnz-split.b256.g8. 3 &
san ns-g16 .t,nnz-split.b256.g16. 3 &
san ns-i .t,nnz-split.b256.i 2 &
san ns-r .t,nnz-split.b256.r 2 &
san rw-g1v1 .t,row-warp.b256.g1.v1. 1 &
san rw-g16 .t,row-warp.b256.g16. 1 &
san rw-g4v4 .t,row-warp.b256.g4.v4. 1 &
san rw-g8v2 .t,row-warp.b256.g8.v2. 1 &
san rw-g8v4 .t,row-warp.b256.g8.v4. 1 &
san rw-g32 .t,row-warp.b256.g32. 1 &
wait
tar -C $W -czf $OUT/run45.tar.gz .
grep -h -E "SpMM (memcheck|racecheck|initcheck)" $W/*.log | sort | awk '{print $4}' | sort | uniq -c
grep -h -E "SpMM (memcheck|racecheck|initcheck)" $W/*.log | grep -v ": clean" | head -20
for f in $W/*.log; do echo "$f: $(tail -n 1 $f)"; done
