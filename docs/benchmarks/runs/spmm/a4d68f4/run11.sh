#!/usr/bin/env bash
# Device run 11: nnz-split check at N = 33, example-app's retune, the GCN layer, the real f32 benchmark.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=<out>; rm -rf $W; mkdir -p $W/check $W/retune $W/spmm $W/app
X=./.device/bin/xtask
C=$(cat .device/commit)
mkdir -p .device/matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
pack() { tar czf "$OUT/run11.tar.gz" -C $W .; }
T=$(date +%s)
timeout 125 $X gpu-check --spmm-only --no-sanitizer --spmm-variants nnz-split --spmm-widths 33 --out $W/check > $W/check.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/check.log
pack
timeout 90 $X retune --manifest-dir example-app --budget 15 --no-exhaustive --out $W/retune > $W/retune.log 2>&1; cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
pack
cp docs/benchmarks/app-h200.json $W/app/
timeout 110 $X bench-app --gcn-only --commit $C --out $W/app > $W/app-gcn.log 2>&1; echo "exit $?" >> $W/app-gcn.log
pack
timeout 190 $X bench spmm --suite real --value f32 --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 165 --commit $C --stem spmm-real-h200 --out $W/spmm > $W/bench-real.log 2>&1; echo "exit $?" >> $W/bench-real.log
pack
tail -n 3 $W/check.log; tail -n 4 $W/app-gcn.log; grep -E "^- speedup" $W/bench-real.log | cut -c1-300
