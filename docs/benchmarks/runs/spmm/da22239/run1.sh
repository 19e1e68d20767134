#!/usr/bin/env bash
# Device run 1: the SpMM check of every variant at N = 33, then the large SpMM benchmark.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=<work dir>; rm -rf $W; mkdir -p $W
X=./.device/bin/xtask
C=$(cat .device/commit)
mkdir -p .device/matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
T0=$(date +%s)
timeout 230 $X gpu-check --spmm-only --no-sanitizer --spmm-widths 33 --out $W/check > $W/check.log 2>&1; echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/check.log
T1=$(date +%s)
timeout 300 $X bench spmm --suite large --n 16,32,64,128,256 --budget-large 3 --max-seconds 270 --commit $C --out $W/spmm > $W/bench-large.log 2>&1; echo "exit $? after $(( $(date +%s) - T1 )) s" >> $W/bench-large.log
tar czf "$OUT/run1.tar.gz" -C $W .
tail -5 $W/check.log; grep -E "^\[|Summary|speedup" $W/bench-large.log | cut -c1-250; tail -3 $W/bench-large.log
