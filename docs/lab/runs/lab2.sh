#!/bin/bash
X=./target/release/xtask
C=""
for c in base=tiled.b256.u1.cs base128=tiled.b128.u1.cs baseldg=tiled.b256.u1.ldg base1024=tiled.b1024.u1.cs base512=tiled.b512.u1.cs \
  diag-noreduce=tiled.b256.u1.cs:SPARSERL_LAB_SKIP_REDUCE=1 diag-nopieces=tiled.b256.u1.cs:SPARSERL_LAB_SKIP_PIECES=1 nnz8=nnz-split.b512.i8; do
  C="$C --candidate $c"
done
for P in 1024 4096 16384; do
  echo "=== piece $P" >> $OUT/lab2.txt
  SPARSERL_LAB_PIECE=$P timeout 150 $X kernel-lab --matrices rmat-s20,power-law-1M,power-law-sym-2.2 --orders degree $C --reps 20 >> $OUT/lab2.txt 2>&1
done
for P in 1024 4096; do
  echo "=== piece $P given order" >> $OUT/lab2.txt
  SPARSERL_LAB_PIECE=$P timeout 150 $X kernel-lab --matrices power-law-1M,power-law-sym-2.2,rmat-s20 --orders none $C --reps 20 >> $OUT/lab2.txt 2>&1
done
timeout 60 $X kernel-lab --matrices "" --perm-n 1960000 >> $OUT/lab2.txt 2>&1
