#!/usr/bin/env bash
# Run 62's second call (the device time left after run62.sh): racecheck alone over the split-2
# and split-8 slices at the sanitizer width, 16 processes at a time, until the call's limit.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH PATH=/usr/local/cuda/bin:$PATH
xz -dkf .device/b62/xtask.xz; chmod +x .device/b62/xtask; mkdir -p out62s/san .device/none
nvidia-smi --query-gpu=name,driver_version --format=csv > out62s/gpu.txt
timeout 280 ./.device/b62/xtask gpu-check --spmm-only --spmm-variants 'row-warp,!.s4.,.s' --spmm-widths 1 \
  --sanitizer-tools racecheck --sanitizer-jobs 16 --sanitizer-timeout 265 --matrices .device/none \
  --out out62s/san > out62s/san.log 2>&1
echo "exit $?" >> out62s/san.log; tar -C out62s -czf $OUT/run62s.tar.gz .
