#!/usr/bin/env bash
# bench-quant.sh [FORMAT ...] — the quantizer's throughput and quality.
#
# Throughput: MB/s = F16 input bytes / wall time of
#   ninfer-quant -i logical.json 'text/*=FORMAT' | ninfer-pack -o q.ninfer -
# on a generated Llama-shaped F16 checkpoint (hidden 2048, intermediate
# 5632, 32 heads, 4 KV heads, vocab 32000, 9 layers: 1.06 GB of F16), warm
# cache, all threads (ninfer-pack's default). Each format runs REPS times
# (default 3) and the best wall time counts; the CPU time (user + sys) of
# the same run is printed beside it, as a figure that a busy machine
# disturbs less. With BASE=REV (a git revision, built in a scratch tree) or
# BASE=DIR (the bin/ of another build; NF_BASE_BIN too), that build runs the
# same pipeline interleaved with this one (the order alternating), and the
# ratio is printed: on a shared machine only the ratio means much. With
# LLAMA_QUANTIZE=PATH (llama.cpp's llama-quantize, built at development time,
# never part of the build), the same checkpoint converted to an F16 GGUF
# (nf-mkgguf) is quantized by it to the matching ggml type (q8 Q8_0, q6
# Q6_K, q5 Q5_0, q4 Q4_0; LLAMA_TYPES="q4_g64_fp16=Q4_K ..." to change),
# all threads, interleaved with ours in every repetition; MB/s counts the
# GGUF's bytes, and x_llama is our MB/s over its.
#
# The quiet gate (scripts/bench-lib.sh): /proc/stat over the whole run,
# (Δbusy - Δself) / Δtotal <= 3% and steal <= 1%; the readings and the
# verdict are printed at the end; QUIET_WAIT=S waits up to S seconds for a
# quiet machine first.
#
# Quality: pooled SNR (10 log10 sum x^2 / sum err^2, from ninfer-pack
# --report) on the real stories260K weights (../shared/realdata, f32), over
# the tensors ggml quantizes (down_proj excluded, as in tests/codecs.bats).
#
# Environment: NF_BIN (default bin/), NF_TOOLS (default build/tools/),
# NF_BENCH_DIR (scratch, default a new directory under /tmp, removed at the
# end unless NF_BENCH_KEEP=1), REPS (>= 3), BASE (or NF_BASE_BIN),
# LLAMA_QUANTIZE, LLAMA_TYPES, QUIET_WAIT.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${NF_BIN:-$here/bin}
TOOLS=${NF_TOOLS:-$here/build/tools}
BASE=${BASE:-${NF_BASE_BIN:-}}
LLQ=${LLAMA_QUANTIZE:-}
REPS=${REPS:-3}
REAL=${NF_REALDATA:-$here/../shared/realdata}/stories260K/hf-f32
formats=${*:-q8_g32_fp16 q6_g64_fp16 q5_g64_fp16 q4_g64_fp16}
dir=${NF_BENCH_DIR:-$(mktemp -d /tmp/bench-quant.XXXXXX)}
mkdir -p "$dir"
[ "${NF_BENCH_KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT
# shellcheck source=scripts/bench-lib.sh
. "$here/scripts/bench-lib.sh"
if [ -n "$BASE" ]; then
    BASE=$(base_bin "$BASE" "$dir" bench-quant ninfer-import ninfer-quant ninfer-pack) || exit $?
fi
quiet_wait "${QUIET_WAIT:-0}" bench-quant
for t in "$BIN/ninfer-import" "$BIN/ninfer-quant" "$BIN/ninfer-pack" "$TOOLS/nf-mkckpt"; do
    [ -x "$t" ] || { echo "bench-quant: $t missing: run make (and make $TOOLS/nf-mkckpt)" >&2; exit 3; }
done

ck=$dir/ckpt
if [ ! -e "$ck/model.safetensors" ]; then
    "$TOOLS/nf-mkckpt" --dtype f16 --hidden 2048 --intermediate 5632 --heads 32 --kv-heads 4 \
        --vocab 32000 --layers 9 "$ck" 2> /dev/null
fi
"$BIN/ninfer-import" "$ck" > "$dir/logical.json"
# the F16 input: every tensor of the checkpoint is F16 but the norms (F32)
in_bytes=$(stat -c %s "$ck/model.safetensors")

gg=$dir/ckpt.gguf
if [ -n "$LLQ" ]; then
    [ -x "$LLQ" ] || { echo "bench-quant: LLAMA_QUANTIZE=$LLQ is not executable" >&2; exit 3; }
    [ -e "$gg" ] || "$TOOLS/nf-mkgguf" --no-tokenizer "$ck" "$gg"
    gg_bytes=$(stat -c %s "$gg")
fi
# the ggml type llama-quantize makes for FORMAT
ggml_type() {
    local t
    case $1 in
        q8_g32_fp16) t=Q8_0 ;; q6_g64_fp16) t=Q6_K ;; q5_g64_fp16) t=Q5_0 ;; q4_g64_fp16) t=Q4_0 ;;
        *) t=Q8_0 ;;
    esac
    for kv in ${LLAMA_TYPES:-}; do [ "${kv%%=*}" = "$1" ] && t=${kv#*=}; done
    echo "$t"
}
# llq TYPE -> "wall cpu" seconds of llama-quantize (warm cache)
llq() {
    cat "$gg" > /dev/null
    /usr/bin/time -f '%e %U %S' -o "$dir/time.txt" "$LLQ" "$gg" "$dir/q.gguf" "$1" "$(nproc)" > /dev/null 2>&1
    awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$dir/time.txt"
}

# run BIN FORMAT -> "wall cpu" seconds of the pipeline (warm cache), from
# GNU time over a shell that runs both commands
run() {
    cat "$ck/model.safetensors" > /dev/null
    /usr/bin/time -f '%e %U %S' -o "$dir/time.txt" sh -c \
        '"$1/ninfer-quant" -i "$2/logical.json" "text/*=$3" | "$1/ninfer-pack" -q --no-sync --force -o "$2/q.ninfer" -' \
        sh "$1" "$dir" "$2"
    awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "$dir/time.txt"
}

printf '# bench-quant: %s bytes of F16 input (%s), %s CPUs, best of %s; load %s\n' "$in_bytes" "$ck" \
    "$(nproc)" "$REPS" "$(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$LLQ" ] || printf '# llama-quantize: %s on %s bytes of F16 GGUF\n' "$LLQ" "$gg_bytes"
printf '%-14s %9s %9s %7s' format MB/s wall_s cpu_s
[ -z "$BASE" ] || printf ' | %9s %9s %7s | %6s' base_MB/s base_s cpu_s ratio
[ -z "$LLQ" ] || printf ' | %-5s %9s %9s %7s | %7s' ggml MB/s wall_s cpu_s x_llama
printf '\n'
better() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
s0=$(stat_now)
for f in $formats; do
    best=1e9 bcpu=0 bbest=1e9 bbcpu=0 lbest=1e9 lcpu=0
    t=$(ggml_type "$f")
    for ((r = 0; r < REPS; r++)); do
        if [ -n "$BASE" ] && [ $((r % 2)) -eq 1 ]; then
            read -r w c < <(run "$BASE" "$f")
            if better "$w" "$bbest"; then bbest=$w bbcpu=$c; fi
        fi
        read -r w c < <(run "$BIN" "$f")
        if better "$w" "$best"; then best=$w bcpu=$c; fi
        if [ -n "$BASE" ] && [ $((r % 2)) -eq 0 ]; then
            read -r w c < <(run "$BASE" "$f")
            if better "$w" "$bbest"; then bbest=$w bbcpu=$c; fi
        fi
        if [ -n "$LLQ" ]; then
            read -r w c < <(llq "$t")
            if better "$w" "$lbest"; then lbest=$w lcpu=$c; fi
        fi
    done
    awk -v f="$f" -v n="$in_bytes" -v w="$best" -v c="$bcpu" 'BEGIN {
        printf "%-14s %9.1f %9.3f %7.2f", f, n / w / 1e6, w, c }'
    [ -z "$BASE" ] || awk -v n="$in_bytes" -v w="$best" -v bw="$bbest" -v bc="$bbcpu" 'BEGIN {
        printf " | %9.1f %9.3f %7.2f | %6.2f", n / bw / 1e6, bw, bc, bw / w }'
    [ -z "$LLQ" ] || awk -v t="$t" -v n="$in_bytes" -v w="$best" -v g="$gg_bytes" -v lw="$lbest" -v lc="$lcpu" 'BEGIN {
        printf " | %-5s %9.1f %9.3f %7.2f | %7.2f", t, g / lw / 1e6, lw, lc, (n / w) / (g / lw) }'
    printf '\n'
done

s1=$(stat_now)
read -r others steal verdict <<< "$(quiet_between "$s0" "$s1")"
printf '# quiet gate over the timed runs: others %s%% of the CPU time (<= 3%%), steal %s%% (<= 1%%): %s\n' \
    "$others" "$steal" "$verdict"

# ---- SNR on real weights ----
if [ -e "$REAL/model.safetensors" ]; then
    "$BIN/ninfer-import" "$REAL" > "$dir/real.json"
    printf '# pooled SNR on stories260K (f32), down_proj excluded\n%-22s %8s\n' format SNR_dB
    for f in q8_g32_fp16 q6_g64_fp16 q5_g64_fp16 q4_g64_fp16 q2_g64_fp16 t2_g128_fp16 fp8_e4m3fn_row_bf16; do
        "$BIN/ninfer-quant" -i "$dir/real.json" "text/*=$f" > "$dir/realq.json"
        "$BIN/ninfer-pack" -q --no-sync --force --report -o "$dir/real.ninfer" "$dir/realq.json" > "$dir/report.tsv"
        awk -F'\t' -v f="$f" 'NR > 1 && $1 !~ /down_proj/ && $2 != "bf16" && $2 != "fp32" {
                sse = $4 * $4 * $3; a += sse; b += sse * 10 ^ ($6 / 10) }
            END { printf "%-22s %8.2f\n", f, 10 * log(b / a) / log(10) }' "$dir/report.tsv"
    done
else
    echo "# SNR skipped: no $REAL/model.safetensors"
fi
