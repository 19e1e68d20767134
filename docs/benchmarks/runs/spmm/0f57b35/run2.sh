#!/usr/bin/env bash
# Device run 2: the real-matrix SpMM benchmark (f32), example-app's retune, the GCN layer, initcheck of 4-lane nnz-split.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=<work dir>; rm -rf $W; mkdir -p $W/app $W/retune $W/san
X=./.device/bin/xtask
C=$(cat .device/commit)
mkdir -p .device/matrices
[ -f .device/matrices/MANIFEST.tsv ] || { for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait; cp .device/mtx/MANIFEST.tsv .device/matrices/; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
pack() { tar czf "$OUT/run2.tar.gz" -C $W .; }
T=$(date +%s)
timeout 225 $X bench spmm --suite real --value f32 --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 195 --commit $C --stem spmm-real-h200 --out $W/spmm > $W/bench-real.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/bench-real.log
pack
T=$(date +%s)
timeout 150 $X retune --manifest-dir example-app --budget 15 --no-exhaustive --out $W/retune > $W/retune.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/retune.log
cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
pack
cp docs/benchmarks/app-h200.json $W/app/
T=$(date +%s)
timeout 130 $X bench-app --gcn-only --commit $C --out $W/app > $W/app-gcn.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/app-gcn.log
pack
T=$(date +%s)
timeout 60 compute-sanitizer --tool initcheck --error-exitcode 1 --print-limit 50 $X gpu-check --sanitizer-pass --spmm-only --spmm-variants nnz-split.b256.g4.i1 --out $W/san > $W/san/initcheck-nnz-split-g4-i1.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/san/initcheck-nnz-split-g4-i1.log
pack
grep -E "^- speedup|^- per width" $W/bench-real.log | cut -c1-400; tail -2 $W/bench-real.log; tail -3 $W/retune.log $W/app-gcn.log $W/san/*.log
