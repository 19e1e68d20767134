#!/usr/bin/env bash
# Device run 49, in two calls (PART=1, PART=2), everything under $OUT/run49-PART.tar.gz.
# PART=1 on an H100 (the first call that got a machine): compute-sanitizer (memcheck,
# racecheck, initcheck) over nnz-split's ranges of 16 and 8 outside the transposed path, the
# points no sanitizer run had covered, after float64 on the same points. PART=3 on an H200:
# the families corpus's dense-rows family (seeds 6 and 7, eight instances each, every
# applicable variant of the full space) for the SpMV records and forest, then the real set
# column-major f32 against cuSPARSE with the settled re-timing (the front page's
# column-major figures predate it) when BENCH=1; on an H100 nothing (its timings are not merged with the
# H200 data). PART=2 (not run): the same benchmark in f64.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
P=${PART:-1}
W=out49-$P; rm -rf $W; mkdir -p $W/spmm
[ -x .device/bin/xtask ] || { xz -dk .device/bin/xtask.xz; chmod +x .device/bin/xtask; }
X=./.device/bin/xtask
C=$(cat .device/commit)
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
pack() { tar -C $W -czf $OUT/run49-$P.tar.gz .; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
mkdir -p .device/none .device/matrices
unpack() {
  for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done
  for f in .device/mtx/*.pk; do python3 .device/unpack.py "$f" ".device/matrices/$(basename "$f" .pk)" & done; wait
  cp .device/mtx/MANIFEST.tsv .device/matrices/
}
B="$X bench spmm --suite real --layout col-major --n 16,32,64,128,256 --budget-real 0.5 --commit $C --out $W/spmm"
san() {
  mkdir -p $W/san-r
  timeout $(( 590 - ($(date +%s) - T0) )) $X gpu-check --spmm-only --spmm-variants 'nnz-split,.r,!.t' --spmm-widths 1 \
    --matrices .device/none --sanitizer-jobs 8 --sanitizer-timeout 320 --out $W/san-r > $W/san-r.log 2>&1; el $? >> $W/san-r.log
  pack
  grep -h -E "SpMM (memcheck|racecheck|initcheck)" $W/san-r.log | awk '{print $4}' | sort | uniq -c
  tail -n 6 $W/san-r.log
}
dense() {
  for s in 6 7; do
    timeout 130 $X collect --corpus families --seed $s --family dense-rows --space full --max-seconds 100 \
      --out $W/h200-dense-rows$s.json.gz > $W/h200-dense-rows$s.log 2>&1; el $? >> $W/h200-dense-rows$s.log
    pack; tail -n 2 $W/h200-dense-rows$s.log
  done
}
if [ $G = h100 ]; then [ $P = 1 ] && san; exit 0; fi
if [ $P = 1 ]; then
  dense
  san
elif [ $P = 3 ]; then
  dense
  if [ "${BENCH:-0}" = 1 ]; then
    unpack
    timeout $(( 590 - ($(date +%s) - T0) )) $B --value f32 --max-seconds 175 --stem spmm-real-colmajor-$G \
      > $W/bench-real-cm.log 2>&1; el $? >> $W/bench-real-cm.log
    pack; grep -E "geomean|below" $W/bench-real-cm.log | cut -c1-300 | tail -n 6; tail -n 1 $W/bench-real-cm.log
  fi
else
  unpack
  timeout 200 $B --value f32 --max-seconds 175 --stem spmm-real-colmajor-$G > $W/bench-real-cm.log 2>&1
  el $? >> $W/bench-real-cm.log
  pack; grep -E "geomean|below" $W/bench-real-cm.log | cut -c1-300 | tail -n 6; tail -n 1 $W/bench-real-cm.log
  timeout 195 $B --value f64 --max-seconds 167 --stem spmm-real-f64-colmajor-$G > $W/bench-real-f64-cm.log 2>&1
  el $? >> $W/bench-real-f64-cm.log
  pack; grep -E "geomean|below" $W/bench-real-f64-cm.log | cut -c1-300 | tail -n 6; tail -n 1 $W/bench-real-f64-cm.log
fi
