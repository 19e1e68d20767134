#!/usr/bin/env bash
# Device run 9: the GCN layer (fused and plain SpMM timed), the real-matrix benchmark in f64 (row-major).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=<out>; rm -rf $W; mkdir -p $W/spmm $W/app
X=./.device/bin/xtask
C=$(cat .device/commit)
mkdir -p .device/matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
pack() { tar czf "$OUT/run9.tar.gz" -C $W .; }
cp docs/benchmarks/app-h200.json $W/app/
T=$(date +%s)
timeout 105 $X bench-app --gcn-only --commit $C --out $W/app > $W/app-gcn.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/app-gcn.log
pack
T=$(date +%s)
timeout 150 $X bench spmm --suite real --value f64 --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 128 --commit $C --stem spmm-real-f64-h200 --out $W/spmm > $W/bench-real-f64.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/bench-real-f64.log
pack
tail -n 5 $W/app-gcn.log; grep -E "^- speedup|^- per width|compiled" $W/bench-real-f64.log | cut -c1-400; tail -n 2 $W/bench-real-f64.log
