#!/usr/bin/env bash
# Device run 21: example-app's retune, a profile of two short-row SpMM losses (nsys kernel table,
# ncu of our nnz-split main kernel), then the large graphs in the given order (part a),
# or the large graphs in degree and RCM order and the GCN layer in degree order (part b).
set -u
PART=${1:-a}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
W=out$PART; mkdir -p $W
X=./.device/bin/xtask
C=$(cat .device/commit)
T0=$(date +%s)
mkdir -p .device/matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
large() { # $1 = order (none|degree|rcm), $2 = seconds
  local extra=""; [ "$1" != none ] && extra="--reorder $1"
  mkdir -p $W/spmm-$1
  timeout $2 $X bench spmm --suite large --n 16,32,64,128,256 --budget-large 3 --max-seconds $(( $2 - 25 )) $extra --commit $C --stem spmm-large-$1-h200 --out $W/spmm-$1 > $W/bench-large-$1.log 2>&1
  echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/bench-large-$1.log
}
if [ "$PART" = a ]; then
  mkdir -p $W/retune $W/prof
  timeout 100 $X retune --manifest-dir example-app --budget 15 --no-exhaustive --out $W/retune > $W/retune.log 2>&1; echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/retune.log
  cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
  P="bench spmm --suite real --only Maragal_6,email-Enron --n 32 --value f32 --budget-real 0.15 --reps 5 --commit $C --out $W/prof"
  timeout 90 nsys profile -o $W/prof/nsys --force-overwrite true --stats=true $X $P --stem nsys > $W/prof/nsys.log 2>&1; echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/prof/nsys.log
  timeout 90 ncu -k regex:'nnz_split_b256_g(8|16)_i1_v(1|2)_c2_u(1|4)_ldg_rm_f32_n32$' -c 4 --set detailed $X $P --stem ncu > $W/prof/ncu.log 2>&1; echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/prof/ncu.log
  rm -f $W/prof/*.nsys-rep $W/prof/*.sqlite
  large none $(( 590 - ($(date +%s) - T0) ))
else
  large degree 200
  large rcm 200
  mkdir -p $W/app; cp docs/benchmarks/app-h200.json $W/app/
  timeout 150 $X bench-app --gcn-only --gcn-reorder degree --commit $C --out $W/app > $W/app-gcn-degree.log 2>&1; echo "exit $? after $(( $(date +%s) - T0 )) s" >> $W/app-gcn-degree.log
fi
tar -C $W -czf $OUT/run21$PART.tar.gz .
grep -h "speedup\|with X's and Y's rows" $W/bench-large-*.log | cut -c1-400; tail -n 4 $W/app-gcn-degree.log 2>/dev/null; tail -n 3 $W/retune.log 2>/dev/null
grep -A25 "cuda_gpu_kern_sum" $W/prof/nsys.log 2>/dev/null | cut -c1-250 | head -40; tail -n 2 $W/prof/ncu.log 2>/dev/null
