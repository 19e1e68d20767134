#!/usr/bin/env bash
# Device run 14: the measurement harness's batched probe and the SpMM search's records-first
# order measured: example-app's retune, the GCN layer, the real set (f32 row-major); then the
# first half of the SpMM sanitizer slices left (16-17 compute-sanitizer processes at a time).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=$OUT; mkdir -p $W/retune $W/spmm $W/app $W/san
X=./.device/bin/xtask
C=$(cat .device/commit)
T0=$(date +%s)
mkdir -p .device/matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
timeout 90 $X retune --manifest-dir example-app --budget 15 --no-exhaustive --out $W/retune > $W/retune.log 2>&1; echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/retune.log
cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
cp docs/benchmarks/app-h200.json $W/app/
timeout 110 $X bench-app --gcn-only --commit $C --out $W/app > $W/app-gcn.log 2>&1; echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/app-gcn.log
timeout 190 $X bench spmm --suite real --value f32 --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 165 --commit $C --stem spmm-real-h200 --out $W/spmm > $W/bench-real.log 2>&1; echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/bench-real.log
LIM=$(( 585 - ($(date +%s) - T0) ))
bash .device/sanitize.sh $W/san $LIM 17 \
  "initcheck row-warp.b256.g2.v2. initcheck row-warp.b256.g2.v4. initcheck row-warp.b256.g4.v1. initcheck row-warp.b256.g4.v2. initcheck row-warp.b256.g4.v4. initcheck row-warp.b256.g8.v1. initcheck row-warp.b256.g8.v2. initcheck row-warp.b256.g8.v4. initcheck nnz-split.b256.g4.i16.v1. initcheck nnz-split.b256.g4.i16.v2. initcheck nnz-split.b256.g4.i16.v4. initcheck nnz-split.b256.g8.i16.v1. initcheck nnz-split.b256.g8.i16.v2. initcheck nnz-split.b256.g8.i16.v4. memcheck row-warp.b256.g2.v1.c1. memcheck row-warp.b256.g2.v1.c2. memcheck row-warp.b256.g2.v1.c4." > $W/san/SUMMARY.txt 2>&1
tail -n 3 $W/retune.log; tail -n 4 $W/app-gcn.log; grep -E "^- speedup" $W/bench-real.log | cut -c1-300; tail -n 3 $W/bench-real.log; cat $W/san/SUMMARY.txt
