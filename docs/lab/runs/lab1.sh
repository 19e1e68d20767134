#!/bin/bash
set -x
X=./target/release/xtask
C=""
for c in base=tiled.b256.u1.cs base128=tiled.b128.u1.cs base512=tiled.b512.u1 \
  smem=tiled.b256.u1.cs:SPARSERL_TILED_PTR_SMEM=1 smem128=tiled.b128.u1.cs:SPARSERL_TILED_PTR_SMEM=1 smem512=tiled.b512.u1:SPARSERL_TILED_PTR_SMEM=1 \
  diag-noreduce=tiled.b256.u1.cs:SPARSERL_LAB_SKIP_REDUCE=1 diag-nopieces=tiled.b256.u1.cs:SPARSERL_LAB_SKIP_PIECES=1 \
  nnz8=nnz-split.b512.i8 nnz4=nnz-split.b256.i4 nnz16=nnz-split.b256.i16 binned8=binned.b256.l8.u1.ldg binned32=binned.b256.l32.u2.ldg \
  gpr4=group-per-row.b256.l4.u2.ldg gpr8=group-per-row.b256.l8.u2.ldg gpr32=group-per-row.b256.l32.u2.ldg sell=sell.b256.u1.ldg tpr=thread-per-row.b256.u1.ldg; do
  C="$C --candidate $c"
done
timeout 280 $X kernel-lab --matrices rmat-s20,power-law-1M,power-law-sym-2.2 --orders degree $C --reps 20 --perm-n 1960000 --out $OUT/lab1.txt 2>&1 | tee $OUT/lab1.log
timeout 200 $X kernel-lab --matrices power-law-1M,power-law-sym-2.2 --orders none $C --reps 20 --out $OUT/lab1b.txt 2>&1 | tee $OUT/lab1b.log
