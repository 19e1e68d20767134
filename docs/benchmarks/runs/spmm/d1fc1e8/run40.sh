#!/usr/bin/env bash
# Device run 40: the transposed column-major path where it was not checked yet (float64 at
# N = 256 on the edge cases, synthetic families and small real matrices; the sanitizers over
# the `.t` slices), then the real set f32 column-major against cuSPARSE again with the timing
# that probes host-bound launches as graph replays.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out40; rm -rf $W; mkdir -p $W/check256 $W/spmm $W/san
[ -x .device/bin/xtask ] || { xz -dk .device/bin/xtask.xz; chmod +x .device/bin/xtask; }
X=./.device/bin/xtask
C=$(cat .device/commit)
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
mkdir -p .device/matrices .device/small .device/none
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done
for f in .device/mtx/*.pk; do python3 .device/unpack.py "$f" ".device/matrices/$(basename "$f" .pk)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
for m in reorientation_1.mtx rajat19.mtx adder_dcop_05.mtx 1138_bus.mtx polblogs.mtx hangGlider_2.mtx lp_e226.mtx; do
  cp .device/matrices/$m .device/small/; done
cp .device/mtx/MANIFEST.tsv .device/small/
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
timeout 190 $X gpu-check --spmm-only --spmm-variants .t --spmm-widths 256 --matrices .device/small --no-sanitizer --out $W/check256 > $W/check256.log 2>&1; el $? >> $W/check256.log
timeout 200 $X bench spmm --suite real --value f32 --layout col-major --n 16,32,64,128,256 --budget-real 0.5 --max-seconds 175 --commit $C --stem spmm-real-colmajor-$G --out $W/spmm > $W/bench-real-cm.log 2>&1; el $? >> $W/bench-real-cm.log
LIM=$(( 570 - ($(date +%s) - T0) ))
[ $LIM -gt 40 ] && timeout $LIM $X gpu-check --spmm-only --spmm-variants .t --spmm-widths 5 --matrices .device/none --sanitizer-jobs 16 --sanitizer-timeout $(( LIM - 30 )) --out $W/san > $W/san.log 2>&1; el $? >> $W/san.log
tar -C $W -czf $OUT/run40.tar.gz .
tail -n 4 $W/check256.log; grep -E "speedup" $W/bench-real-cm.log | cut -c1-300; tail -n 2 $W/bench-real-cm.log; tail -n 8 $W/san.log
