#!/usr/bin/env bash
# gpu-check.sh — the CUDA checks and the benchmark table of issue 5 in one
# run of about four minutes on a machine with a GPU. It builds nothing there.
#
# Here, where nvcc is (no GPU needed):
#     scripts/gpu-check.sh --prepare
#   builds build/gpu/bin/ninfer-bench and build/gpu/tests/gpu/t_device with
#   json-c, zstd, OpenSSL and libstdc++ linked statically (the device image
#   may not have them; only glibc >= 2.35 is needed there) and prints what
#   to carry.
# There (the device tool, from the repository root):
#     scripts/gpu-check.sh
#   carry ["build/gpu/bin", "build/gpu/tests/gpu"], timeout_s about 480.
#   1. nvidia-smi answers, the binaries start;
#   2. t_device: every kernel against the CPU reference, every format, odd
#      shapes, decode bit for bit, the load path (TAP);
#   3. the GEMV table: ninfer-bench --device cuda --op gemv for 4096x4096,
#      14336x5120, 5120x17408, 27648x5120 and bf16, q8_g32_fp16,
#      fp8_e4m3fn_row_bf16, q4_g64_fp16, q5_g64_fp16, q6_g64_fp16, nvfp4;
#   3b. the gguf_* formats (DESIGN 7.5: the unit kernel of
#      cuda/nf_kindex_gguf.h) at 14336x5120 and 4096x14336: gguf_q4_k,
#      gguf_q6_k, gguf_q8_0, gguf_q5_0, gguf_iq4_xs, gguf_mxfp4;
#   4. --op decode for four formats at 14336x5120, and gguf_q4_k;
#   5. while time is left: GEMV plan variants (NF_CUDA_R / NF_CUDA_W) at
#      14336x5120 for q4, q6, nvfp4 and bf16, for tuning;
#   6. cuobjdump resource usage and SASS, when cuobjdump is there.
# Each command runs under `timeout`; new benchmarks stop being started after
# GPU_CHECK_BUDGET seconds (default 300). Results go to $OUT (or
# build/gpu-check-out): gpu-check.log (everything), t_device.tap,
# bench.txt (the raw rows), summary.txt (printed last).
# Exit status: 0 when t_device passed (benchmarks never fail the run),
# 1 when a test failed or did not finish, 2 when there is no GPU or binary.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 2

if [ "${1:-}" = "--prepare" ]; then
    nvcc=$(command -v nvcc) || { echo "gpu-check: --prepare needs nvcc" >&2; exit 2; }
    cuda=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
    make BUILD=build/gpu BIN=build/gpu/bin LDFLAGS="-static-libgcc" \
        NF_LIBS="-Wl,-Bstatic -ljson-c -lzstd -lcrypto -lstdc++ -Wl,-Bdynamic -lpthread -lm -ldl \
-L$cuda/lib64 -L$cuda/targets/x86_64-linux/lib -lcudart_static -lrt" \
        build/gpu/bin/ninfer-bench build/gpu/tests/gpu/t_device || exit 1
    for b in build/gpu/bin/ninfer-bench build/gpu/tests/gpu/t_device; do
        echo "$b: needs $(ldd "$b" | awk '/=>/ {print $1}' | tr '\n' ' ')"
    done
    echo 'carry: ["build/gpu/bin", "build/gpu/tests/gpu"]   then: scripts/gpu-check.sh'
    exit 0
fi

OUT=${OUT:-build/gpu-check-out}
mkdir -p "$OUT" || exit 2
log=$OUT/gpu-check.log
sum=$OUT/summary.txt
rows=$OUT/bench.txt
: > "$log"
: > "$sum"
: > "$rows"
budget=${GPU_CHECK_BUDGET:-300}
t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0)); }
say() { echo "$*" | tee -a "$log" >> "$sum"; }
note() { echo "$*" >> "$log"; }

pick() { # first existing executable among the arguments
    local f
    for f in "$@"; do
        [ -n "$f" ] && [ -x "$f" ] && { echo "$f"; return 0; }
    done
    return 1
}
bench=$(pick "${NF_GPU_BENCH:-}" build/gpu/bin/ninfer-bench bin/ninfer-bench)
tdev=$(pick "${NF_GPU_TEST:-}" build/gpu/tests/gpu/t_device build/tests/gpu/t_device)

finish() {
    say "# elapsed $(elapsed) s"
    echo "=== summary ($sum) ==="
    cat "$sum"
    exit "$1"
}

# ---- 1. the machine and the binaries ----
say "# gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
if ! timeout 30 nvidia-smi >> "$log" 2>&1; then
    say "FAIL nvidia-smi does not answer: no GPU here"
    finish 2
fi
say "# $(timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm,clocks.mem \
    --format=csv,noheader 2>&1 | head -n1)"
for b in "$bench" "$tdev"; do
    if [ -z "$b" ]; then
        say "FAIL ninfer-bench or t_device missing: run scripts/gpu-check.sh --prepare where nvcc is, and carry build/gpu"
        finish 2
    fi
    if ldd "$b" 2>&1 | grep -q 'not found'; then
        say "FAIL $b: shared libraries missing here: $(ldd "$b" | grep 'not found' | tr -s ' \t\n' ' ')"
        finish 2
    fi
done
say "# binaries: $bench, $tdev"

# ---- 2. the kernels against the CPU reference ----
status=0
timeout 240 "$tdev" > "$OUT/t_device.tap" 2>&1 < /dev/null
rc=$?
cat "$OUT/t_device.tap" >> "$log"
pass=$(grep -c '^ok ' "$OUT/t_device.tap")
skip=$(grep -c '^ok .*# skip' "$OUT/t_device.tap")
fail=$(grep -c '^not ok ' "$OUT/t_device.tap")
pass=$((pass - skip))
say "# t_device: $pass passed, $fail failed, $skip skipped (exit $rc, $(elapsed) s)"
if [ "$rc" -ne 0 ] || [ "$fail" -ne 0 ] || [ "$pass" -eq 0 ] || [ "$skip" -ne 0 ]; then
    status=1
    grep -A3 '^not ok ' "$OUT/t_device.tap" | head -n 40 >> "$sum"
    grep '# skip' "$OUT/t_device.tap" | head -n 5 >> "$sum"
    [ "$rc" -ge 124 ] && say "FAIL t_device did not finish (exit $rc)"
fi
grep -E '^ok .*(peak|worst [0-9.]+ units.*R=2)' "$OUT/t_device.tap" | head -n 3 >> "$log"

# ---- 3-5. benchmarks ----
one() { # one ninfer-bench case: FORMAT SHAPE OP [ENV...]
    local f=$1 s=$2 op=$3 out
    shift 3
    if [ "$(elapsed)" -ge "$budget" ]; then
        note "skipped (budget): $f $s $op $*"
        echo "skipped $op $f $s $*" >> "$rows"
        return
    fi
    out=$(env "$@" timeout 90 "$bench" --device cuda --op "$op" --format "$f" --shape "$s" 2>&1 < /dev/null)
    local rc=$?
    { echo "\$ $* ninfer-bench --device cuda --op $op --format $f --shape $s   (exit $rc)"; echo "$out"; } >> "$log"
    local peak row
    peak=$(sed -n 's/^# peak \([0-9.]*\) GB\/s.*/\1/p' <<< "$out" | head -n1)
    row=$(awk -v op="$op" '$2 == op && $1 !~ /^#/' <<< "$out" | head -n1)
    if [ -n "$row" ]; then
        echo "$row peak=$peak ${*:-default}" >> "$rows"
    else
        echo "failed $op $f $s exit=$rc ${*:-} $(tail -n1 <<< "$out")" >> "$rows"
    fi
}

shapes="4096x4096 14336x5120 5120x17408 27648x5120"
formats="bf16 q8_g32_fp16 fp8_e4m3fn_row_bf16 q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 nvfp4"
for s in $shapes; do
    for f in $formats; do
        one "$f" "$s" gemv
    done
done
for s in 14336x5120 4096x14336; do
    for f in gguf_q4_k gguf_q6_k gguf_q8_0 gguf_q5_0 gguf_iq4_xs gguf_mxfp4; do
        one "$f" "$s" gemv
    done
done
for f in q4_g64_fp16 nvfp4 fp8_e4m3fn_row_bf16 bf16 gguf_q4_k; do
    one "$f" 14336x5120 decode
done
# plan variants for tuning (the default plan is in the table above)
while read -r f v; do
    # shellcheck disable=SC2086
    one "$f" 14336x5120 gemv $v
done <<'EOF'
q4_g64_fp16 NF_CUDA_R=4
q4_g64_fp16 NF_CUDA_R=1
q6_g64_fp16 NF_CUDA_R=4
nvfp4 NF_CUDA_R=4
bf16 NF_CUDA_W=1
bf16 NF_CUDA_W=8
EOF

# ---- 6. what the compiler made ----
if command -v cuobjdump > /dev/null 2>&1; then
    timeout 60 cuobjdump --dump-resource-usage "$bench" > "$OUT/resource-usage.txt" 2>&1
    timeout 60 cuobjdump --dump-sass "$bench" 2> /dev/null | gzip > "$OUT/sass.txt.gz"
    note "cuobjdump: $OUT/resource-usage.txt, $OUT/sass.txt.gz"
fi

# ---- the table ----
{
    echo
    echo "GEMV/decode on $(timeout 20 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1):" \
        "encoded bytes read per second against the device-to-device copy peak of the same run"
    awk '
        function aim(f) { return (f ~ /^(bf16|q8_g32_fp16|fp8_e4m3fn_row_bf16)$/) ? 85 : 75 }
        BEGIN { printf "%-6s %-20s %-11s %10s %9s %9s %8s %6s %8s  %s\n", "op", "format", "shape",
                "bytes", "med_us", "p90_us", "GB/s", "%peak", "peak", "note" }
        # a row of the table: case op act format N K bytes med p10 p90 GB/s peak x_peak
        $2 ~ /^(gemv|decode)$/ && NF >= 13 {
            f = $4; shape = $5 "x" $6; pct = sprintf("%.1f", $13 * 100)
            peak = $12
            extra = ""; for (i = 15; i <= NF; i++) extra = extra " " $i
            n = ""
            if ($2 == "gemv" && extra ~ /default/ && shape != "4096x4096")
                n = (pct + 0 >= aim(f)) ? "meets " aim(f) "%" : "below " aim(f) "%"
            if (extra !~ /default/) n = n extra
            printf "%-6s %-20s %-11s %10s %9.1f %9.1f %8s %6s %8s  %s\n", $2, f, shape, $7,
                   $8 * 1000, $10 * 1000, $11, pct, peak, n
            next
        }
        { print "# " $0 }
    ' "$rows"
} >> "$sum"
cat "$sum" >> "$log"
finish "$status"
