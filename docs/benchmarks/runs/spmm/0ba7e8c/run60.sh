#!/usr/bin/env bash
# Device run 60, one call, everything under $OUT/run60.tar.gz, with the stripped release
# xtask of the commit in .device/b60/commit (row-warp rows split over 4 groups of a block
# with 8 X rows in flight, partial sums added in shared memory): (1) float64 check of every
# split variant on the edge cases and synthetic families at N = 5 and 64, both layouts and
# value types, plain and fused; (2) every variant of the space (each checked against float64
# on the matrix before it is timed) swept on the 20 matrices with a row-major case below 1.0
# in the merged report, f32 row-major, N = 32 and 64, cuSPARSE in the same run;
# (3) example-app's `gcn` kernel retuned alone (`retune --kernel gcn`, the lock's other
# entries kept; if that fails, the same declaration alone in .device/gcnapp) with a 60 s
# budget, and the whole lock's freshness check; (4) racecheck, memcheck and initcheck over
# the split slices at the sanitizer widths, 16 processes at a time, until TOTAL s.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out60; rm -rf $W; mkdir -p $W/check $W/spmm $W/retune $W/san .device/none .device/matrices
B=.device/b60
xz -dkf $B/xtask.xz; chmod +x $B/xtask
X=./$B/xtask
C=$(cat $B/commit)
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
left() { echo $(( $1 - ($(date +%s) - T0) )); }
pack() { tar -C $W -czf $OUT/run60.tar.gz .; }
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)"; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
timeout 130 $X gpu-check --spmm-only --spmm-variants 'row-warp,.s' --spmm-widths 5,64 --no-sanitizer \
  --matrices .device/none --out $W/check > $W/check.log 2>&1; el $? >> $W/check.log
pack; tail -n 3 $W/check.log
L=1138_bus,EX5,Groebner_id2003_aug,MIT8,Maragal_6,ani4,astro-ph,bayer10,bcspwr10,bcsstk13,bcsstk16,bcsstk18,cnr-2000,email-Enron,facebook_combined,hangGlider_2,raefsky1,reorientation_1,s3rmt3m3,wiki-Vote
timeout $(left 250) $X bench spmm --suite real --value f32 --layout row-major --n 32,64 --budget-real 0.5 \
  --sweep real --only $L --max-seconds $(left 230) --no-floor --commit $C \
  --stem spmm-sweep-split-$G --out $W/spmm > $W/sweep.log 2>&1; el $? >> $W/sweep.log
pack; grep -E "speedup over" $W/sweep.log | cut -c1-250 | tail -n 1; tail -n 1 $W/sweep.log
cp example-app/SparseRL.lock $W/retune/SparseRL.lock.before
timeout 170 $X retune --manifest-dir example-app --kernel gcn --budget 60 --no-exhaustive --out $W/retune > $W/retune.log 2>&1; rc=$?; el $rc >> $W/retune.log
if [ $rc -ne 0 ] && [ $(left 480) -gt 100 ]; then
  timeout $(left 480) $X retune --manifest-dir .device/gcnapp --budget 60 --no-exhaustive --out $W/retune > $W/retune-gcnapp.log 2>&1; el $? >> $W/retune-gcnapp.log
  cp .device/gcnapp/SparseRL.lock $W/retune/SparseRL.lock.gcnapp 2>/dev/null
fi
cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
timeout 30 $X retune --manifest-dir example-app --check > $W/retune-check.log 2>&1; el $? >> $W/retune-check.log
pack; tail -n 4 $W/retune.log; tail -n 2 $W/retune-check.log
LIM=$(left ${TOTAL:-575})
[ $LIM -gt 40 ] && timeout $LIM $X gpu-check --spmm-only --spmm-variants 'row-warp,.s' --spmm-widths 1 \
  --sanitizer-tools racecheck,memcheck,initcheck --sanitizer-jobs 16 --sanitizer-timeout $(( LIM - 20 )) \
  --matrices .device/none --out $W/san > $W/san.log 2>&1
el $? >> $W/san.log
pack; grep -h -E "SpMM (memcheck|racecheck|initcheck):" $W/san.log; tail -n 2 $W/san.log
