#!/usr/bin/env bash
# bench-kernels.sh [SHAPE ...] — the CPU GEMV of every format against the
# machine's read bandwidth, measured the same way (ninfer-bench(1)): the
# weights rotate through copies that together exceed 4x the last-level
# cache, and the peak is the best read-only pass over a buffer of that size
# on the same threads, taken around every case. Shapes default to
# 4096x14336 and 14336x4096 (a Llama-3-8B MLP, both ways); each runs on 1
# thread and on all threads, A16 for every format and A8 (--activation a8)
# for the quantized ones. GB/s counts encoded bytes; x_peak is that over the
# peak of the same run. The aims (issue 12): x_peak >= 0.80 on all threads
# (A16), >= 0.85 (A8). A busy machine lowers both the rate and the peak;
# compare ratios, and runs made at the same time.
#
# Environment: NF_BIN (default bin/), ITERS (default 20), THREADS (default
# all CPUs), NF_BENCH_LLC_BYTES (see ninfer-bench(1)).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${NF_BIN:-$here/bin}
ITERS=${ITERS:-20}
ALL=${THREADS:-$(nproc)}
shapes=${*:-4096x14336 14336x4096}
quant="q2_g64_fp16 q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 q8_g32_fp16 t2_g128_fp16 nvfp4"
[ -x "$BIN/ninfer-bench" ] || { echo "bench-kernels: $BIN/ninfer-bench missing: run make" >&2; exit 3; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '# bench-kernels: %s CPUs, %s timed runs a case, %s\n' "$(nproc)" "$ITERS" \
    "$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
threads=1
[ "$ALL" = 1 ] || threads="1 $ALL"
for s in $shapes; do
    for th in $threads; do
        for act in a16 a8; do
            # one process per shape/threads/path: the formats share its buffer and peak
            "$BIN/ninfer-bench" --format all --shape "$s" --threads "$th" --activation "$act" \
                --iters "$ITERS" --warmup 3 --csv 2> /dev/null | tail -n +2 >> "$out" || true
        done
    done
done
printf '%-22s %-11s %3s %4s %9s %8s %7s  %s\n' format shape thr act GB/s peak x_peak aim
# case,op,device,format,layout,activation,threads,n,k,encoded_bytes,median_s,p10_s,p90_s,gbps,peak_gbps,pct_of_peak
awk -F, -v all="$ALL" -v quant=" $quant " '
    $6 == "a8" && index(quant, " " $4 " ") == 0 { next }   # A8 rows: the quantized formats
    { aim = ""
      if ($7 == all) {
          want = $6 == "a8" ? 0.85 : 0.80
          aim = ($16 / 100 >= want) ? "meets " want : "below " want
      }
      printf "%-22s %-11s %3s %4s %9.2f %8.2f %7.3f  %s\n", $4, $8 "x" $9, $7, $6, $14, $15, $16 / 100, aim }
' "$out"
