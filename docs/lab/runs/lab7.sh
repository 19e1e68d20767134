#!/usr/bin/env bash
# Run 7: the build of 56d781c (tiles in matrix order), the build of 832dcdc (pieces listed
# first in the layout) and 56d781c again, each on the same matrices.
C="--candidate ldg.cs=tiled.b256.u1.ldg.cs --candidate cs=tiled.b256.u1.cs"
M=circuit,power-law,skewed-huge-rows,rmat-s20,power-law-sym-2.2,uniform-random
for X in ./old/xtask ./target/release/xtask ./old/xtask; do
  echo "== $X"; timeout 60 $X kernel-lab --matrices $M --orders none $C --reps 30
done
