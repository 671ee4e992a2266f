#!/usr/bin/env bash
# bench-codecs.sh [NxK] — decode and encode throughput of every format on
# one shape (default 14336x5120, the issue's), next to the CPU read-only
# bandwidth measured in the same run, as ratios. Decode writes into a small
# reused buffer (cache-resident) and counts encoded bytes read; encode counts
# encoded bytes written. Uses both cores (ninfer-bench's default).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${NF_BIN:-$here/bin}
shape=${1:-14336x5120}
iters=${NF_BENCH_ITERS:-10}
formats="bf16 fp32 q2_g64_fp16 q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 q8_g32_fp16 t2_g128_fp16 nvfp4 fp8_e4m3fn_row_bf16"
printf '# bench-codecs: shape %s, %s CPUs, median of %s runs\n' "$shape" "$(nproc)" "$iters"
printf '%-22s %12s %10s %8s %10s %8s\n' format encoded_B decode_GB/s x_peak encode_GB/s x_peak
for f in $formats; do
    d=$("$BIN/ninfer-bench" --csv --op decode --iters "$iters" --format "$f" --shape "$shape" | tail -1)
    e=$("$BIN/ninfer-bench" --csv --op encode --iters 2 --warmup 0 --format "$f" --shape "$shape" | tail -1)
    IFS=, read -r _ _ _ _ _ _ _ _ _ bytes _ _ _ dg _ dp <<<"$d"
    IFS=, read -r _ _ _ _ _ _ _ _ _ _ _ _ _ eg _ ep <<<"$e"
    printf '%-22s %12s %10s %8s %10s %8s\n' "$f" "$bytes" "$dg" \
        "$(echo "scale=2; $dp / 100" | bc)" "$eg" "$(echo "scale=3; $ep / 100" | bc)"
done
"$BIN/ninfer-bench" --op decode --iters 1 --warmup 0 --format bf16 --shape 128x128 | head -1
