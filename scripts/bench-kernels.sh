#!/usr/bin/env bash
# bench-kernels.sh [FORMAT ...] — the CPU GEMV of every format against the
# read peak measured beside each case (ninfer-bench(1)), at 4096x14336 and
# 14336x4096 (a Llama-3-8B MLP both ways), cold and hot, on 1 thread and on
# all, A16 and A8; with BASE an older build run beside this one,
# interleaved; with LLAMA_CPP llama.cpp's own kernels for the matching ggml
# types; the aims of issue 21 checked. One command, bounded in time: with
# BASE and LLAMA_CPP about 3 minutes a round on 2 quiet cores (4.3 with the
# machine half busy), so about 10 minutes for the 3 rounds; without them
# about a minute a round.
#
# The method (ninfer-bench(1), METHOD):
#  - quiet gate: /proc/stat over the whole run: (Δbusy - Δself) / Δtotal
#    <= 3% and steal / Δtotal <= 1%, self = this script and its children;
#    the readings and the verdict are printed (a run that is not quiet
#    still prints its figures, marked). QUIET_WAIT=S waits up to S seconds
#    for a quiet machine before starting (checked over 2 s windows).
#  - every case: the peak measured in the same process right before and
#    right after it, at its thread count; ITERS (>= 30) timed runs after a
#    warm-up; GB/s at the 10th-percentile time; ratio = that over
#    max(peak before, peak after); a case is unstable when the two peaks
#    differ by more than 15% or the machine was busy during it.
#  - cold: the weights rotate through >= 256 MiB of copies (--llc-bytes 64M
#    for both builds: 4 x 64 MiB + 1 MiB); hot: beside them, a matrix of at
#    most 1 MiB (K 4096) timed from cache, so that compute and memory limits
#    are told apart.
#  - A/B: ROUNDS (>= 3) rounds; in each, every group of cases runs on both
#    builds, the order alternating; the table gives medians over rounds.
#
# Environment: NF_BIN (default bin/), BASE (a git revision, built in a
# scratch tree, or a directory holding ninfer-bench or bin/ninfer-bench),
# LLAMA_CPP (a llama.cpp tree with its build/, e.g. the llama-cpp-python
# sdist's vendor/llama.cpp: scripts/llama-gemv.c is compiled against it),
# FORMATS (default below; "all": every format of ninfer-bench --help),
# SHAPES, THREADS (default "1 $(nproc)"), ACTS (default "a16 a8"), ITERS
# (default 30), ROUNDS (default 3), QUIET_WAIT (default 0), OUT (a
# directory to keep the raw records in).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${NF_BIN:-$here/bin}
ITERS=${ITERS:-30}
ROUNDS=${ROUNDS:-3}
SHAPES=${SHAPES:-"4096x14336 14336x4096"}
THREADS=${THREADS:-"1 $(nproc)"}
ACTS=${ACTS:-"a16 a8"}
DEFAULT_FORMATS="bf16 fp8_e4m3fn_row_bf16 nvfp4 q2_g64_fp16 q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 q8_g32_fp16 t2_g128_fp16 gguf_q4_0 gguf_q4_k gguf_q5_0 gguf_q6_k gguf_q8_0"
FORMATS=${*:-${FORMATS:-$DEFAULT_FORMATS}}
NEW="$BIN/ninfer-bench"
[ -x "$NEW" ] || { echo "bench-kernels: $NEW missing: run make" >&2; exit 3; }
[ "$FORMATS" = all ] && FORMATS=$("$NEW" --help | sed -n 's/^Formats: //p')
[ "$ITERS" -ge 30 ] || echo "# bench-kernels: ITERS=$ITERS is below the method's 30" >&2
[ "$ROUNDS" -ge 3 ] || echo "# bench-kernels: ROUNDS=$ROUNDS is below the method's 3" >&2
tmp=$(mktemp -d /tmp/bench-kernels.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=scripts/bench-lib.sh
. "$here/scripts/bench-lib.sh"
quiet_wait "${QUIET_WAIT:-0}" bench-kernels

# ---- the builds ------------------------------------------------------------------
BASEBIN=""
if [ -n "${BASE:-}" ]; then
    bb=$(base_bin "$BASE" "$tmp" bench-kernels ninfer-bench) || exit $?
    BASEBIN=$bb/ninfer-bench
fi
# a build that takes format and shape lists and prints the peaks per case
is_new() { "$1" --help 2> /dev/null | grep -q -- '--rotate-bytes'; }
LLQ=""
if [ -n "${LLAMA_CPP:-}" ]; then
    cc -O2 -I"$LLAMA_CPP/ggml/include" "$here/scripts/llama-gemv.c" -L"$LLAMA_CPP/build/bin" \
        -lggml -lggml-base -lggml-cpu -Wl,-rpath,"$LLAMA_CPP/build/bin" -lm -pthread -o "$tmp/llama-gemv" ||
        { echo "bench-kernels: cannot build scripts/llama-gemv.c against LLAMA_CPP=$LLAMA_CPP" >&2; exit 3; }
    LLQ=$tmp/llama-gemv
fi

# bits per weight at K 4096, for the hot shape (<= 1 MiB, rows a multiple of 128)
bpw() {
    case $1 in
    bf16 | gguf_f16) echo 16 ;; fp32 | int32) echo 32 ;; q2_g64_fp16) echo 2.25 ;; t2_g128_fp16) echo 2.125 ;;
    q4_g64_fp16) echo 4.25 ;; q5_g64_fp16) echo 5.25 ;; q6_g64_fp16) echo 6.25 ;; q8_g32_fp16 | gguf_q8_0) echo 8.5 ;;
    nvfp4 | gguf_q4_0 | gguf_q4_k | gguf_iq4_nl) echo 4.5 ;; fp8_e4m3fn_row_bf16) echo 8 ;;
    gguf_q5_0 | gguf_q5_k) echo 5.5 ;; gguf_q6_k) echo 6.5625 ;; gguf_q4_1) echo 5 ;; gguf_q5_1) echo 6 ;;
    gguf_q2_k) echo 2.625 ;; gguf_q3_k) echo 3.4375 ;; gguf_iq4_xs | gguf_mxfp4) echo 4.25 ;; *) echo 8 ;;
    esac
}
hot_shape() {
    awk -v b="$(bpw "$1")" 'BEGIN { r = int(1048576 / (4096 * b / 8) / 128) * 128; if (r < 64) r = 64; printf "%dx4096\n", r }'
}

# run_new BUILD ROUND THR ACT MODE — one invocation over every format (and
# shape), its CSV normalised: build round mode op act format shape thr gbps
# ratio peak_b peak_a unstable check
norm_new() {
    awk -F, -v b="$1" -v r="$2" -v m="$3" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { print b, r, m, $c["op"], $c["activation"] == "" ? "-" : $c["activation"], $c["format"],
                $c["rows"] "x" $c["cols"], $c["threads"], $c["gbps"], $c["ratio"],
                $c["peak_before_gbps"], $c["peak_after_gbps"], $c["unstable"], $c["check"] }'
}
# the old columns (case,...,encoded_bytes,median_s,p10_s,...,peak_gbps,pct_of_peak):
# GB/s at the p10 time against the row's peak
norm_old() {
    awk -F, -v b="$1" -v r="$2" -v m="$3" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { g = $c["encoded_bytes"] / $c["p10_s"] / 1e9; p = $c["peak_gbps"]
          print b, r, m, $c["op"], $c["activation"], $c["format"], $c["n"] "x" $c["k"], $c["threads"],
                sprintf("%.3f", g), (p > 0 ? sprintf("%.4f", g / p) : ""), p, p, "-", "-" }'
}
run_build() { # BIN LABEL ROUND THR ACT
    local bin=$1 label=$2 r=$3 th=$4 act=$5 f s fl
    if is_new "$bin"; then
        fl=$(echo $FORMATS | tr ' ' ,)
        "$bin" --csv --format "$fl" --shape "$(echo $SHAPES | tr ' ' ,)" --threads "$th" --activation "$act" \
            --iters "$ITERS" --warmup 3 --llc-bytes 64M 2>> "$tmp/err" | norm_new "$label" "$r" cold
        # one invocation per hot shape, over the formats that share it
        local hs fs
        for hs in $(for f in $FORMATS; do hot_shape "$f"; done | sort -u); do
            fs=$(for f in $FORMATS; do if [ "$(hot_shape "$f")" = "$hs" ]; then echo "$f"; fi; done | tr '\n' , | sed 's/,$//')
            "$bin" --csv --hot --format "$fs" --shape "$hs" --threads "$th" --activation "$act" \
                --iters "$ITERS" --warmup 3 --llc-bytes 64M 2>> "$tmp/err" | norm_new "$label" "$r" hot
        done
    else
        for s in $SHAPES; do
            for f in $FORMATS; do
                "$bin" --csv --format "$f" --shape "$s" --threads "$th" --activation "$act" --iters "$ITERS" \
                    --warmup 3 --llc-bytes 64M 2>> "$tmp/err" | norm_old "$label" "$r" cold || true
            done
        done
        for f in $FORMATS; do
            "$bin" --csv --format "$f" --shape "$(hot_shape "$f")" --threads "$th" --activation "$act" \
                --iters "$ITERS" --warmup 3 --llc-bytes 64K 2>> "$tmp/err" | norm_old "$label" "$r" hot || true
        done
    fi
}
# llama.cpp's type for one of our formats (the matched one the aims name)
ggml_type() {
    case $1 in
    gguf_*) t=${1#gguf_}; case $t in *_k) t=${t%_k}_K ;; esac; echo "$t" ;;
    q4_g64_fp16) echo "q4_0 q4_K" ;; q5_g64_fp16) echo q5_0 ;; q6_g64_fp16) echo q6_K ;;
    q8_g32_fp16) echo q8_0 ;; nvfp4) echo nvfp4 ;; bf16) echo bf16 ;; *) echo "" ;;
    esac
}
LTYPES=""
for f in $FORMATS; do
    for t in $(ggml_type "$f"); do [[ " $LTYPES " == *" $t "* ]] || LTYPES="$LTYPES $t"; done
done
run_llama() { # ROUND THREADS,... (the weights quantized once for all counts)
    local t s
    for t in $LTYPES; do
        for s in $SHAPES; do
            "$LLQ" "$t" "$s" "$2" "$ITERS" cold $((256 << 20)) 2>> "$tmp/err" |
                awk -v r="$1" '{ print "llama", r, "cold", "gemv", "q8", $1, $2 "x" $3, $4, $7, "", "", "", "-", "-" }' || true
        done
    done
}

printf '# bench-kernels: %s CPUs (%s), %s timed runs a case, %s rounds; formats: %s\n' "$(nproc)" \
    "$(grep -m1 'model name' /proc/cpuinfo 2> /dev/null | sed 's/.*: //')" "$ITERS" "$ROUNDS" "$FORMATS"
[ -z "$BASEBIN" ] || printf '# BASE: %s\n' "$BASEBIN"
[ -z "$LLQ" ] || printf '# llama.cpp: %s (ggml_mul_mat, its q8 activations): %s\n' "$LLAMA_CPP" "$LTYPES"
s0=$(stat_now)
raw=$tmp/raw.txt
for ((r = 1; r <= ROUNDS; r++)); do
    for th in $THREADS; do
        for act in $ACTS; do
            if [ -n "$BASEBIN" ] && [ $((r % 2)) -eq 0 ]; then
                run_build "$BASEBIN" base "$r" "$th" "$act" >> "$raw"
                run_build "$NEW" new "$r" "$th" "$act" >> "$raw"
            else
                run_build "$NEW" new "$r" "$th" "$act" >> "$raw"
                [ -z "$BASEBIN" ] || run_build "$BASEBIN" base "$r" "$th" "$act" >> "$raw"
            fi
        done
    done
    [ -z "$LLQ" ] || run_llama "$r" "$(echo $THREADS | tr ' ' ,)" >> "$raw"
done
s1=$(stat_now)
read -r others steal verdict <<< "$(quiet_between "$s0" "$s1")"
[ -z "${OUT:-}" ] || { mkdir -p "$OUT"; cp "$raw" "$OUT/bench-kernels.raw"; cp "$tmp/err" "$OUT/bench-kernels.err"; }

# ---- the table ---------------------------------------------------------------------
# medians over rounds per (build, mode, act, format, shape, threads); the aims
awk -v all="$(nproc)" -v base="$([ -n "$BASEBIN" ] && echo 1 || echo 0)" -v llama="$([ -n "$LLQ" ] && echo 1 || echo 0)" '
    function med(list,   a, n, i, j, t) {
        n = split(list, a, " "); if (!n) return ""
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function gtype(f,   t) {
        if (f ~ /^gguf_/) { t = substr(f, 6); sub(/_k$/, "_K", t); return t }
        if (f == "q4_g64_fp16") return "q4_0"; if (f == "q5_g64_fp16") return "q5_0"
        if (f == "q6_g64_fp16") return "q6_K"; if (f == "q8_g32_fp16") return "q8_0"
        if (f == "nvfp4") return "nvfp4"; if (f == "bf16") return "bf16"; return ""
    }
    {
        b = $1; mode = $3; act = $5; f = $6; sh = $7; th = $8
        if (b == "llama") { lg[f " " sh " " th] = lg[f " " sh " " th] " " $9; next }
        k = mode " " act " " f " " sh " " th
        if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
        g[b, k] = g[b, k] " " $9
        if ($10 != "") q[b, k] = q[b, k] " " $10
        if ($11 != "" && $12 != "") { pk = ($11 > $12 ? $11 : $12); pp[b, k] = pp[b, k] " " pk }
        if ($13 == "1") un[b, k]++
        if ($14 == "FAIL") bad[b, k]++
    }
    END {
        printf "%-21s %-11s %3s %-4s | %7s %6s %6s %4s | %7s %6s | %7s %6s %7s | %s\n", "format", "shape", "thr", "act",
               "GB/s", "ratio", "peak", "unst", "hot", "h_rat", "base", "b_rat", "x_base", "llama  x_llama  aim"
        for (i = 1; i <= nk; i++) {
            k = order[i]; split(k, p, " ")
            if (p[1] != "cold") continue
            act = p[2]; f = p[3]; sh = p[4]; th = p[5]
            hk = ""
            for (j = 1; j <= nk; j++) { split(order[j], z, " "); if (z[1] == "hot" && z[2] == act && z[3] == f && z[5] == th) hk = order[j] }
            G = med(g["new", k]); R = med(q["new", k]); P = med(pp["new", k])
            H = hk == "" ? "" : med(g["new", hk]); HR = hk == "" ? "" : med(q["new", hk])
            BG = base ? med(g["base", k]) : ""; BR = base ? med(q["base", k]) : ""
            XB = (base && BG > 0) ? sprintf("%.2f", G / BG) : ""
            L = ""; XL = ""
            t = gtype(f)
            if (llama && t != "" && (t " " sh " " th) in lg) { L = med(lg[t " " sh " " th]); if (L > 0) XL = sprintf("%.2f", G / L) }
            # the aims of issue 21
            aim = ""
            want = th == 1 ? 0.75 : 0.85
            if (act == "a8") want = 0.85
            if (f == "t2_g128_fp16" && act == "a16" && th != 1 && P > 60) want = 0
            if (want > 0 && R != "") aim = aim (R >= want ? "" : sprintf(" ratio<%.2f", want))
            if (XL != "") {
                wl = f ~ /^gguf_/ ? 1.0 : (f == "bf16" ? 1.0 : 1.2)
                if (act == "a16" || f ~ /^gguf_/) aim = aim (XL >= wl ? "" : sprintf(" x_llama<%.1f", wl))
            }
            if (bad["new", k]) aim = aim " CHECK-FAIL"
            aim = aim == "" ? "meets" : "below:" aim
            printf "%-21s %-11s %3s %-4s | %7.2f %6.3f %6.1f %4d | %7s %6s | %7s %6s %7s | %6s %6s  %s\n", f, sh, th, act,
                   G, R, P, un["new", k] + 0, H == "" ? "" : sprintf("%.2f", H), HR == "" ? "" : sprintf("%.3f", HR),
                   BG == "" ? "" : sprintf("%.2f", BG), BR == "" ? "" : sprintf("%.3f", BR), XB, L == "" ? "" : sprintf("%.2f", L), XL, aim
        }
        if (llama) {
            printf "# llama.cpp kernel GB/s (medians):"
            for (k in lg) printf "  %s %s", k, med(lg[k])
            printf "\n"
        }
    }' "$raw"
printf '# quiet gate over the run: others %s%% of the CPU time (<= 3%%), steal %s%% (<= 1%%): %s\n' \
    "$others" "$steal" "$verdict"
printf '# GB/s: encoded bytes at the 10th-percentile time, medians over %s rounds; ratio: over the larger of the\n' "$ROUNDS"
printf '# peaks just before and after the case; hot: <= 1 MiB from cache; base: BASE the same way; unst: rounds\n'
printf '# the case was unstable (peaks > 15%% apart or the machine busy)\n'
[ ! -s "$tmp/err" ] || { echo "# diagnostics:"; sort -u "$tmp/err" | head -20; }
