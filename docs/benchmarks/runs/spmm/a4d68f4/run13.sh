#!/usr/bin/env bash
# Device run 13: the sanitizer slices run12 did not finish, cut finer (by vector width or items):
# memcheck of row-warp groups 1 and 2, then initcheck of nnz-split groups 4 / 8 and row-warp
# groups 1-8; 16 sanitizer processes at a time, logs written straight to the output folder.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=$OUT/san; mkdir -p $W
X=./.device/bin/xtask
LIM=${1:-170}
T0=$(date +%s)
job() {
  local tool=$1 s=$2 t=$(date +%s)
  local log=$W/$tool-${s%.}.log
  timeout $LIM compute-sanitizer --tool $tool --error-exitcode 1 --print-limit 50 $X gpu-check --sanitizer-pass --spmm-only --spmm-variants $s --out <tmp>/$tool-$s > $log 2>&1
  echo "exit $? after $(( $(date +%s) - t )) s" >> $log
}
export -f job; export W X LIM
{
  for s in row-warp.b256.g1.v1. row-warp.b256.g1.v2. row-warp.b256.g1.v4. row-warp.b256.g2.v1. row-warp.b256.g2.v2. row-warp.b256.g2.v4.; do echo "memcheck $s"; done
  for s in nnz-split.b256.g4.i1. nnz-split.b256.g4.i4. nnz-split.b256.g4.i16. nnz-split.b256.g8.i1. nnz-split.b256.g8.i4. nnz-split.b256.g8.i16. row-warp.b256.g1.v1. row-warp.b256.g1.v2. row-warp.b256.g1.v4. row-warp.b256.g2.v1. row-warp.b256.g2.v2. row-warp.b256.g2.v4. row-warp.b256.g4.v1. row-warp.b256.g4.v2. row-warp.b256.g4.v4. row-warp.b256.g8.v1. row-warp.b256.g8.v2. row-warp.b256.g8.v4.; do echo "initcheck $s"; done
} | timeout $((LIM + 10)) xargs -P 16 -n 2 bash -c 'job "$0" "$1"'
echo "all after $(( $(date +%s) - T0 )) s"
for f in $W/*.log; do echo "$(basename $f): $(grep -h 'sanitizer pass: done\|ERROR SUMMARY' $f | tr '\n' ' ') $(tail -n1 $f)"; done
