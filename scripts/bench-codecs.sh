#!/usr/bin/env bash
# bench-codecs.sh [NxK] — decode and encode throughput of every format on
# one shape (default 14336x5120), next to the CPU read peak measured just
# before and after each case (ninfer-bench(1)), as ratios. Decode writes
# into a small reused buffer (cache-resident) and counts encoded bytes read;
# encode counts MB/s of f32 input. Uses every CPU (ninfer-bench's default).
# The CSV columns are read by name.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${NF_BIN:-$here/bin}
shape=${1:-14336x5120}
iters=${NF_BENCH_ITERS:-30}
formats="bf16 fp32 q2_g64_fp16 q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 q8_g32_fp16 t2_g128_fp16 nvfp4 fp8_e4m3fn_row_bf16"
fl=$(echo $formats | tr ' ' ,)
printf '# bench-codecs: shape %s, %s CPUs, %s timed runs (encode 3)\n' "$shape" "$(nproc)" "$iters"
d=$("$BIN/ninfer-bench" --csv --op decode --iters "$iters" --format "$fl" --shape "$shape")
e=$("$BIN/ninfer-bench" --csv --op encode --iters 3 --warmup 0 --format "$fl" --shape "$shape")
awk -F, '
    FNR == 1 { file++; for (i = 1; i <= NF; i++) c[$i] = i; next }
    file == 1 { dg[$c["format"]] = $c["gbps"]; dr[$c["format"]] = $c["ratio"]; db[$c["format"]] = $c["bytes"]; o[++n] = $c["format"]; next }
    { em[$c["format"]] = $c["input_mbps"] }
    END {
        printf "%-22s %12s %10s %7s %12s\n", "format", "encoded_B", "dec_GB/s", "ratio", "enc_MB/s_in"
        for (i = 1; i <= n; i++) { f = o[i]; printf "%-22s %12s %10s %7s %12s\n", f, db[f], dg[f], dr[f], em[f] }
    }' <(printf '%s\n' "$d") <(printf '%s\n' "$e")
