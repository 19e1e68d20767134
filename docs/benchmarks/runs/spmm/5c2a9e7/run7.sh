#!/usr/bin/env bash
# Device run 7: every col-tile variant checked (built-in edge cases at N = 33, then two real matrices at N = 32),
# example-app's retune and its freshness check, the real-matrix benchmark (f32, row-major).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=<out>; rm -rf $W; mkdir -p $W/check $W/retune $W/spmm
X=./.device/bin/xtask
C=$(cat .device/commit)
mkdir -p .device/matrices .device/check-matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
for m in mbeacxc wiki-Vote; do cp .device/matrices/$m.mtx .device/check-matrices/; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
pack() { tar czf "$OUT/run7.tar.gz" -C $W .; }
T=$(date +%s)
timeout 150 $X gpu-check --spmm-only --no-sanitizer --spmm-variants col-tile --spmm-widths 33 --matrices .device/check-matrices --out $W/check > $W/check.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/check.log
pack
T=$(date +%s)
timeout 90 $X retune --manifest-dir example-app --budget 15 --no-exhaustive --out $W/retune > $W/retune.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/retune.log
cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
timeout 30 $X retune --manifest-dir example-app --check > $W/retune-check.log 2>&1; echo "exit $?" >> $W/retune-check.log
pack
T=$(date +%s)
timeout 190 $X bench spmm --suite real --value f32 --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 165 --commit $C --stem spmm-real-h200 --out $W/spmm > $W/bench-real.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/bench-real.log
pack
tail -n 4 $W/check.log; grep -A3 "spmm kernel" $W/retune.log; tail -n 3 $W/retune-check.log; grep -E "^- speedup|^- per width|compiled" $W/bench-real.log | cut -c1-400; tail -n 2 $W/bench-real.log
