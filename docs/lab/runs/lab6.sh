#!/usr/bin/env bash
# Run 6 (binary of 8989aad): the tiled kernel taking its tiles through a launch-order array
# (pieces of long rows first), against the same build with the array ignored (matrix order).
X=./target/release/xtask
C=""
for c in new=tiled.b256.u1.ldg.cs old=tiled.b256.u1.ldg.cs:SPARSERL_TILED_NATURAL_ORDER=1 \
  new-p=tiled.b256.u1.cs old-p=tiled.b256.u1.cs:SPARSERL_TILED_NATURAL_ORDER=1; do C="$C --candidate $c"; done
timeout 140 $X kernel-lab --matrices circuit,power-law,skewed-huge-rows,rmat-s20,power-law-sym-2.2 --orders none $C --reps 30
