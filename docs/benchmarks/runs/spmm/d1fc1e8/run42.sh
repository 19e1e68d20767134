#!/usr/bin/env bash
# Device run 42 (the machine of run 40, warm): compute-sanitizer memcheck, racecheck and
# initcheck over the `.t` variants of one knob setting in every family (`.v1.c1.u4.ldg.t`:
# each transposes X in and Y out, the kernels every `.t` variant adds), then the float64
# check of every `.t` variant on seven small real matrices at N = 32.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out42; rm -rf $W; mkdir -p $W/san $W/real
[ -x .device/bin/xtask ] || { xz -dk .device/bin/xtask.xz; chmod +x .device/bin/xtask; }
X=./.device/bin/xtask
T0=$(date +%s)
if [ ! -f .device/small/MANIFEST.tsv ]; then
  mkdir -p .device/small .device/none
  for m in reorientation_1 rajat19 adder_dcop_05 1138_bus polblogs hangGlider_2 lp_e226; do
    xz -dc .device/mtx/$m.mtx.xz > .device/small/$m.mtx & done; wait
  cp .device/mtx/MANIFEST.tsv .device/small/
fi
mkdir -p .device/none
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
timeout 290 $X gpu-check --spmm-only --spmm-variants .v1.c1.u4.ldg.t --spmm-widths 5 --matrices .device/none --sanitizer-jobs 16 --sanitizer-timeout 230 --out $W/san > $W/san.log 2>&1; el $? >> $W/san.log
LIM=$(( 540 - ($(date +%s) - T0) ))
timeout $LIM $X gpu-check --spmm-only --spmm-variants .t --spmm-widths 1 --matrices .device/small --no-sanitizer --out $W/real > $W/real.log 2>&1; el $? >> $W/real.log
tar -C $W -czf $OUT/run42.tar.gz .
tail -n 12 $W/san.log; tail -n 5 $W/real.log
