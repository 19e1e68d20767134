#!/usr/bin/env bash
# GPU call B at eef4275: lab A/B of the tiled build before it (old binary) and at it, bench-app, real matrices.
set -u
COMMIT=eef4275
W=<out>; mkdir -p $W
pack() { tar czf "$OUT/run39.tar.gz" -C $W . ; }
C="--candidate cs=tiled.b256.u1.cs --candidate ldg.cs=tiled.b256.u1.ldg.cs"
M=circuit,skewed-huge-rows,power-law-1M,power-law
i=0
for X in ./old/xtask ./target/release/xtask ./old/xtask ./target/release/xtask; do
  i=$((i+1))
  { echo "== $X"; time timeout 60 $X kernel-lab --matrices $M --orders none $C --reps 30; echo "exit $?"; } > $W/lab14-$i.txt 2>&1
done
for i in 1 2 3 4; do grep -E "^== |order none|^  (ldg.cs|cs) " $W/lab14-$i.txt; done; pack
X=./target/release/xtask
{ time timeout 150 $X bench-app --out "$W/app" --commit "$COMMIT" --budget 10 --no-check; echo "exit $?"; } > "$W/app.log" 2>&1
grep -E "exit|speedup" "$W/app.log" | tail -4; pack
{ time timeout 150 $X bench --suite real --matrices matrices --out "$W/real" --stem spmv-real-h200 \
    --max-seconds 130 --budget-real 1.5 --reps 30 --no-oracle --commit "$COMMIT"; echo "exit $?"; } > "$W/real.log" 2>&1
grep -E "exit|real \*\*|latency" "$W/real.log" | tail -3; pack
