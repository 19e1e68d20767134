#!/usr/bin/env bash
# Device run 30: the transposed column-major SpMM path: gpu-check of every `.t` variant (float64,
# edge cases and real matrices), the real set f32 column-major against cuSPARSE, example-app's
# retune, then the sanitizers over the `.t` slices with what time is left.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out30; rm -rf $W; mkdir -p $W/check $W/spmm $W/retune $W/san
[ -x .device/bin/xtask ] || xz -dk .device/bin/xtask.xz; X=./.device/bin/xtask
C=$(cat .device/commit)
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
mkdir -p .device/matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
timeout 170 $X gpu-check --spmm-only --spmm-variants .t --spmm-widths 5,64,256 --no-sanitizer --out $W/check > $W/check.log 2>&1; el $? >> $W/check.log
timeout 200 $X bench spmm --suite real --value f32 --layout col-major --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 175 --commit $C --stem spmm-real-colmajor-$G --out $W/spmm > $W/bench-real-cm.log 2>&1; el $? >> $W/bench-real-cm.log
timeout 100 $X retune --manifest-dir example-app --budget 15 --no-exhaustive --out $W/retune > $W/retune.log 2>&1; el $? >> $W/retune.log
cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
LIM=$(( 575 - ($(date +%s) - T0) ))
[ $LIM -gt 30 ] && timeout $LIM $X gpu-check --spmm-only --spmm-variants .t --spmm-widths 5,64 --sanitizer-jobs 16 --sanitizer-timeout $(( LIM - 20 )) --out $W/san > $W/san.log 2>&1; el $? >> $W/san.log
tar -C $W -czf $OUT/run30.tar.gz .
tail -n 4 $W/check.log; grep -E "speedup" $W/bench-real-cm.log | cut -c1-400; tail -n 2 $W/bench-real-cm.log; tail -n 2 $W/retune.log; tail -n 6 $W/san.log
