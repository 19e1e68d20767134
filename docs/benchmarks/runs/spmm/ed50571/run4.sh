#!/usr/bin/env bash
# Device run 4: check of every nnz-split variant (built-in edge cases at N = 33, two real matrices with runs of
# empty rows at N = 32), example-app's retune, memcheck of 8-lane nnz-split, the real-matrix benchmark (f32), the GCN layer.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=<work dir>; rm -rf $W; mkdir -p $W/check $W/san $W/app $W/retune
X=./.device/bin/xtask
C=$(cat .device/commit)
mkdir -p .device/matrices .device/check-matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
for m in mbeacxc wiki-Vote; do cp .device/matrices/$m.mtx .device/check-matrices/; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
pack() { tar czf "$OUT/run4.tar.gz" -C $W .; }
T=$(date +%s)
timeout 125 $X gpu-check --spmm-only --no-sanitizer --spmm-variants nnz-split --spmm-widths 33 --matrices .device/check-matrices --out $W/check > $W/check.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/check.log
pack
T=$(date +%s)
timeout 75 $X retune --manifest-dir example-app --budget 15 --no-exhaustive --out $W/retune > $W/retune.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/retune.log
cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
pack
T=$(date +%s)
timeout 45 compute-sanitizer --tool memcheck --error-exitcode 1 --print-limit 50 $X gpu-check --sanitizer-pass --spmm-only --spmm-variants nnz-split.b256.g8.i1. --out $W/san > $W/san/memcheck-nnz-split-g8-i1.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/san/memcheck-nnz-split-g8-i1.log
pack
T=$(date +%s)
timeout 185 $X bench spmm --suite real --value f32 --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 160 --commit $C --stem spmm-real-h200 --out $W/spmm > $W/bench-real.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/bench-real.log
pack
cp docs/benchmarks/app-h200.json $W/app/
T=$(date +%s)
timeout 80 $X bench-app --gcn-only --commit $C --out $W/app > $W/app-gcn.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/app-gcn.log
pack
tail -n 3 $W/check.log; tail -n 2 $W/retune.log; tail -n 2 $W/san/*.log; grep -E "^- speedup|^- per width" $W/bench-real.log | cut -c1-400; tail -n 2 $W/bench-real.log; tail -n 4 $W/app-gcn.log
