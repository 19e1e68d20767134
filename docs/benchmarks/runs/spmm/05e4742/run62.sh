#!/usr/bin/env bash
# Device run 62, one call, everything under $OUT/run62.tar.gz, with the stripped release xtask
# of the commit in .device/b62/commit (row-warp rows split over 2, 4 or 8 groups of a block
# with 8 X rows in flight): (1) float64 check of the split-2 and split-8 points (new in the
# space) on the edge cases and synthetic families at N = 5 and 64, both layouts and value
# types, plain and fused, four processes (split x width); (2) example-app's `gcn` kernel retuned alone
# (`retune --kernel gcn`, 60 s budget) and the whole lock's freshness check; (3) memcheck,
# initcheck and racecheck over the new split slices at the sanitizer width, 16 processes at
# a time, until TOTAL s if 150 s or more are left (what the limit cuts is reported as not run).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out62; rm -rf $W; mkdir -p $W/retune $W/san .device/none
B=.device/b62
xz -dkf $B/xtask.xz; chmod +x $B/xtask
X=./$B/xtask
C=$(cat $B/commit)
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
left() { echo $(( $1 - ($(date +%s) - T0) )); }
pack() { tar -C $W -czf $OUT/run62.tar.gz .; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
echo "gpu $G commit $C"
for s in 2 8; do
  for n in 5 64; do
    mkdir -p $W/check$s-$n
    timeout ${CHECKS:-230} $X gpu-check --spmm-only --spmm-variants "row-warp,.s$s." --spmm-widths $n --no-sanitizer \
      --matrices .device/none --out $W/check$s-$n > $W/check$s-$n.log 2>&1 &
  done
done
wait; el 0 >> $W/check2-5.log
pack; tail -n 2 $W/check*.log
cp example-app/SparseRL.lock $W/retune/SparseRL.lock.before
timeout 150 $X retune --manifest-dir example-app --kernel gcn --budget 60 --no-exhaustive --out $W/retune > $W/retune.log 2>&1
el $? >> $W/retune.log
cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
timeout 30 $X retune --manifest-dir example-app --check > $W/retune-check.log 2>&1; el $? >> $W/retune-check.log
pack; tail -n 4 $W/retune.log; tail -n 2 $W/retune-check.log
LIM=$(left ${TOTAL:-400})
[ $LIM -gt 150 ] && timeout $LIM $X gpu-check --spmm-only --spmm-variants 'row-warp,!.s4.,.s' --spmm-widths 1 \
  --sanitizer-tools memcheck,initcheck,racecheck --sanitizer-jobs 16 --sanitizer-timeout $(( LIM - 20 )) \
  --matrices .device/none --out $W/san > $W/san.log 2>&1
el $? >> $W/san.log
pack; grep -h -E "SpMM (memcheck|racecheck|initcheck):" $W/san.log; tail -n 2 $W/san.log
