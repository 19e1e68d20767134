#!/usr/bin/env bash
# sanitize.sh OUT LIMIT PARALLEL "tool slice tool slice ...": each (tool, slice) pair runs
# gpu-check's sanitizer pass over the SpMM variants whose id starts with the slice, under
# compute-sanitizer, PARALLEL at a time, each cut at LIMIT seconds; one summary line per slice.
set -u
W=$1; LIM=$2; P=$3; PAIRS=$4
mkdir -p $W
X=./.device/bin/xtask
T0=$(date +%s)
job() {
  local tool=$1 s=$2 t=$(date +%s)
  local log=$W/$tool-${s%.}.log
  timeout $LIM compute-sanitizer --tool $tool --error-exitcode 1 --print-limit 50 $X gpu-check --sanitizer-pass --spmm-only --spmm-variants $s --out <tmp>/san-$tool-$s > $log 2>&1
  echo "exit $? after $(( $(date +%s) - t )) s" >> $log
}
export -f job; export W X LIM
echo $PAIRS | tr ' ' '\n' | paste - - -d' ' | timeout $((LIM + 10)) xargs -P $P -n 2 bash -c 'job "$0" "$1"'
echo "limit $LIM s per slice, $P at a time; all after $(( $(date +%s) - T0 )) s"
for f in $W/*.log; do echo "$(basename $f): $(grep -h 'sanitizer pass: done\|ERROR SUMMARY' $f | tr '\n' ' ') $(tail -n1 $f)"; done
