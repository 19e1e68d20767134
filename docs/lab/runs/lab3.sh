#!/bin/bash
X=./target/release/xtask
C=""
for c in b256=tiled.b256.u1.cs b128=tiled.b128.u1.cs b512=tiled.b512.u1.cs b256ldg=tiled.b256.u1.ldg \
  mlp256=tiled.b256.u1.cs:SPARSERL_TILED_MLP=1 mlp128=tiled.b128.u1.cs:SPARSERL_TILED_MLP=1 mlp512=tiled.b512.u1.cs:SPARSERL_TILED_MLP=1 \
  mlp256ldg=tiled.b256.u1.ldg:SPARSERL_TILED_MLP=1 mlp1024=tiled.b1024.u1:SPARSERL_TILED_MLP=1 mlp256p=tiled.b256.u1:SPARSERL_TILED_MLP=1 \
  'diag-nopieces=tiled.b256.u1.cs:SPARSERL_LAB_SKIP_PIECES=1;SPARSERL_TILED_MLP=1'; do
  C="$C --candidate $c"
done
for P in 4096 16384; do
  echo "=== piece $P" >> $OUT/lab3.txt
  SPARSERL_LAB_PIECE=$P timeout 200 $X kernel-lab --matrices rmat-s20,power-law-1M,power-law-sym-2.2 --orders degree,none $C --reps 20 >> $OUT/lab3.txt 2>&1
done
echo "=== piece 16384 large" >> $OUT/lab3.txt
SPARSERL_LAB_PIECE=16384 timeout 200 $X kernel-lab --matrices power-law,skewed-huge-rows,uniform-random,circuit,short-rows --orders none $C --reps 20 >> $OUT/lab3.txt 2>&1
