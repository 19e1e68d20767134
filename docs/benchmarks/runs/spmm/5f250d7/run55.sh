#!/usr/bin/env bash
# Device run 55, one call, everything under $OUT/run55.tar.gz: the product's SpMM search on
# the real set (44 matrices), f32 row-major, N = 16, 32, 64, 128, 256, cuSPARSE's best
# algorithm in the same process, with the stripped release xtask of the commit before
# row-warp unroll 8 (.device/b55base) and then with it (.device/b54), back to back on one
# machine, 0.5 s search budget per case, each benchmark cut at MAXS s (default 190).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out55; rm -rf $W; mkdir -p $W/spmm .device/matrices
for b in b54 b55base; do xz -dkf .device/$b/xtask.xz; chmod +x .device/$b/xtask; done
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
pack() { tar -C $W -czf $OUT/run55.tar.gz .; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
for f in .device/mtxall/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done
for f in .device/mtxall/*.pk; do python3 .device/unpack.py "$f" ".device/matrices/$(basename "$f" .pk)" & done; wait
cp .device/mtxall/MANIFEST.tsv .device/matrices/
ls .device/matrices | wc -l > $W/unpack.log; el 0 >> $W/unpack.log
bench() { # build stem
  timeout $(( ${MAXS:-190} + 30 )) ./.device/$1/xtask bench spmm --suite real --value f32 --layout row-major \
    --n 16,32,64,128,256 --budget-real 0.5 --max-seconds ${MAXS:-190} --commit $(cat .device/$1/commit) \
    --stem $2 --out $W/spmm > $W/$2.log 2>&1
  el $? >> $W/$2.log; pack
}
bench b55base spmm-real-base-$G
bench b54 spmm-real-u8-$G
for l in spmm-real-base-$G spmm-real-u8-$G; do grep -E "speedup over|cases," $W/$l.log | cut -c1-260; tail -n 1 $W/$l.log; done
