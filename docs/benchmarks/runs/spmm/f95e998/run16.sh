#!/usr/bin/env bash
# Device run 16: the SpMM sanitizer slices left (row-warp with a thread per row, cut by vector
# width and coarsening; initcheck of row-warp groups 2 at vector width 1), 21 at a time.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=<out>; mkdir -p $W/san
P=""
for t in memcheck initcheck; do for v in 1 2 4; do for c in 1 2 4; do P="$P $t row-warp.b256.g1.v$v.c$c."; done; done; done
for c in 1 2 4; do P="$P initcheck row-warp.b256.g2.v1.c$c."; done
bash .device/sanitize.sh $W/san ${1:-420} 21 "$P" > $W/san/SUMMARY.txt 2>&1
cp $W/san/SUMMARY.txt $OUT/
tar -C $W -czf $OUT/run16.tar.gz .
cat $W/san/SUMMARY.txt
