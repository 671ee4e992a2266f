#!/usr/bin/env bash
# bench-gguf.sh — CPU GEMV and decode of the gguf_* formats (DESIGN 7.5) as
# issue 10 asks for them: 14336x5120 and 4096x14336, measured by
# ninfer-bench (weights rotated through at least 256 MiB of copies; the
# peak measured just before and after every case), in ROUNDS rounds, so that a
# noisy machine shows as spread, not as a wrong figure. Prints, per format,
# shape and thread count, the median GB/s and the median ratio to the peak
# of the same row (ratio: GB/s at the p10 time over the larger of the peaks
# measured just before and after the case), with the aim (0.8) for
# gguf_q4_k, gguf_q6_k, gguf_q8_0 and gguf_q5_0. Reads the CSV by name.
#
#   scripts/bench-gguf.sh [ROUNDS]        (default 3; about a minute a round)
# Environment: NF_BIN (default bin/), THREADS (default: all CPUs, then 1),
# FORMATS, SHAPES, OPS (default "gemv decode").
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bench="${NF_BIN:-$here/bin}/ninfer-bench"
[ -x "$bench" ] || { echo "bench-gguf: $bench missing (run make)" >&2; exit 2; }
rounds=${1:-3}
formats=${FORMATS:-"gguf_q4_k gguf_q6_k gguf_q8_0 gguf_q5_0 gguf_q4_0 gguf_q4_1 gguf_q5_1 gguf_q2_k gguf_q3_k gguf_q5_k gguf_iq4_nl gguf_iq4_xs gguf_mxfp4 gguf_f16"}
shapes=${SHAPES:-"14336x5120 4096x14336"}
ops=${OPS:-"gemv decode"}
threads=${THREADS:-"0 1"}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for r in $(seq 1 "$rounds"); do
    for t in $threads; do
        targ=()
        [ "$t" = 0 ] || targ=(--threads "$t")
        for op in $ops; do
            "$bench" --format "$(echo $formats | tr ' ' ,)" --shape "$(echo $shapes | tr ' ' ,)" --op "$op" \
                --iters 30 --warmup 3 --csv "${targ[@]}" 2> /dev/null >> "$tmp" || true
        done
    done
done
# the CSV columns by name (every run's header line starts with "device,")
awk -F, '
    function median(list, n,   a, i, j, t) {
        n = split(list, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    $1 == "device" { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { k = $c["op"] " " $c["format"] " " $c["rows"] "x" $c["cols"] " " $c["threads"]
      g[k] = g[k] " " $c["gbps"]; p[k] = p[k] " " $c["ratio"]; if (!(k in o)) o[k] = NR }
    END {
        printf "%-6s %-12s %-11s %3s %9s %7s %7s  %s\n", "op", "format", "shape", "thr", "GB/s", "ratio", "rounds", "aim"
        n = 0
        for (k in o) keys[++n] = k
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (o[keys[j]] < o[keys[i]]) { t = keys[i]; keys[i] = keys[j]; keys[j] = t }
        for (i = 1; i <= n; i++) {
            k = keys[i]; split(k, f, " ")
            r = median(p[k]); aim = ""
            if (f[1] == "gemv" && f[2] ~ /^gguf_(q4_k|q6_k|q8_0|q5_0)$/)
                aim = r >= 0.8 ? "meets 0.8" : "below 0.8"
            printf "%-6s %-12s %-11s %3s %9.2f %7.3f %7d  %s\n", f[1], f[2], f[3], f[4], median(g[k]), r,
                   split(p[k], z, " "), aim
        }
    }' "$tmp"
