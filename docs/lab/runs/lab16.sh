#!/usr/bin/env bash
# Lab: compact layouts on renumbered meshes; candidates on the circuit.
set -u
W=<out>; mkdir -p $W
X=./target/release/xtask
M="--candidate sell4=sell.b128.u4.ldg --candidate sell1=sell.b128.u1.ldg --candidate n128l4=narrow.b128.l4.u1.ldg --candidate n128l8=narrow.b128.l8.u1.ldg --candidate n256l4=narrow.b256.l4.u1.ldg --candidate n128l4u2=narrow.b128.l4.u2.ldg --candidate n256l8=narrow.b256.l8.u1.ldg --candidate tiled=tiled.b256.u1.cs --candidate g8=group-per-row.b256.l8.u1.ldg"
timeout 150 $X kernel-lab --matrices mesh-2d-random,mesh-3d-random,road-random --orders rcm $M --reps 30 > $W/lab16-mesh.txt 2>&1; echo "exit $?" >> $W/lab16-mesh.txt
C="--candidate t256cs=tiled.b256.u1.cs --candidate t512cs=tiled.b512.u1.cs --candidate t128cs=tiled.b128.u1.cs --candidate t1024cs=tiled.b1024.u1.cs --candidate t256ldg=tiled.b256.u1.ldg --candidate g8=group-per-row.b256.l8.u1.ldg --candidate g4=group-per-row.b256.l4.u2.ldg --candidate tpr=thread-per-row.b256.u1.ldg"
timeout 100 $X kernel-lab --matrices circuit --orders none,rcm,degree $C --reps 30 > $W/lab16-circuit.txt 2>&1; echo "exit $?" >> $W/lab16-circuit.txt
tar czf "$OUT/run42.tar.gz" -C $W .
cat $W/*.txt | grep -v "^\s*$" | head -150
