#!/usr/bin/env bash
# Device run 2: large and real SpMM benchmarks, then the check of every row-warp variant at N = 33.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=<work dir>; rm -rf $W; mkdir -p $W
X=./.device/bin/xtask
C=$(cat .device/commit)
mkdir -p .device/matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
pack() { tar czf "$OUT/run2.tar.gz" -C $W .; }
T=$(date +%s)
timeout 265 $X bench spmm --suite large --n 16,32,64,128,256 --budget-large 3 --max-seconds 235 --commit $C --out $W/spmm > $W/bench-large.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/bench-large.log
pack
T=$(date +%s)
timeout 150 $X bench spmm --suite real --value f32 --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 135 --commit $C --stem spmm-real-h200 --out $W/spmm > $W/bench-real.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/bench-real.log
pack
T=$(date +%s)
timeout 125 $X gpu-check --spmm-only --no-sanitizer --spmm-variants row-warp --spmm-widths 33 --out $W/check > $W/check.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/check.log
pack
tail -4 $W/check.log; grep -E "^- speedup|^- per width" $W/bench-large.log $W/bench-real.log | cut -c1-400; tail -2 $W/bench-large.log $W/bench-real.log
