#!/usr/bin/env bash
# Run 5: the device permutations of a transparent launch with 1, 4 and 8 gathers in flight per thread.
X=./target/release/xtask
timeout 60 $X kernel-lab --matrices "" --perm-n 1960000 --reps 30 --out $OUT/lab-perm.txt
