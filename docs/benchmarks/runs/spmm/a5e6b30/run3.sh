#!/usr/bin/env bash
# Device run 3: example-app retune, the GCN layer, memcheck of the row-warp SpMM variants.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=<work dir>; rm -rf $W; mkdir -p $W/app $W/retune $W/san
X=./.device/bin/xtask
C=$(cat .device/commit)
mkdir -p .device/matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
pack() { tar czf "$OUT/run3.tar.gz" -C $W .; }
T=$(date +%s)
timeout 140 $X retune --manifest-dir example-app --budget 10 --no-exhaustive --out $W/retune > $W/retune.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/retune.log
cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
pack
cp docs/benchmarks/app-h200.json $W/app/
T=$(date +%s)
timeout 140 $X bench-app --gcn-only --commit $C --out $W/app > $W/app-gcn.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/app-gcn.log
pack
T=$(date +%s)
timeout 170 compute-sanitizer --tool memcheck --error-exitcode 1 --print-limit 50 $X gpu-check --sanitizer-pass --spmm-only --spmm-variants row-warp --out $W/san > $W/san/memcheck-row-warp.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/san/memcheck-row-warp.log
pack
tail -3 $W/retune.log $W/app-gcn.log; tail -6 $W/san/memcheck-row-warp.log
