#!/usr/bin/env bash
# Device run 47: nnz-split with range edges snapped back to row starts (bbd6c86) against the
# same benchmark at de2380e (fixed edges), side by side on one machine: the real set,
# row-major f32, N = 32 and 64. Then float64 over every nnz-split variant of bbd6c86 at every
# width of the check (one gpu-check process per width) and on the real matrices, beside
# compute-sanitizer over the nnz-split points of ranges of 16 and 8 outside the transposed path.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
# Everything is written under $OUT as it goes (a cut-short call still returns it); LIMIT
# (seconds, default 585) is the time the whole script may take.
LIMIT=${LIMIT:-585}
W=$OUT/out47; mkdir -p $W/spmm
for b in xtask xtask-old; do
  [ -x .device/bin/$b ] || { xz -dk .device/bin/$b.xz; chmod +x .device/bin/$b; }
done
C=$(cat .device/commit); CO=$(cat .device/commit-old)
T0=$(date +%s)
G=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100 && echo h100 || echo h200)
mkdir -p .device/matrices .device/none
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done
for f in .device/mtx/*.pk; do python3 .device/unpack.py "$f" ".device/matrices/$(basename "$f" .pk)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
el() { echo "exit $1 after $(( $(date +%s) - T0 )) s"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $W/gpu.txt 2>&1
bench() { # binary commit stem
  timeout 120 ./.device/bin/$1 bench spmm --suite real --value f32 --layout row-major --n 32,64 \
    --budget-real 0.5 --max-seconds 100 --commit $2 --stem $3 --out $W/spmm > $W/$3.log 2>&1
  el $? >> $W/$3.log
}
bench xtask-old $CO spmm-real-rm-fixed-$G
bench xtask $C spmm-real-rm-snapped-$G
chk() { # name widths matrices
  mkdir -p $W/check-$1
  timeout $(( LIMIT - ($(date +%s) - T0) )) ./.device/bin/xtask gpu-check --spmm-only --spmm-variants nnz-split \
    --spmm-widths $2 --matrices $3 --no-sanitizer --out $W/check-$1 > $W/check-$1.log 2>&1
  el $? >> $W/check-$1.log
}
for n in 1 5 16 64 128 256; do chk n$n $n .device/none & done
chk real32 32 .device/matrices &
mkdir -p $W/san-r
timeout $(( LIMIT - ($(date +%s) - T0) )) ./.device/bin/xtask gpu-check --spmm-only --spmm-variants 'nnz-split,.r,!.t' \
  --spmm-widths 1 --matrices .device/none --sanitizer-jobs 8 --sanitizer-timeout 320 --out $W/san-r > $W/san-r.log 2>&1 &
wait
for l in spmm-real-rm-fixed-$G spmm-real-rm-snapped-$G; do grep -E "geomean|below" $W/$l.log | cut -c1-300 | tail -n 3; tail -n 1 $W/$l.log; done
grep -h -E "SpMM (memcheck|racecheck|initcheck)" $W/san-r.log | awk '{print $4}' | sort | uniq -c
for f in $W/check-*.log; do echo "$f: $(grep -E 'passed in|FAIL|fail' $f | head -3 | cut -c1-200) $(tail -n 1 $f)"; done
