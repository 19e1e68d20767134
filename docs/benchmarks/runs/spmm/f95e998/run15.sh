#!/usr/bin/env bash
# Device run 15: the real set (f32 row-major) again, its report files this time (run14 returned
# its log only), then the large-graph set; everything packed into one archive at the end.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=<out>; mkdir -p $W/spmm
X=./.device/bin/xtask
C=$(cat .device/commit)
T0=$(date +%s)
mkdir -p .device/matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
timeout 190 $X bench spmm --suite real --value f32 --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 165 --commit $C --stem spmm-real-h200 --out $W/spmm > $W/bench-real.log 2>&1; echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/bench-real.log
cp $W/bench-real.log $OUT/
timeout 300 $X bench spmm --suite large --n 16,32,64,128,256 --budget-large 3 --max-seconds 270 --commit $C --out $W/spmm > $W/bench-large.log 2>&1; echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/bench-large.log
cp $W/bench-large.log $OUT/
tar -C $W -czf $OUT/run15.tar.gz .
grep -E "^- speedup" $W/bench-real.log $W/bench-large.log | cut -c1-400; tail -n 2 $W/bench-large.log
