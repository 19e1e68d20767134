#!/usr/bin/env bash
# Device run 51, one call, everything under $OUT/run51.tar.gz: the row-part SpMM strategy at
# 63796f6 (.device/b51). (1) Float64 check of every row-part variant on the edge cases and
# synthetic families, N = 5 and 64, both layouts and value types, plain and fused. (2) Every
# variant of the space (row-part included; each checked against float64 before it is timed)
# swept on the 20 matrices with a row-major case below 1.0 in the merged report, f32
# row-major, N = 32 and 64, with cuSPARSE in the same run. (3) example-app's retune and its
# freshness check. (4) memcheck and initcheck over the row-part slices outside the transposed
# path (its transposes were sanitized before), with the time left before TOTAL s (default 585).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out51; rm -rf $W; mkdir -p $W/check $W/spmm $W/retune $W/san .device/none .device/matrices
B=.device/b51
xz -dkf $B/xtask.xz; chmod +x $B/xtask
X=./$B/xtask
C=$(cat $B/commit)
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
left() { echo $(( $1 - ($(date +%s) - T0) )); }
pack() { tar -C $W -czf $OUT/run51.tar.gz .; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
( for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done
  for f in .device/mtx/*.pk; do python3 .device/unpack.py "$f" ".device/matrices/$(basename "$f" .pk)" & done; wait
  cp .device/mtx/MANIFEST.tsv .device/matrices/ ) &
UNPACK=$!
timeout 110 $X gpu-check --spmm-only --spmm-variants row-part --spmm-widths 5,64 --no-sanitizer \
  --matrices .device/none --out $W/check > $W/check.log 2>&1; el $? >> $W/check.log
pack; tail -n 3 $W/check.log
wait $UNPACK
L=1138_bus,EX5,Groebner_id2003_aug,MIT8,Maragal_6,ani4,astro-ph,bayer10,bcspwr10,bcsstk13,bcsstk16,bcsstk18,cnr-2000,email-Enron,facebook_combined,hangGlider_2,raefsky1,reorientation_1,s3rmt3m3,wiki-Vote
timeout $(left 330) $X bench spmm --suite real --value f32 --layout row-major --n 32,64 --budget-real 0.5 \
  --sweep real --only $L --max-seconds $(left 300) --no-floor --commit $C \
  --stem spmm-sweep-rowpart-$G --out $W/spmm > $W/sweep.log 2>&1; el $? >> $W/sweep.log
pack; grep -E "speedup over" $W/sweep.log | cut -c1-250 | tail -n 1; tail -n 1 $W/sweep.log
timeout $(left 430) $X retune --manifest-dir example-app --budget 12 --no-exhaustive --out $W/retune > $W/retune.log 2>&1; el $? >> $W/retune.log
cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
timeout 20 $X retune --manifest-dir example-app --check > $W/retune-check.log 2>&1; el $? >> $W/retune-check.log
pack; tail -n 2 $W/retune.log; tail -n 1 $W/retune-check.log
LIM=$(left ${TOTAL:-585})
[ $LIM -gt 60 ] && timeout $LIM $X gpu-check --spmm-only --spmm-variants 'row-part,!.t' --spmm-widths 5 \
  --sanitizer-jobs 16 --sanitizer-timeout $(( LIM - 30 )) --matrices .device/none --out $W/san > $W/san.log 2>&1
el $? >> $W/san.log
pack; grep -h -E "SpMM (memcheck|racecheck|initcheck)" $W/san.log | awk '{print $4}' | sort | uniq -c; tail -n 4 $W/san.log
