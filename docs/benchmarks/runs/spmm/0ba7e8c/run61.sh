#!/usr/bin/env bash
# Device run 61, up to three calls (PART=1, 2, 3 on one warm machine), everything under $OUT/run61-PART.tar.gz, with the
# stripped release xtask of .device/b60 (0ba7e8c, the row split in the space) and of
# .device/b54 (5f250d7, the space before it).
# .device/b56 (c3f51b7: splits 2, 4 and 8 with unroll 4 and 8). Each call carries what the
# working tree's limit allows; later calls use the matrices the first unpacked.
# PART=1: (1) racecheck over the split slice that run 60's time limit cut
# (row-warp.b256.g8.v1 with split 4), as three processes (coarsen 1, 2, 4), after float64 on
# the same points; (2) on an H200: the families corpus with seed 2 and the dense-rows family
# (seed 6) for the SpMV records (every applicable variant of the full space); on an H100: the
# real set with b60 as in (3). PART=2: (3) the product's SpMM search on the 44 real matrices,
# f32 row-major, N = 16-256, cuSPARSE's best algorithm in the same process, with build B
# (default b54), back to back on one machine with the other build; then (4) if time is left. PART=3:
# (4) every variant of b56's space swept on the 20 matrices with a row-major loss, f32, N = 32
# and 64, cuSPARSE in the same run: do splits 2 and 8 join the space?
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
P=${PART:-1}
W=out61-$P; rm -rf $W; mkdir -p $W/spmm $W/san .device/none .device/matrices
for b in b54 b56 b60; do [ -f .device/$b/xtask.xz ] && { xz -dkf .device/$b/xtask.xz; chmod +x .device/$b/xtask; }; done
X=./.device/b60/xtask
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
left() { echo $(( $1 - ($(date +%s) - T0) )); }
pack() { tar -C $W -czf $OUT/run61-$P.tar.gz .; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
echo "gpu $G part $P"
race() {
  for c in c1 c2 c4; do
    timeout 250 $X gpu-check --spmm-only --spmm-variants "row-warp,.g8.v1.$c.,.s4" --spmm-widths 1 \
      --sanitizer-tools racecheck --sanitizer-jobs 2 --sanitizer-timeout 235 \
      --matrices .device/none --out $W/san/$c > $W/san-$c.log 2>&1 &
  done
  wait; el 0 >> $W/san-c1.log
  pack; grep -h -E "SpMM racecheck|passed in" $W/san-c*.log
}
unpack() {
  for f in .device/mtxall/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done
  for f in .device/mtxall/*.pk; do python3 .device/unpack.py "$f" ".device/matrices/$(basename "$f" .pk)" & done; wait
  cp .device/mtxall/MANIFEST.tsv .device/matrices/; ls .device/matrices | wc -l
}
sweep() { # every variant of b56's space (splits 2, 4, 8 with unroll 4 and 8) on the 20 loss matrices
  [ -f .device/matrices/MANIFEST.tsv ] || { echo "no matrices (a fresh machine?)"; return; }
  local L=1138_bus,EX5,Groebner_id2003_aug,MIT8,Maragal_6,ani4,astro-ph,bayer10,bcspwr10,bcsstk13,bcsstk16,bcsstk18,cnr-2000,email-Enron,facebook_combined,hangGlider_2,raefsky1,reorientation_1,s3rmt3m3,wiki-Vote
  timeout $(left 585) ./.device/b56/xtask bench spmm --suite real --value f32 --layout row-major --n 32,64 \
    --budget-real 0.5 --sweep real --only $L --max-seconds $(( $(left 585) - 20 )) --no-floor \
    --commit $(cat .device/b56/commit) --stem spmm-sweep-s248-$G --out $W/spmm > $W/sweep.log 2>&1
  el $? >> $W/sweep.log; pack; grep -E "speedup over" $W/sweep.log | cut -c1-250 | tail -n 1; tail -n 1 $W/sweep.log
}
bench() { # build: the real set with that build's xtask, cut at MAXS s
  [ -f .device/matrices/MANIFEST.tsv ] || { echo "no matrices (a fresh machine?)"; return; }
  M=$(( $(left 585) - 25 )); [ $M -gt ${MAXCAP:-200} ] && M=${MAXCAP:-200}
  local stem=spmm-real-$([ $1 = b54 ] && echo base || echo split)-$G
  echo "MAXS $M" >> $W/maxs.txt
  timeout $(( M + 25 )) ./.device/$1/xtask bench spmm --suite real --value f32 --layout row-major \
    --n 16,32,64,128,256 --budget-real 0.5 --max-seconds $M --commit $(cat .device/$1/commit) \
    --stem $stem --out $W/spmm > $W/$stem.log 2>&1
  el $? >> $W/$stem.log; pack
  grep -E "speedup over|cases," $W/$stem.log | cut -c1-260; tail -n 1 $W/$stem.log
}
coll() { # stem max-seconds args...
  local stem=$1 m=$2; shift 2
  [ $m -gt $(( $(left 570) - 30 )) ] && m=$(( $(left 570) - 30 ))
  timeout $(left 570) $X collect --corpus families "$@" --space full --max-seconds $m \
    --out $W/$stem.json.gz > $W/$stem.log 2>&1; el $? >> $W/$stem.log
  pack; tail -n 2 $W/$stem.log
}
if [ $P = 1 ]; then
  unpack
  race
  if [ $G = h200 ]; then
    coll h200-families-s2 150 --seed 2
    [ $(left 570) -gt 60 ] && coll h200-dense-rows6 400 --seed 6 --family dense-rows
  else
    bench b60
  fi
elif [ $P = 2 ]; then
  bench ${B:-b54}
  [ -x .device/b56/xtask ] && [ ${SWEEP:-1} = 1 ] && [ $(left 585) -gt 100 ] && sweep
else
  sweep
fi
