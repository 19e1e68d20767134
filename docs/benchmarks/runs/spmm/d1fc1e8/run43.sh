#!/usr/bin/env bash
# Device run 43 (the machine of runs 40 and 42, warm): compute-sanitizer memcheck, racecheck and
# initcheck over every `.t` variant (the sanitizer subset: built-in edge cases at N = 5 and 32).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out43; rm -rf $W; mkdir -p $W/san
[ -x .device/bin/xtask ] || { xz -dk .device/bin/xtask.xz; chmod +x .device/bin/xtask; }
X=./.device/bin/xtask
mkdir -p .device/none
T0=$(date +%s)
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
timeout 545 $X gpu-check --spmm-only --spmm-variants .t --spmm-widths 1 --matrices .device/none --sanitizer-jobs 16 --sanitizer-timeout 500 --out $W/san > $W/san.log 2>&1; el $? >> $W/san.log
tar -C $W -czf $OUT/run43.tar.gz .
tail -n 8 $W/san.log
