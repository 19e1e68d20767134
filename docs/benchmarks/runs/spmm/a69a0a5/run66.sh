#!/usr/bin/env bash
# Device run 66, one call per PART on one warm machine, everything under $OUT/run66-PART.tar.gz.
# .device/b65: stripped release xtask of c7fbef1 (main's SpMM space: nnz-split vector atomics).
# .device/b66: the same plus the warp combine of 9cd3508 (the streams of a warp sum their final
# partials of a shared cut row before the atomic, when a range is one work item).
# .device/b67: b66 plus the combine across the warps of a block (e1065e8 on wip/nnz-block-combine).
# PART=1: (1) float64 check of every nnz-split point with b66 and b67 at N = 5 and 64 (twelve
# processes); (2) the product's SpMM search on the 15 real matrices whose run-61 pick was
# nnz-split (run 64's A/B set), f32 row-major, N = 16-256, b67, b66 then b65 back to back with
# equal time limits, cuSPARSE's best algorithm in the same process; (3) decide.py picks a winner
# (float64 all passed, geomean >= 1.02x the base's over the common cases) and, if one, example-app's
# `gcn` kernel is retuned alone with it, with the lock's freshness check.
# PART=7: as PART=1 with b69 (b67 plus programmatic dependent launch of main/post, wip/nnz-block-pdl) and b67 against b65.
# PART=8: float64 of b68 (programmatic dependent launch alone, wip/nnz-pdl), its bench on the 15 matrices
# (compared with run 7's b65 / b69 of the same GPU model), then the gcn retune with it.
# PART=6 (a short call): float64 of b66 at N = 5, then b66 against b65 on four of the matrices.
# PART=5: example-app's `gcn` kernel retuned alone with build $B and the lock's freshness check,
# then memcheck + initcheck over the nnz-split slices with $B.
# PART=2: memcheck + initcheck over the nnz-split slices with build $B (--sanitizers-only: float64 ran in (1)).
# PART=4: the real set with build $B (default b65) with the current space, f64 row-major, f32 row-major,
# f32 col-major, up to CAP (190) s each, as the call's time allows (carry mtxall).
# PART=3: memcheck + initcheck over the row-warp split-2 / split-8 slices (b65; unchanged by the combine).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
P=${PART:-1}
W=out66-$P; rm -rf $W; mkdir -p $W/san $W/spmm $W/retune .device/none .device/matrices
for b in b65 b66 b67 b68 b69; do [ -f .device/$b/xtask.xz ] && { xz -dkf .device/$b/xtask.xz; chmod +x .device/$b/xtask; }; done
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
left() { echo $(( $1 - ($(date +%s) - T0) )); }
pack() { tar -C $W -czf $OUT/run66-$P.tar.gz .; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
echo "gpu $G part $P"
check() { # builds
  local i b
  for b in "$@"; do
    i=0
    for f in 'nnz-split,!.t,.v1.' 'nnz-split,!.t,!.v1.' 'nnz-split,.t'; do
      i=$((i+1))
      for n in ${CN:-5 64}; do
        timeout ${CHK:-180} ./.device/$b/xtask gpu-check --spmm-only --spmm-variants "$f" --spmm-widths $n --no-sanitizer \
          --matrices .device/none --out $W/$b-check$i-$n > $W/$b-check$i-$n.log 2>&1 &
      done
    done
  done
  wait; el 0 >> $W/check-done.log
  pack; for f in $W/b6*-check*.log; do echo "$f: $(grep -h 'passed in\|FAIL\|failed' $f | tail -n 1)"; done
}
retune() { # build
  cp example-app/SparseRL.lock $W/retune/SparseRL.lock.before
  timeout $(( $(left ${TOTAL:-585}) - 25 )) ./.device/$1/xtask retune --manifest-dir example-app --kernel gcn --budget 60 --no-exhaustive --out $W/retune > $W/retune.log 2>&1
  el $? >> $W/retune.log
  cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
  timeout 30 ./.device/$1/xtask retune --manifest-dir example-app --check > $W/retune-check.log 2>&1; el $? >> $W/retune-check.log
  pack; tail -n 4 $W/retune.log; tail -n 2 $W/retune-check.log
}
san() { # build variants tools
  local LIM=$(left ${TOTAL:-585})
  timeout $LIM ./.device/$1/xtask gpu-check --spmm-only --sanitizers-only --spmm-variants "$2" --spmm-widths 1 \
    --sanitizer-tools $3 --sanitizer-jobs 16 --sanitizer-timeout $(( LIM - 15 )) \
    --matrices .device/none --out $W/san > $W/san.log 2>&1
  el $? >> $W/san.log; pack; grep -h -E "SpMM (memcheck|racecheck|initcheck):" $W/san.log; tail -n 1 $W/san.log
}
unpack() {
  local D=${MX:-mtx15}
  for f in .device/$D/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done
  for f in .device/$D/*.pk; do python3 .device/unpack.py "$f" ".device/matrices/$(basename "$f" .pk)" & done; wait
  cp .device/$D/MANIFEST.tsv .device/matrices/; ls .device/matrices | wc -l
}
bench() { # build stem seconds
  echo "MAXS $3 $2" >> $W/maxs.txt
  timeout $(( $3 + 25 )) ./.device/$1/xtask bench spmm --suite real --value f32 --layout row-major \
    --n 16,32,64,128,256 --budget-real 0.5 --only $ONLY --max-seconds $3 --commit $(cat .device/$1/commit) \
    --stem $2 --out $W/spmm > $W/$2.log 2>&1
  el $? >> $W/$2.log; pack; grep -E "speedup over|cases," $W/$2.log | cut -c1-260; tail -n 1 $W/$2.log
}
ONLY=Groebner_id2003_aug,Maragal_6,PGPgiantcompo,adder_dcop_05,cnr-2000,email-Enron,facebook_combined,hangGlider_2,mbeacxc,polblogs,rajat01,rajat19,reorientation_1,wiki-Vote,road_NY
case $P in
  1) check b66 b67; unpack
     M=$(( ($(left ${TOTAL:-585}) - ${RT:-100} - 80) / 3 )); [ $M -gt 150 ] && M=150
     bench b67 spmm-real-block-$G $M; bench b66 spmm-real-warp-$G $M; bench b65 spmm-real-base-$G $M
     python3 .device/run66/decide.py $W b65 b66 b67 > $W/winner.txt 2> $W/decide.log; cat $W/decide.log $W/winner.txt
     WIN=$(cat $W/winner.txt); [ "$WIN" != b65 ] && [ $(left ${TOTAL:-585}) -gt ${RTMIN:-60} ] && retune $WIN; pack ;;
  7) check b69 b67; unpack
     M=$(( ($(left ${TOTAL:-585}) - ${RT:-100} - 80) / 3 )); [ $M -gt 150 ] && M=150
     bench b69 spmm-real-blockpdl-$G $M; bench b67 spmm-real-block-$G $M; bench b65 spmm-real-base-$G $M
     python3 .device/run66/decide.py $W b65 b67 b69 > $W/winner.txt 2> $W/decide.log; cat $W/decide.log $W/winner.txt
     WIN=$(cat $W/winner.txt); [ "$WIN" != b65 ] && [ $(left ${TOTAL:-585}) -gt ${RTMIN:-60} ] && retune $WIN; pack ;;
  8) check b68; unpack
     M=$(( $(left ${TOTAL:-585}) - ${RT:-100} - 40 )); [ $M -gt 150 ] && M=150
     bench b68 spmm-real-pdl-$G $M
     python3 .device/run66/decide.py $W b68 > $W/winner.txt 2> $W/decide.log; cat $W/decide.log
     [ $(left ${TOTAL:-585}) -gt ${RTMIN:-60} ] && retune b68; pack ;;
  6) CN=5 check b66; ONLY=${ONLY6:-Maragal_6,cnr-2000,Groebner_id2003_aug,adder_dcop_05}; unpack
     M=$(( ($(left ${TOTAL:-585}) - 60) / 2 )); [ $M -gt 150 ] && M=150
     bench b66 spmm-real-warp-$G $M; bench b65 spmm-real-base-$G $M ;;
  5) retune ${B:-b66}; san ${B:-b66} nnz-split memcheck,initcheck ;;
  2) san ${B:-b66} nnz-split memcheck,initcheck ;;
  3) san b65 'row-warp,!.s4.,.s' memcheck,initcheck ;;
  4) [ -f .device/matrices/MANIFEST.tsv ] || MX=mtxall unpack
     for s in "f64 row-major spmm-real-f64" "f32 row-major spmm-real" "f32 col-major spmm-real-colmajor"; do
       set -- $s; M=$(( $(left ${TOTAL:-585}) - 30 )); [ $M -gt ${CAP:-190} ] && M=${CAP:-190}
       [ $M -gt 60 ] || break
       timeout $(( M + 25 )) ./.device/${B:-b65}/xtask bench spmm --suite real --value $1 --layout $2 \
         --n 16,32,64,128,256 --budget-real 0.5 --max-seconds $M --commit $(cat .device/${B:-b65}/commit) \
         --stem $3-$G --out $W/spmm > $W/$3-$G.log 2>&1
       el $? >> $W/$3-$G.log; pack; grep -E "speedup over|cases," $W/$3-$G.log | cut -c1-260
     done ;;
esac
