#!/usr/bin/env bash
# Device run 17: the real set column-major (f32) and in f64 (row-major) with run14's harness and
# search order; packed into one archive.
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
timeout 170 $X bench spmm --suite real --value f32 --layout col-major --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 145 --commit $C --stem spmm-real-colmajor-h200 --out $W/spmm > $W/bench-real-cm.log 2>&1; echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/bench-real-cm.log
timeout 170 $X bench spmm --suite real --value f64 --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 145 --commit $C --stem spmm-real-f64-h200 --out $W/spmm > $W/bench-real-f64.log 2>&1; echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/bench-real-f64.log
tar -C $W -czf $OUT/run17.tar.gz .
grep -E "^- speedup" $W/bench-real-cm.log $W/bench-real-f64.log | cut -c1-400; tail -n 2 $W/bench-real-cm.log $W/bench-real-f64.log
