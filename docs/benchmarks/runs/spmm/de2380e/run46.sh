#!/usr/bin/env bash
# Device run 46: the real set column-major (f32, then f64) against cuSPARSE with the settled
# re-timing of bc1d2c2, then float64 at N = 64 and 256 for the nnz-split points of ranges of
# 16 and 8 nonzeros outside the transposed path (never checked at those widths).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out46; rm -rf $W; mkdir -p $W/spmm
[ -x .device/bin/xtask ] || { xz -dk .device/bin/xtask.xz; chmod +x .device/bin/xtask; }
X=./.device/bin/xtask
C=$(cat .device/commit)
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
mkdir -p .device/matrices .device/none
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done
for f in .device/mtx/*.pk; do python3 .device/unpack.py "$f" ".device/matrices/$(basename "$f" .pk)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
B="$X bench spmm --suite real --layout col-major --n 16,32,64,128,256 --budget-real 0.5 --commit $C --out $W/spmm"
timeout 200 $B --value f32 --max-seconds 175 --stem spmm-real-colmajor-$G > $W/bench-real-cm.log 2>&1; el $? >> $W/bench-real-cm.log
timeout 195 $B --value f64 --max-seconds 167 --stem spmm-real-f64-colmajor-$G > $W/bench-real-f64-cm.log 2>&1; el $? >> $W/bench-real-f64-cm.log
LIM=$(( 580 - ($(date +%s) - T0) ))
mkdir -p $W/check-r
[ $LIM -gt 30 ] && timeout $LIM $X gpu-check --spmm-only --spmm-variants 'nnz-split,.r,!.t' --spmm-widths 64,256 \
  --matrices .device/none --no-sanitizer --out $W/check-r > $W/check-r.log 2>&1; el $? >> $W/check-r.log
tar -C $W -czf $OUT/run46.tar.gz .
for l in bench-real-cm bench-real-f64-cm; do grep -E "geomean|below" $W/$l.log | cut -c1-300 | tail -n 6; tail -n 1 $W/$l.log; done
tail -n 8 $W/check-r.log
