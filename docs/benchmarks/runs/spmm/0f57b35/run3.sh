#!/usr/bin/env bash
# Device run 3: the real-matrix SpMM benchmark in f64 (row-major) and in f32 column-major.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=<work dir>; rm -rf $W; mkdir -p $W
X=./.device/bin/xtask
C=$(cat .device/commit)
mkdir -p .device/matrices
[ -f .device/matrices/MANIFEST.tsv ] || { for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait; cp .device/mtx/MANIFEST.tsv .device/matrices/; }
pack() { tar czf "$OUT/run3.tar.gz" -C $W .; }
S=${1:-200}
T=$(date +%s)
timeout $((S + 25)) $X bench spmm --suite real --value f64 --n 16,32,64,128,256 --budget-real 0.5 --max-seconds $S --commit $C --stem spmm-real-f64-h200 --out $W/spmm > $W/bench-real-f64.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/bench-real-f64.log
pack
T=$(date +%s)
timeout $((S + 25)) $X bench spmm --suite real --value f32 --layout col-major --n 16,32,64,128,256 --budget-real 0.5 --max-seconds $S --commit $C --stem spmm-real-colmajor-h200 --out $W/spmm > $W/bench-real-cm.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/bench-real-cm.log
pack
grep -E "^- speedup|^- per width" $W/*.log | cut -c1-400; tail -2 $W/*.log
