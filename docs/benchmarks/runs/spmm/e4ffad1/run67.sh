#!/usr/bin/env bash
# Device run 67, one call per PART on one warm machine, everything under $OUT/run67-PART.tar.gz.
# .device/b70: stripped release xtask of main (programmatic dependent launch of nnz-split's passes).
# .device/b71: b70 plus the transposed path chained by programmatic dependent launch (wip/t-pdl).
# PART=1 (carry b70 b71 mtx15 unpack.py run67): float64 of b71's transposed slices (nnz-split .t,
# row-warp .t) at N = 5 and 64; f32 col-major bench on the 15 matrices, b71 then b70 with equal
# limits; decide.py (float64 all passed, >= 1.02x); the gcn retune with the winner (the fingerprint
# changes with b71 even though gcn is row-major).
# PART=4 (carry $B mtxall): the real set with build $B: f64 row-major, f32 row-major, f32 col-major,
# f64 col-major, CAP s each, then bench-app --gcn-only.
# PART=3: racecheck over the nnz-split slices (300 s per slice) and memcheck + initcheck over row-warp s2/s8.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
P=${PART:-1}
W=out67-$P; rm -rf $W; mkdir -p $W/san $W/spmm $W/retune $W/app .device/none .device/matrices
[ -f .device/bb/both.tar.xz ] && { tar -C .device -xJf .device/bb/both.tar.xz; chmod +x .device/b70/xtask .device/b71/xtask; }
for b in b70 b71; do [ -f .device/$b/xtask.xz ] && { xz -dkf .device/$b/xtask.xz; chmod +x .device/$b/xtask; }; done
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
left() { echo $(( $1 - ($(date +%s) - T0) )); }
pack() { tar -C $W -czf $OUT/run67-$P.tar.gz .; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
echo "gpu $G part $P"
check() { # build filters...
  local b=$1 i=0 f n; shift
  for f in "$@"; do
    i=$((i+1))
    for n in ${CN:-5 64}; do
      timeout ${CHK:-200} ./.device/$b/xtask gpu-check --spmm-only --spmm-variants "$f" --spmm-widths $n --no-sanitizer \
        --matrices .device/none --out $W/$b-check$i-$n > $W/$b-check$i-$n.log 2>&1 &
    done
  done
  wait; pack; for f in $W/$b-check*.log; do echo "$f: $(grep -h 'passed in\|FAIL\|failed' $f | tail -n 1)"; done
}
retune() { # build
  cp example-app/SparseRL.lock $W/retune/SparseRL.lock.before
  timeout ${RTCAP:-170} ./.device/$1/xtask retune --manifest-dir example-app --kernel gcn --budget 60 --no-exhaustive --out $W/retune > $W/retune.log 2>&1
  el $? >> $W/retune.log
  cp example-app/SparseRL.lock $W/retune/SparseRL.lock.after
  timeout 30 ./.device/$1/xtask retune --manifest-dir example-app --check > $W/retune-check.log 2>&1; el $? >> $W/retune-check.log
  pack; tail -n 4 $W/retune.log; tail -n 2 $W/retune-check.log
}
unpack() {
  local D=${MX:-mtx15}
  for f in .device/$D/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done
  for f in .device/$D/*.pk; do python3 .device/unpack.py "$f" ".device/matrices/$(basename "$f" .pk)" & done; wait
  cp .device/$D/MANIFEST.tsv .device/matrices/; ls .device/matrices | wc -l
}
bench() { # build stem seconds value layout [only]
  timeout $(( $3 + 25 )) ./.device/$1/xtask bench spmm --suite real --value $4 --layout $5 \
    --n 16,32,64,128,256 --budget-real 0.5 ${6:+--only $6} --max-seconds $3 --commit $(cat .device/$1/commit) \
    --stem $2 --out $W/spmm > $W/$2.log 2>&1
  el $? >> $W/$2.log; pack; grep -E "speedup over|cases," $W/$2.log | cut -c1-260; tail -n 1 $W/$2.log
}
ONLY=Groebner_id2003_aug,Maragal_6,PGPgiantcompo,adder_dcop_05,cnr-2000,email-Enron,facebook_combined,hangGlider_2,mbeacxc,polblogs,rajat01,rajat19,reorientation_1,wiki-Vote,road_NY
case $P in
  1) CHK=${CHK:-170} check b71 'nnz-split,.t' 'row-warp,.t'; MX=mtxall unpack
     M=$(( ($(left ${TOTAL:-585}) - 20) / 2 )); [ $M -gt 200 ] && M=200
     bench b71 spmm-real-colmajor-tpdl-$G $M f32 col-major; bench b70 spmm-real-colmajor-base-$G $M f32 col-major
     python3 .device/run67/decide.py $W b70 b71 > $W/winner.txt 2> $W/decide.log; cat $W/decide.log $W/winner.txt; pack ;;
  2) [ -f .device/matrices/MANIFEST.tsv ] || MX=mtxall unpack
     [ "${B:-b70}" = b71 ] && { RT=1; TOTAL=${TOTAL:-585}; retune b71; }
     for s in "f32 row-major spmm-real" "f64 row-major spmm-real-f64" "f64 col-major spmm-real-f64-colmajor"; do
       set -- $s; M=$(( $(left ${TOTAL:-585}) - 30 )); [ $M -gt ${CAP:-190} ] && M=${CAP:-190}
       [ $M -gt 60 ] || break
       bench ${B:-b70} $3-$G $M $1 $2
     done; pack ;;
  5) [ -f .device/matrices/MANIFEST.tsv ] || MX=mtxall unpack
     timeout $(( $(left ${TOTAL:-585}) - 10 )) ./.device/${B:-b70}/xtask bench-app --gcn-only \
       --commit $(cat .device/${B:-b70}/commit) --out $W/app > $W/app-gcn.log 2>&1; el $? >> $W/app-gcn.log; tail -n 4 $W/app-gcn.log
     M=$(( $(left ${TOTAL:-585}) - 30 )); [ $M -gt 190 ] && M=190
     [ $M -gt 60 ] && bench ${B:-b70} spmm-real-f64-colmajor-$G $M f64 col-major; pack ;;
  6) [ -f .device/matrices/MANIFEST.tsv ] || MX=mtxall unpack
     [ "${B:-b70}" = b71 ] && retune b71
     C=$(( $(left ${TOTAL:-585}) - ${BENCHS:-200} - 40 )); mkdir -p $W/collect
     timeout $(( C + 30 )) ./.device/${B:-b70}/xtask collect --corpus families --seed ${SEED:-2} --space full --max-seconds $C \
       --out $W/collect/h200-families-seed${SEED:-2}.json.gz > $W/collect/collect-seed${SEED:-2}.log 2>&1; el $? >> $W/collect/collect-seed${SEED:-2}.log
     pack; tail -n 3 $W/collect/collect-seed${SEED:-2}.log
     M=$(( $(left ${TOTAL:-585}) - 30 )); [ $M -gt 190 ] && M=190
     [ $M -gt 60 ] && bench ${B:-b70} spmm-real-$G $M f32 row-major; pack ;;
  3) LIM=$(left ${TOTAL:-585})
     timeout $LIM ./.device/${B:-b70}/xtask gpu-check --spmm-only --sanitizers-only --spmm-variants nnz-split --spmm-widths 1 \
       --sanitizer-tools racecheck --sanitizer-jobs 16 --sanitizer-timeout $(( LIM / 2 )) --matrices .device/none --out $W/san > $W/san-race.log 2>&1
     el $? >> $W/san-race.log; pack; grep -h -E "SpMM racecheck:" $W/san-race.log
     LIM=$(left ${TOTAL:-585}); timeout $LIM ./.device/${B:-b70}/xtask gpu-check --spmm-only --sanitizers-only --spmm-variants 'row-warp,!.s4.,.s' --spmm-widths 1 \
       --sanitizer-tools memcheck,initcheck --sanitizer-jobs 16 --sanitizer-timeout $(( LIM - 15 )) --matrices .device/none --out $W/san > $W/san-rw.log 2>&1
     el $? >> $W/san-rw.log; pack; grep -h -E "SpMM (memcheck|initcheck):" $W/san-rw.log ;;
esac
