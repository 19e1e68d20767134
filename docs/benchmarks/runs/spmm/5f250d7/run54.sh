#!/usr/bin/env bash
# Device run 54, one call, everything under $OUT/run54.tar.gz: row-warp unroll 8 (8 X rows in
# flight per lane where a lane holds at most 4 values of a row) with the stripped release
# xtask of the commit in .device/b54/commit. (1) Float64 check of every row-warp unroll-8
# variant on the edge cases and synthetic families, N = 5 and 64, both layouts and value
# types, plain and fused. (2) example-app's `gcn` kernel retuned alone (.device/gcnapp holds
# its declaration unchanged) with a 60 s budget, and its freshness check. (3) Every variant of
# the space (each checked against float64 before it is timed) swept on the 20 matrices with a
# row-major case below 1.0 in the merged report, f32 row-major, N = 32 and 64, cuSPARSE in the
# same run. (4) memcheck, racecheck and initcheck over the unroll-8 slices at N = 5 with the
# time left before TOTAL s (default 570).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out54; rm -rf $W; mkdir -p $W/check $W/spmm $W/retune $W/san .device/none
B=.device/b54
xz -dkf $B/xtask.xz; chmod +x $B/xtask
X=./$B/xtask
C=$(cat $B/commit)
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
left() { echo $(( $1 - ($(date +%s) - T0) )); }
pack() { tar -C $W -czf $OUT/run54.tar.gz .; }
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)"; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
timeout 120 $X gpu-check --spmm-only --spmm-variants 'row-warp,.u8' --spmm-widths 5,64 --no-sanitizer \
  --matrices .device/none --out $W/check > $W/check.log 2>&1; el $? >> $W/check.log
pack; tail -n 3 $W/check.log
timeout 150 $X retune --manifest-dir .device/gcnapp --budget 60 --no-exhaustive --out $W/retune > $W/retune.log 2>&1; el $? >> $W/retune.log
cp .device/gcnapp/SparseRL.lock $W/retune/SparseRL.lock.after 2>/dev/null
timeout 20 $X retune --manifest-dir .device/gcnapp --check > $W/retune-check.log 2>&1; el $? >> $W/retune-check.log
pack; tail -n 4 $W/retune.log; tail -n 2 $W/retune-check.log
L=1138_bus,EX5,Groebner_id2003_aug,MIT8,Maragal_6,ani4,astro-ph,bayer10,bcspwr10,bcsstk13,bcsstk16,bcsstk18,cnr-2000,email-Enron,facebook_combined,hangGlider_2,raefsky1,reorientation_1,s3rmt3m3,wiki-Vote
timeout $(left 470) $X bench spmm --suite real --value f32 --layout row-major --n 32,64 --budget-real 0.5 \
  --sweep real --only $L --max-seconds $(left 440) --no-floor --commit $C \
  --stem spmm-sweep-u8-$G --out $W/spmm > $W/sweep.log 2>&1; el $? >> $W/sweep.log
pack; grep -E "speedup over" $W/sweep.log | cut -c1-250 | tail -n 1; tail -n 1 $W/sweep.log
LIM=$(left ${TOTAL:-570})
[ $LIM -gt 60 ] && timeout $LIM $X gpu-check --spmm-only --spmm-variants 'row-warp,.u8' --spmm-widths 5 \
  --sanitizer-jobs 16 --sanitizer-timeout $(( LIM - 30 )) --matrices .device/none --out $W/san > $W/san.log 2>&1
el $? >> $W/san.log
pack; grep -h -E "SpMM (memcheck|racecheck|initcheck)" $W/san.log | awk '{print $4}' | sort | uniq -c; tail -n 4 $W/san.log
