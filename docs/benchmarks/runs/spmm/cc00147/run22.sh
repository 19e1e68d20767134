#!/usr/bin/env bash
# Device run 22: nnz-split ranges of 16 and 8 nonzeros: gpu-check of the new variants (float64,
# edge cases and real matrices), the real set f32 row-major against cuSPARSE, example-app's
# retune, then memcheck of the new variants in slices with what time is left.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out; mkdir -p $W/check $W/spmm $W/retune $W/san
X=./.device/bin/xtask
C=$(cat .device/commit)
T0=$(date +%s)
mkdir -p .device/matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
timeout 120 $X gpu-check --spmm-only --spmm-variants .r --no-sanitizer --out $W/check > $W/check.log 2>&1; el $? >> $W/check.log
timeout 215 $X bench spmm --suite real --value f32 --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 190 --commit $C --stem spmm-real-h200 --out $W/spmm > $W/bench-real.log 2>&1; el $? >> $W/bench-real.log
timeout 100 $X retune --manifest-dir example-app --budget 15 --no-exhaustive --out $W/retune > $W/retune.log 2>&1; el $? >> $W/retune.log
cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
LIM=$(( 530 - ($(date +%s) - T0) ))
[ $LIM -gt 30 ] && timeout $LIM $X gpu-check --spmm-only --spmm-variants .r --sanitizer-jobs 16 --sanitizer-timeout $(( LIM - 20 )) --out $W/san > $W/san.log 2>&1; el $? >> $W/san.log
tar -C $W -czf $OUT/run22.tar.gz .
tail -n 4 $W/check.log; grep -E "speedup" $W/bench-real.log | cut -c1-400; tail -n 2 $W/bench-real.log; tail -n 2 $W/retune.log; tail -n 6 $W/san.log
