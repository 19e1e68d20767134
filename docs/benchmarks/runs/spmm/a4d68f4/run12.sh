#!/usr/bin/env bash
# Device run 12: compute-sanitizer (memcheck, racecheck, initcheck) over every SpMM variant on the
# sanitizer edge cases at N = 5 and 32, f32 and f64, both layouts: the space cut into 18 slices by
# family, block and group, 16 sanitizer processes at a time.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=<out>; rm -rf $W; mkdir -p $W/san
X=./.device/bin/xtask
SLICES="col-tile.b128.g1. col-tile.b128.g32. col-tile.b128.g4. col-tile.b256.g1. col-tile.b256.g32. col-tile.b256.g4. nnz-split.b256.g16. nnz-split.b256.g4. nnz-split.b256.g8. nnz-split.b256.i1. nnz-split.b256.i16. nnz-split.b256.i4. row-warp.b256.g1. row-warp.b256.g16. row-warp.b256.g2. row-warp.b256.g32. row-warp.b256.g4. row-warp.b256.g8."
LIM=${1:-520}
T0=$(date +%s)
job() {
  local tool=$1 s=$2 t=$(date +%s)
  local log=$W/san/$tool-${s%.}.log
  timeout $LIM compute-sanitizer --tool $tool --error-exitcode 1 --print-limit 50 $X gpu-check --sanitizer-pass --spmm-only --spmm-variants $s --out $W/san/out-$tool-$s > $log 2>&1
  echo "exit $? after $(( $(date +%s) - t )) s" >> $log
}
export -f job; export W X LIM
for tool in memcheck initcheck racecheck; do for s in $SLICES; do echo "$tool $s"; done; done | xargs -P 16 -n 2 bash -c 'job "$0" "$1"'
echo "all after $(( $(date +%s) - T0 )) s"
rm -rf $W/san/out-*
tar czf "$OUT/run12.tar.gz" -C $W .
for f in $W/san/*.log; do echo "$(basename $f): $(grep -h 'sanitizer pass: done\|ERROR SUMMARY' $f | tr '\n' ' ') $(tail -n1 $f)"; done
