#!/usr/bin/env bash
# Device run 1: check of every nnz-split SpMM variant (built-in edge cases at N = 33, eight real matrices with
# empty-row runs and long rows at N = 32), memcheck of the 4-lane nnz-split streams, then the large SpMM benchmark.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
W=<work dir>; rm -rf $W; mkdir -p $W/check $W/san
X=./.device/bin/xtask
C=$(cat .device/commit)
mkdir -p .device/matrices .device/check-matrices
for f in .device/mtx/*.xz; do xz -dc "$f" > ".device/matrices/$(basename "$f" .xz)" & done; wait
cp .device/mtx/MANIFEST.tsv .device/matrices/
for m in astro-ph lp_80bau3b mbeacxc polblogs wiki-Vote hangGlider_2 reorientation_1 Groebner_id2003_aug; do cp .device/matrices/$m.mtx .device/check-matrices/; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/gpu.txt
pack() { tar czf "$OUT/run1.tar.gz" -C $W .; }
T=$(date +%s)
timeout 170 $X gpu-check --spmm-only --no-sanitizer --spmm-variants nnz-split --spmm-widths 33 --matrices .device/check-matrices --out $W/check > $W/check.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/check.log
pack
T=$(date +%s)
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 --print-limit 50 $X gpu-check --sanitizer-pass --spmm-only --spmm-variants nnz-split.b256.g4. --out $W/san > $W/san/memcheck-nnz-split-g4.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/san/memcheck-nnz-split-g4.log
pack
T=$(date +%s)
timeout 265 $X bench spmm --suite large --n 16,32,64,128,256 --budget-large 3 --max-seconds 235 --commit $C --out $W/spmm > $W/bench-large.log 2>&1; echo "exit $? after $(( $(date +%s) - T )) s" >> $W/bench-large.log
pack
tail -4 $W/check.log; tail -3 $W/san/*.log; grep -E "^- speedup|^- per width" $W/bench-large.log | cut -c1-400; tail -2 $W/bench-large.log
