#!/usr/bin/env bash
# Device run 48 (on the machine run 47 left warm, its matrices already unpacked): the two
# benchmarks of run 47 again, snapped edges first this time, every output packed into one
# file under $OUT (run 47 wrote more files under $OUT than a call returns, and its reports
# did not come back). Ran as one command line; written out here.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=/tmp/o48; mkdir -p $W/spmm
for b in xtask xtask-old; do
  [ -x .device/bin/$b ] || { xz -dk .device/bin/$b.xz; chmod +x .device/bin/$b; }
done
ls .device/matrices | wc -l
b() { # binary commit stem
  timeout 68 ./.device/bin/$1 bench spmm --suite real --value f32 --layout row-major --n 32,64 \
    --budget-real 0.5 --max-seconds 60 --commit $2 --stem $3 --out $W/spmm > $W/$3.log 2>&1
  echo "exit $?" >> $W/$3.log
  tar -C $W -czf $OUT/run48.tar.gz .
}
b xtask $(cat .device/commit) spmm-real-rm-snapped-h100
b xtask-old de2380e spmm-real-rm-fixed-h100
grep -h "all cases" $W/*.log | cut -c1-200
