#!/usr/bin/env bash
# Device run 8: the real-matrix benchmark with column-major X (f32), the GCN layer.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=<out>; rm -rf $W; mkdir -p $W/spmm $W/app
X=./.device/bin/xtask
C=$(cat .device/commit)
mkdir -p .device/matrices
if [ ! -f .device/matrices/MANIFEST.tsv ]; then
  for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
  cp .device/mtx/MANIFEST.tsv .device/matrices/
fi
pack() { tar czf "$OUT/run8.tar.gz" -C $W .; }
T=$(date +%s)
timeout 150 $X bench spmm --suite real --value f32 --layout col-major --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 125 --commit $C --stem spmm-real-colmajor-h200 --out $W/spmm > $W/bench-real-cm.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/bench-real-cm.log
pack
cp docs/benchmarks/app-h200.json $W/app/
T=$(date +%s)
timeout 120 $X bench-app --gcn-only --commit $C --out $W/app > $W/app-gcn.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/app-gcn.log
pack
grep -E "^- speedup|^- per width|compiled" $W/bench-real-cm.log | cut -c1-400; tail -n 2 $W/bench-real-cm.log; tail -n 4 $W/app-gcn.log
