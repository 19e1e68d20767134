#!/usr/bin/env bash
# Device run 64, two calls on one warm machine, everything under $OUT/run64-PART.tar.gz, with the
# stripped release xtask of .device/b64 (nnz-split adds split rows' partial sums with one f32
# vector atomic per lane and column slice on sm_90) and of .device/b63 (the same space before it).
# PART=1: (1) float64 check of every nnz-split point (both layouts, the transposed path, both
# value types, plain and fused) on the edge cases and synthetic families at N = 5 and 64, six
# processes; (2) example-app's `gcn` kernel retuned alone and the lock's freshness check;
# (3) the product's SpMM search on the 44 real matrices, f32 row-major, N = 16-256, cuSPARSE's
# best algorithm in the same process, with b64; (4) memcheck and initcheck over the nnz-split
# slices at the sanitizer width, 16 processes at a time, until the call's limit (what it cuts
# is reported as not run). PART=2: (3) with b63, on the same machine right after. PART=3 (one
# call: (1), (2), then (3) with b64 and b63 back to back with equal time limits; MX=mtxsub,
# the real set less road_NW, so that both binaries and the matrices fit the carry limit).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
P=${PART:-1}
W=out64-$P; rm -rf $W; mkdir -p $W/retune $W/san $W/spmm .device/none .device/matrices
for b in b63 b64; do [ -f .device/$b/xtask.xz ] && { xz -dkf .device/$b/xtask.xz; chmod +x .device/$b/xtask; }; done
X=./.device/b64/xtask
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
left() { echo $(( $1 - ($(date +%s) - T0) )); }
pack() { tar -C $W -czf $OUT/run64-$P.tar.gz .; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
echo "gpu $G part $P"
check() {
  local i=0
  for f in 'nnz-split,!.t,.v1.' 'nnz-split,!.t,!.v1.' 'nnz-split,.t'; do
    i=$((i+1))
    for n in 5 64; do
      timeout ${CHK:-200} $X gpu-check --spmm-only --spmm-variants "$f" --spmm-widths $n --no-sanitizer \
        --matrices .device/none --out $W/check$i-$n > $W/check$i-$n.log 2>&1 &
    done
  done
  wait; el 0 >> $W/check1-5.log
  pack; for f in $W/check*.log; do echo "$f: $(grep -h 'passed in\|FAIL\|failed' $f | tail -n 1)"; done
}
retune() {
  cp example-app/SparseRL.lock $W/retune/SparseRL.lock.before
  timeout 150 $X retune --manifest-dir example-app --kernel gcn --budget 60 --no-exhaustive --out $W/retune > $W/retune.log 2>&1
  el $? >> $W/retune.log
  cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
  timeout 30 $X retune --manifest-dir example-app --check > $W/retune-check.log 2>&1; el $? >> $W/retune-check.log
  pack; tail -n 4 $W/retune.log; tail -n 2 $W/retune-check.log
}
san() {
  local LIM=$(left ${TOTAL:-585})
  [ $LIM -gt 120 ] || { echo "no time for the sanitizers"; return; }
  timeout $LIM $X gpu-check --spmm-only --spmm-variants 'nnz-split' --spmm-widths 1 \
    --sanitizer-tools memcheck,initcheck --sanitizer-jobs 16 --sanitizer-timeout $(( LIM - 15 )) \
    --matrices .device/none --out $W/san > $W/san.log 2>&1
  el $? >> $W/san.log; pack; grep -h -E "SpMM (memcheck|racecheck|initcheck):" $W/san.log; tail -n 1 $W/san.log
}
MX=${MX:-mtxall}
unpack() {
  for f in .device/$MX/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done
  for f in .device/$MX/*.pk; do python3 .device/unpack.py "$f" ".device/matrices/$(basename "$f" .pk)" & done; wait
  cp .device/$MX/MANIFEST.tsv .device/matrices/; ls .device/matrices | wc -l
}
bench() { # build stem
  M=${MS:-$(( $(left ${TOTAL:-585}) - 25 ))}; [ $M -gt ${MAXCAP:-200} ] && M=${MAXCAP:-200}
  echo "MAXS $M $2" >> $W/maxs.txt
  timeout $(( M + 25 )) ./.device/$1/xtask bench spmm --suite real --value f32 --layout row-major \
    --n 16,32,64,128,256 --budget-real 0.5 ${ONLY:+--only $ONLY} --max-seconds $M --commit $(cat .device/$1/commit) \
    --stem $2 --out $W/spmm > $W/$2.log 2>&1
  el $? >> $W/$2.log; pack
  grep -E "speedup over|cases," $W/$2.log | cut -c1-260; tail -n 1 $W/$2.log
}
case $P in
  1) check; retune; unpack; bench b64 spmm-real-va-$G; san ;;
  3) check; retune; unpack; MS=$(( ($(left ${TOTAL:-585}) - 60) / 2 )); bench b64 spmm-real-va-$G; bench b63 spmm-real-base-$G ;;
  2) [ -f .device/matrices/MANIFEST.tsv ] || unpack; bench b63 spmm-real-base-$G ;;
esac
