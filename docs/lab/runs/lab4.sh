#!/bin/bash
X=./target/release/xtask
C=""
for c in b256=diagonal.b256.u1.ldg.m2 b128cs=diagonal.b128.u1.ldg.cs.m1 b256p=diagonal.b256.u1 b256u4=diagonal.b256.u4.ldg \
  r2b256=diagonal.b256.u1.ldg.m2:SPARSERL_DIA_ROWS=2 r4b256=diagonal.b256.u1.ldg.m2:SPARSERL_DIA_ROWS=4 r8b256=diagonal.b256.u1.ldg.m2:SPARSERL_DIA_ROWS=8 \
  r2b128cs=diagonal.b128.u1.ldg.cs.m1:SPARSERL_DIA_ROWS=2 r4b128cs=diagonal.b128.u1.ldg.cs.m1:SPARSERL_DIA_ROWS=4 \
  r4b256p=diagonal.b256.u1:SPARSERL_DIA_ROWS=4 r4b512=diagonal.b512.u1.ldg:SPARSERL_DIA_ROWS=4 r2b512=diagonal.b512.u1.ldg:SPARSERL_DIA_ROWS=2; do
  C="$C --candidate $c"
done
timeout 200 $X kernel-lab --matrices stencil-2d-5pt,stencil-3d-27pt --orders none $C --reps 30 > $OUT/lab4.txt 2>&1
cat $OUT/lab4.txt
