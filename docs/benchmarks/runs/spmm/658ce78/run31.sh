#!/usr/bin/env bash
# Device run 31: column-major SpMM where it was not measured yet: the large graphs (f32) and
# the real set in f64, both against cuSPARSE SpMM's best algorithm.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out31; rm -rf $W; mkdir -p $W/spmm $W/check
[ -x .device/bin/xtask ] || xz -dk .device/bin/xtask.xz; X=./.device/bin/xtask
C=$(cat .device/commit)
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
if [ ! -d .device/matrices ]; then
  mkdir -p .device/matrices
  for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
  cp .device/mtx/MANIFEST.tsv .device/matrices/
fi
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
timeout 255 $X bench spmm --suite large --layout col-major --n 16,32,64,128,256 --budget-large 3 --max-seconds 230 --commit $C --stem spmm-large-colmajor-$G --out $W/spmm > $W/bench-large-cm.log 2>&1; el $? >> $W/bench-large-cm.log
S=$(( 420 - ($(date +%s) - T0) - 25 ))
timeout $(( S + 20 )) $X bench spmm --suite real --value f64 --layout col-major --n 16,32,64,128,256 --budget-real 0.5 --max-seconds $S --commit $C --stem spmm-real-f64-colmajor-$G --out $W/spmm > $W/bench-real-f64-cm.log 2>&1; el $? >> $W/bench-real-f64-cm.log
timeout $(( 560 - ($(date +%s) - T0) )) $X gpu-check --spmm-only --spmm-variants .t --spmm-widths 32 --no-sanitizer --out $W/check > $W/check.log 2>&1; el $? >> $W/check.log
tar -C $W -czf $OUT/run31.tar.gz .
grep -E "speedup" $W/bench-large-cm.log $W/bench-real-f64-cm.log | cut -c1-400; tail -n 2 $W/bench-large-cm.log $W/bench-real-f64-cm.log
