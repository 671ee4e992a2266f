#!/usr/bin/env bash
# gpu-check.sh — one run on a lent GPU gives a verdict per format: the CUDA
# kernels against the CPU reference (t_device, one process per format, so a
# fault that poisons the CUDA context hides nothing else), compute-sanitizer's
# memcheck on them, one large verified GEMV and decode per format through the
# benchmark, then the timed table (GB/s against the device-to-device copy
# peak measured just before and after each case). Nothing is built there.
#
# HOW TO RUN IT (a session with a device; 15 minutes of device time in all):
#   1. Here, in the repository root of the checkout the session runs from
#      (where nvcc is; no GPU needed):
#          scripts/gpu-check.sh --prepare
#      builds t_device and ninfer-bench with -lineinfo and json-c, zstd,
#      OpenSSL and libstdc++ linked statically (the device image may lack
#      them; libc and libm are the only shared libraries, their newest symbol
#      GLIBC_2.35 when built on this Debian 12), and copies them into
#      build/gpu-carry/ (31 MiB; with the tree, under the tool's 64). About
#      1.5 minutes on two cores.
#   2. The device tool, one call:
#          run(command="scripts/gpu-check.sh", carry=["build/gpu-carry"],
#              timeout_s=480)
#      The work stops at a deadline of 330 s (GPU_CHECK_BUDGET), leaving the
#      rest of the 480 for the last jobs' caps and the table; every result is
#      written under $OUT as it finishes, so a killed run still returns what
#      it had. Then give_back() unless you rerun at once.
#      If the binaries do not start there (a library or glibc version the
#      image lacks), the run ends within seconds, exit 2, its device line
#      saying why: time is left for a second call.
#   3. The reply's output_tail ends with the verdict table; files_at holds
#      (at most 8 files, the tool's limit): summary.txt (the tables),
#      gpu-check.log (everything, in order), t_device.tap, sanitizer.log,
#      bench.csv (every row, by phase), bench.log (the benchmark's stderr:
#      SM clock, copies, warm-up), env.txt (probe, nvidia-smi, binaries).
#
# Here, without a GPU: scripts/gpu-check.sh --dry-run runs the whole flow on
# stand-ins (tests/gpu/fake-*: t_device, ninfer-bench, compute-sanitizer,
# nvidia-smi; their failures planted by FAKE_* variables) into
# build/gpu-check-dry (or $OUT); tests/gpu-check.bats checks its verdicts.
#
# Phases, in the order of what matters most if time runs out:
#   1. probe: t_device --probe (the device, its copy peak, its SM clock;
#      nvidia-smi only logged, its absence a warning); the binaries must
#      start (a missing shared library is said, exit 2);
#   2. t_device --only FORMAT per format and misc, GPU_CHECK_JOBS at a time
#      (default 8; 1 when the device is in an exclusive compute mode), each
#      capped (GPU_CHECK_CAP_TDEV, 120 s): verdicts load, decode, gemv, large;
#   3. per format ninfer-bench --device cuda --op gemv and --op decode at
#      14336x5120, --iters 10, in parallel too (timing ignored): the check
#      column is the "bench" verdict;
#   4. compute-sanitizer --tool memcheck on t_device --quick per format
#      group (five), all at once, each capped (GPU_CHECK_CAP_SAN, 120 s) and
#      the phase done by 60% of the deadline (INCONCLUSIVE on timeout, or
#      where it refuses the device);
#   5. the timed table, one case at a time (GPU_CHECK_CAP_BENCH, 60 s each):
#      every format, gemv 14336x5120, decode 14336x5120, gemv 4096x14336,
#      --iters 100; then plan variants (NF_CUDA_R/W) while time is left.
# A failed run prints as FAIL or CRASH with its reason, never as a row.
#
# Exit status: 0 every verdict PASS (a sanitizer INCONCLUSIVE is said, not
# failed); 1 a FAIL, CRASH or TIMEOUT anywhere; 2 nothing could run (no
# binaries, they do not start, no GPU); 3 no failure, but something was not
# run for the deadline.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 2
. scripts/gpu-check-lib.sh

# ---- --prepare: build what travels ------------------------------------------

if [ "${1:-}" = "--prepare" ]; then
    nvcc=$(command -v nvcc) || { echo "gpu-check: --prepare needs nvcc" >&2; exit 2; }
    cuda=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
    make -j"$(nproc)" BUILD=build/gpu BIN=build/gpu/bin CFLAGS="-O2" NVCCFLAGS=-lineinfo \
        LDFLAGS="-static-libgcc" \
        NF_LIBS="-Wl,-Bstatic -ljson-c -lzstd -lcrypto -lstdc++ -Wl,-Bdynamic -lpthread -lm -ldl \
-L$cuda/lib64 -L$cuda/targets/x86_64-linux/lib -lcudart_static -lrt" \
        build/gpu/bin/ninfer-bench build/gpu/tests/gpu/t_device || exit 1
    rm -rf build/gpu-carry
    mkdir -p build/gpu-carry || exit 1
    cp build/gpu/bin/ninfer-bench build/gpu/tests/gpu/t_device build/gpu-carry/ || exit 1
    for b in build/gpu-carry/*; do
        glibc=$(objdump -T "$b" 2> /dev/null | grep -o 'GLIBC_[0-9.]*' | sort -t. -k2 -n -u | tail -n1)
        echo "$b: $(du -k "$b" | cut -f1) KiB; shared: $(ldd "$b" | awk '/=>/ {print $1}' | tr '\n' ' ')newest glibc symbol: ${glibc:-?}"
        case "$glibc" in
            GLIBC_2.3[6-9] | GLIBC_2.[4-9]*) echo "gpu-check: warning: $b needs $glibc (the device image may hold an older glibc)" >&2 ;;
        esac
    done
    echo "carry: $(du -sh build/gpu-carry | cut -f1)"
    echo 'then: run(command="scripts/gpu-check.sh", carry=["build/gpu-carry"], timeout_s=480)'
    exit 0
fi

# ---- options ------------------------------------------------------------------

dry=0
if [ "${1:-}" = "--dry-run" ]; then
    dry=1
    shift
    fake=$here/tests/gpu
    : "${NF_GPU_TEST:=$fake/fake-t_device}" "${NF_GPU_BENCH:=$fake/fake-ninfer-bench}"
    : "${NF_GPU_SANITIZER:=$fake/fake-compute-sanitizer}" "${NF_GPU_SMI:=$fake/fake-nvidia-smi}"
    : "${OUT:=build/gpu-check-dry}"
fi
if [ $# -gt 0 ]; then
    echo "usage: scripts/gpu-check.sh [--prepare | --dry-run]" >&2
    exit 2
fi

OUT=${OUT:-build/gpu-check-out}
mkdir -p "$OUT" || exit 2
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 2
log=$OUT/gpu-check.log sum=$OUT/summary.txt tap=$OUT/t_device.tap san=$OUT/sanitizer.log
csv=$OUT/bench.csv blog=$OUT/bench.log env=$OUT/env.txt
: > "$log"; : > "$tap"; : > "$san"; : > "$blog"; : > "$env"
budget=${GPU_CHECK_BUDGET:-330}
jobs_max=${GPU_CHECK_JOBS:-8}
cap_tdev=${GPU_CHECK_CAP_TDEV:-120}
cap_san=${GPU_CHECK_CAP_SAN:-120}
cap_bench=${GPU_CHECK_CAP_BENCH:-60}
t0=$(date +%s)
deadline=$((t0 + budget))
# the tools, where the CUDA image may keep them off PATH
findtool() { # NAME PATH... — the first that runs
    local p
    for p in "$@"; do
        if command -v "$p" > /dev/null 2>&1; then command -v "$p"; return 0; fi
    done
    echo "$1"
}
smi=${NF_GPU_SMI:-$(findtool nvidia-smi /usr/local/nvidia/bin/nvidia-smi /usr/bin/nvidia-smi)}
# shellcheck disable=SC2046 # (paths without blanks)
sanitizer=${NF_GPU_SANITIZER:-$(findtool compute-sanitizer /usr/local/cuda/bin/compute-sanitizer \
    /usr/local/cuda/compute-sanitizer/compute-sanitizer $(ls -d /usr/local/cuda-*/bin/compute-sanitizer \
    /opt/nvidia/*/compute-sanitizer 2> /dev/null))}

now() { date +%s; }
left() { echo $((deadline - $(now))); }
note() { echo "$(($(now) - t0))s $*" >> "$log"; }
# the cap of a job started now: its own, cut at the deadline (or at the
# phase's own end, $2, a time); 0 = too late
cap_of() {
    local l
    l=$(left)
    [ -n "${2:-}" ] && [ $(($2 - $(now))) -lt "$l" ] && l=$(($2 - $(now)))
    if [ "$l" -lt 5 ]; then echo 0; elif [ "$l" -lt "$1" ]; then echo "$l"; else echo "$1"; fi
}

pick() { # the first executable file among the arguments, up to a "/"
    local f
    for f in "$@"; do
        [ "$f" = / ] && return 1
        [ -n "$f" ] && [ -f "$f" ] && [ -x "$f" ] && { echo "$f"; return 0; }
    done
    return 1
}
# NF_GPU_TEST / NF_GPU_BENCH, when set, are the only candidates
tdev=$(pick "${NF_GPU_TEST:-}" ${NF_GPU_TEST:+/} build/gpu-carry/t_device build/tests/gpu/t_device)
bench=$(pick "${NF_GPU_BENCH:-}" ${NF_GPU_BENCH:+/} build/gpu-carry/ninfer-bench bin/ninfer-bench)

# ---- the verdicts and the tables, rewritten after every job -----------------------
# $W/v: FORMAT<TAB>COLUMN<TAB>VERDICT<TAB>NOTE (the last line of a pair wins)
# $W/rows: the timed table's lines, as they finish
verdict() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" >> "$W/v"; }
: > "$W/v"
: > "$W/rows"
head_line="# gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)$([ $dry = 1 ] && echo ' (dry run: stand-ins, no GPU)')"
dev_line="# device: (not probed yet)"
state="running"

write_summary() {
    {
        echo "$head_line"
        echo "$dev_line"
        echo "# $(($(now) - t0)) s of a ${budget} s deadline; $state"
        if [ -s "$W/rows" ]; then
            echo
            echo "## timed: GB/s = encoded bytes / p10 time; ratio = GB/s / max(D2D copy peak just before, just after); aim 0.85 (KERNELS.md)"
            printf '%-6s %-20s %-11s %9s %9s %8s %8s %8s %6s %1s %-5s %s\n' op format shape p10_us med_us \
                GB/s peak_b peak_a ratio u check note
            cat "$W/rows"
        fi
        echo
        echo "## verdicts per format (bench: the large verified GEMV and decode of the benchmark; large: t_device's)"
        # shellcheck disable=SC2086
        gc_table "$W/v" "$state" $formats misc
    } > "$W/summary.tmp" && cat "$W/summary.tmp" > "$sum"
}

status_of_run() {
    if awk -F'\t' '{ print $3 }' "$W/v" | grep -qxE 'CRASH|FAIL|TIMEOUT'; then
        echo 1
    elif awk -F'\t' '{ print $3 }' "$W/v" | grep -qx NOTRUN; then
        echo 3
    else
        echo 0
    fi
}

finish() {
    state=${1:-done}
    write_summary
    cat "$sum" >> "$log"
    echo "=== summary ($sum) ==="
    cat "$sum"
    rm -rf "$W"
    exit "$2"
}

interrupted() {
    trap '' TERM INT HUP
    note "interrupted by a signal"
    local p
    for p in "$W"/*.pid; do
        [ -e "$p" ] && kill -TERM "$(cat "$p")" 2> /dev/null
    done
    # each job's timeout passes the signal on and waits for its command, and
    # the job's shell for the timeout: once they end nothing is left behind
    for p in "${job_pid[@]}"; do
        wait "$p" 2> /dev/null
    done
    finish "interrupted after $(($(now) - t0)) s" "$(status_of_run)"
}
trap interrupted TERM INT HUP

# ---- parallel jobs ----------------------------------------------------------------
# job_start ID CAP CMD...: CMD under timeout CAP in the background, stdout and
# stderr to $W/ID.out and $W/ID.err, its status to $W/ID.rc at the end;
# job_reap FN: for every finished job not seen yet, FN ID RC.
declare -A job_pid=()
job_start() {
    local id=$1 cap=$2
    shift 2
    note "start $id (cap $cap s): $*"
    (
        # timeout's pid for interrupted(): timeout passes a TERM on to CMD.
        # (The shell's own "Segmentation fault" line goes nowhere: the
        # verdict says CRASH.)
        {
            timeout -k 5 "$cap" "$@" > "$W/$id.out" 2> "$W/$id.err" < /dev/null &
            echo $! > "$W/$id.pid"
            wait $!
            rc=$?
            rm -f "$W/$id.pid"
        } 2> /dev/null
        echo "$rc" > "$W/$id.rc.tmp" && mv "$W/$id.rc.tmp" "$W/$id.rc"
    ) 2> /dev/null &
    job_pid[$id]=$!
}
job_reap() {
    local id rc
    for id in "${!job_pid[@]}"; do
        [ -e "$W/$id.rc" ] || continue
        wait "${job_pid[$id]}" 2> /dev/null
        unset "job_pid[$id]"
        rc=$(cat "$W/$id.rc")
        note "done $id (exit $rc)"
        "$1" "$id" "$rc"
    done
}
# run_queue MAX FN SPEC...: each SPEC "ID CAP CMD..." as a job, MAX at a time,
# FN ID RC on each as it ends; SKIPFN ID for those the deadline leaves out
run_queue() {
    local max=$1 fn=$2 skipfn=$3 spec id capd c
    shift 3
    for spec in "$@"; do
        read -r id capd _ <<< "$spec"
        c=$(cap_of "$capd" "${phase_end:-}")
        if [ "$c" -eq 0 ]; then
            "$skipfn" "$id"
            continue
        fi
        while [ "${#job_pid[@]}" -ge "$max" ]; do
            wait -n 2> /dev/null
            job_reap "$fn"
        done
        # shellcheck disable=SC2086
        job_start "$id" "$c" ${spec#* * }
    done
    while [ "${#job_pid[@]}" -gt 0 ]; do
        wait -n 2> /dev/null
        job_reap "$fn"
    done
}

# ---- 1. the machine and the binaries ------------------------------------------------

formats=$GC_FORMATS
write_summary
if [ -z "$tdev" ] || [ -z "$bench" ]; then
    echo "FAIL: t_device or ninfer-bench missing: run scripts/gpu-check.sh --prepare where nvcc is, and carry build/gpu-carry" >> "$env"
    dev_line="# device: none checked: t_device or ninfer-bench missing (scripts/gpu-check.sh --prepare, carry build/gpu-carry)"
    finish "no device" 2
fi
{
    echo "$head_line"
    uname -a
    for b in "$tdev" "$bench"; do
        echo "binary $b: $(sha256sum "$b" 2> /dev/null | cut -c1-16) $(ls -l "$b" 2> /dev/null | awk '{print $5}') bytes"
        ldd "$b" 2>&1 | sed 's/^/    /'
    done
} >> "$env"
if command -v "$smi" > /dev/null 2>&1; then
    timeout 20 "$smi" --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,pstate,compute_mode \
        --format=csv >> "$env" 2>&1
else
    echo "warning: $smi not found: the device is probed with t_device alone" >> "$env"
    note "warning: no nvidia-smi"
fi
{ timeout -k 5 60 "$tdev" --probe > "$W/probe.out" 2>&1 < /dev/null; rc=$?; } 2> /dev/null
cat "$W/probe.out" >> "$env"
note "probe exit $rc"
if [ "$rc" -eq 126 ] || [ "$rc" -eq 127 ] || grep -q 'error while loading shared libraries\|GLIBC_[0-9.]* not found\|cannot execute' "$W/probe.out"; then
    dev_line="# device: the binaries do not start here: $(grep -m1 -E 'error|not found|cannot' "$W/probe.out" | cut -c1-200)"
    finish "no device" 2
fi
if [ "$rc" -eq 4 ]; then
    dev_line="# device: none: $(sed -n 's/^# probe: unsupported: //p' "$W/probe.out" | head -n1)"
    finish "no device" 2
fi
pv=$(gc_tap_verdict "$W/probe.out" "$rc" probe)
if [ "$pv" != PASS ]; then
    pn=$(gc_tap_note "$W/probe.out")
    [ -z "$pn" ] && pn="exit $rc$([ "$rc" -gt 128 ] && echo ", signal $((rc - 128))") after: $(tail -n1 "$W/probe.out" | cut -c1-160)"
    verdict misc load "$pv" "the probe: $pn"
    dev_line="# device: the probe failed ($pv): $pn"
    if [ "$pv" = CRASH ] || [ "$pv" = TIMEOUT ]; then
        finish "probe $pv" 1
    fi
fi
pf() { gc_probe_field "$W/probe.out" "$1"; }
dev_line="# device: $(pf name), cc $(pf cc), $(pf sms) SMs, $(($(pf l2_bytes) >> 20)) MiB L2, $(($(pf mem_bytes) >> 30)) GiB; driver CUDA $(pf driver), runtime $(pf runtime); copy peak $(pf peak_gbps) GB/s, SM clock $(pf sm_mhz) MHz (rated $(pf rated_mhz))"
case "$(pf compute_mode)" in
    1 | 3) jobs_max=1; note "exclusive compute mode: one process at a time" ;;
esac
listed=$(timeout 30 "$tdev" --list 2> /dev/null | tr '\n' ' ')
[ -n "$listed" ] && formats=$listed
note "formats: $formats"
write_summary

# ---- 2. t_device per format --------------------------------------------------------

tdev_done() {
    local id=$1 rc=$2 f=${1#t.} k v n
    { echo "## t_device --only $f (exit $rc)"; cat "$W/$id.out" "$W/$id.err"; } >> "$tap"
    for k in load decode gemv large; do
        [ "$f" = misc ] && [ "$k" != load ] && continue
        v=$(gc_tap_verdict "$W/$id.out" "$rc" "$k")
        [ "$f" = misc ] && v=$(gc_worst "$v" "$(gc_tap_verdict "$W/$id.out" "$rc" misc)")
        n=""
        if gc_is_bad "$v"; then
            n=$(gc_tap_note "$W/$id.out")
            [ "$rc" -ne 0 ] && n="${n:+$n; }exit $rc$([ "$rc" -gt 128 ] && echo " (signal $((rc - 128)))")"
        fi
        verdict "$f" "$k" "$v" "$n"
    done
    write_summary
}
tdev_late() {
    local f=${1#t.} k
    for k in load decode gemv large; do verdict "$f" "$k" NOTRUN "the deadline had passed"; done
}
specs=()
for f in $formats misc; do specs+=("t.$f $cap_tdev $tdev --only $f"); done
run_queue "$jobs_max" tdev_done tdev_late "${specs[@]}"

# ---- 3. one large verified GEMV and decode per format -----------------------------------

big=14336x5120
: > "$csv"
csv_head=""
bench_store() { # PHASE FILE: the data rows of FILE into bench.csv, the header once
    local first
    first=$(head -n1 "$2")
    case "$first" in device,*) ;; *) return ;; esac
    if [ -z "$csv_head" ]; then
        csv_head=$first
        echo "phase,$first" >> "$csv"
    fi
    tail -n +2 "$2" | sed "s/^/$1,/" >> "$csv"
}
big_done() {
    local id=$1 rc=$2 rest=${1#b.} f op v
    f=${rest%.*} op=${rest##*.}
    bench_store large "$W/$id.out"
    { echo "## large $op $f $big (exit $rc)"; cat "$W/$id.err"; } >> "$blog"
    v=$(gc_bench_verdict "$W/$id.out" "$W/$id.err" "$rc")
    verdict "$f" "bench" "$v" "$(gc_is_bad "$v" && echo "$op $big: $(gc_bench_note "$W/$id.err" "$rc")")"
    write_summary
}
big_late() {
    local rest=${1#b.}
    verdict "${rest%.*}" bench NOTRUN "the deadline had passed"
}
specs=()
for f in $formats; do
    for op in gemv decode; do
        specs+=("b.$f.$op $cap_bench $bench --device cuda --op $op --format $f --shape $big --iters 10 --csv")
    done
done
run_queue "$jobs_max" big_done big_late "${specs[@]}"

# ---- 4. compute-sanitizer memcheck -------------------------------------------------------

declare -A groups=(
    [rowsplit]="q2_g64_fp16,q4_g64_fp16,q5_g64_fp16,q6_g64_fp16,q8_g32_fp16,t2_g128_fp16"
    [dense]="bf16,fp32,int32,fp8_e4m3fn_row_bf16,nvfp4,misc"
    [gguf1]="gguf_f16,gguf_q8_0,gguf_q4_0,gguf_q4_1,gguf_q5_0,gguf_q5_1,gguf_iq4_nl,gguf_mxfp4"
    [gguf2]="gguf_q2_k,gguf_q3_k,gguf_q4_k,gguf_q5_k,gguf_q6_k,gguf_iq4_xs")
# formats t_device lists that no group names go into one more
extra="" named="${groups[*]}"
named=",${named// /,},"
for f in $formats; do
    case "$named" in *",$f,"*) ;; *) extra="$extra,$f" ;; esac
done
[ -n "$extra" ] && groups[other]=${extra#,}
san_done() {
    local id=$1 rc=$2 g=${1#s.} f v n
    { echo "## compute-sanitizer --tool memcheck t_device --quick --only ${groups[$g]} (exit $rc)"
      cat "$W/$id.out" "$W/$id.err"; } >> "$san"
    cat "$W/$id.err" >> "$W/$id.out"
    while read -r f v n; do
        verdict "$f" sanitizer "$v" "$([ "$v" != PASS ] && echo "$n")"
    done < <(gc_san_verdicts "$W/$id.out" "$rc" ${groups[$g]//,/ })
    write_summary
}
san_late() {
    local g=${1#s.} f
    for f in ${groups[$g]//,/ }; do verdict "$f" sanitizer INCONCLUSIVE "not run: the deadline had passed"; done
}
if command -v "$sanitizer" > /dev/null 2>&1; then
    specs=()
    for g in rowsplit dense gguf1 gguf2 other; do
        [ -n "${groups[$g]:-}" ] &&
            specs+=("s.$g $cap_san $sanitizer --tool memcheck --error-exitcode 99 --print-limit 10 $tdev --quick --only ${groups[$g]}")
    done
    # every group at once (the instrumentation is CPU work), and done by
    # 60% of the deadline: the timed table keeps the rest
    phase_end=$((t0 + budget * 6 / 10))
    run_queue $((jobs_max < 5 ? jobs_max : 5)) san_done san_late "${specs[@]}"
    phase_end=
else
    note "no compute-sanitizer"
    for f in $formats misc; do verdict "$f" sanitizer INCONCLUSIVE "$sanitizer not found"; done
    write_summary
fi

# ---- 5. the timed table --------------------------------------------------------------------

table_row() { # OP FORMAT SHAPE ID RC [NOTE]: the row, or what failed
    local op=$1 f=$2 s=$3 id=$4 rc=$5 extra=${6:-} v row
    bench_store table "$W/$id.out"
    { echo "## table $op $f $s $extra (exit $rc)"; cat "$W/$id.err"; } >> "$blog"
    v=$(gc_bench_verdict "$W/$id.out" "$W/$id.err" "$rc")
    row=$(gc_csv_cols "$W/$id.out" p10_us med_us gbps peak_before_gbps peak_after_gbps ratio unstable check 2> /dev/null | head -n1)
    if [ "$v" = PASS ] && [ -n "$row" ]; then
        local mhz
        mhz=$(sed -n 's/.*: device: sm_mhz=\([0-9]*\).*/\1/p' "$W/$id.err" | head -n1)
        IFS=$'\t' read -r p10 med g pb pa r u ck <<< "$row"
        printf '%-6s %-20s %-11s %9.1f %9.1f %8.1f %8.1f %8.1f %6.3f %1s %-5s %s\n' "$op" "$f" "$s" \
            "$p10" "$med" "$g" "$pb" "$pa" "$r" "$u" "$ck" \
            "$(awk -v r="$r" 'BEGIN { print (r >= 0.85 ? "meets 0.85" : "below 0.85") }')${mhz:+ SM ${mhz} MHz}${extra:+ $extra}" >> "$W/rows"
    else
        printf '%-6s %-20s %-11s %s\n' "$op" "$f" "$s" "$v: $(gc_bench_note "$W/$id.err" "$rc")${extra:+ ($extra)}" >> "$W/rows"
        gc_is_bad "$v" && verdict "$f" bench "$v" "timed $op $s: $(gc_bench_note "$W/$id.err" "$rc")"
    fi
    write_summary
}
one_case() { # OP FORMAT SHAPE [ENV...]
    local op=$1 f=$2 s=$3 id c rc
    shift 3
    c=$(cap_of "$cap_bench")
    if [ "$c" -eq 0 ]; then
        printf '%-6s %-20s %-11s %s\n' "$op" "$f" "$s" "NOTRUN: the deadline had passed" >> "$W/rows"
        return
    fi
    id=c.$op.$f.$s
    note "case $op $f $s $*"
    {
        env "$@" timeout -k 5 "$c" "$bench" --device cuda --op "$op" --format "$f" --shape "$s" \
            --iters 100 --csv > "$W/$id.out" 2> "$W/$id.err" < /dev/null &
        echo $! > "$W/case.pid"
        wait $!
        rc=$?
        rm -f "$W/case.pid"
    } 2> /dev/null
    table_row "$op" "$f" "$s" "$id" "$rc" "$*"
}
[ -n "$(command -v "$smi")" ] && timeout 20 "$smi" --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,pstate \
    --format=csv,noheader 2>&1 | sed 's/^/before the table: /' >> "$env"
for f in $formats; do one_case gemv "$f" 14336x5120; done
for f in $formats; do one_case decode "$f" 14336x5120; done
for f in $formats; do one_case gemv "$f" 4096x14336; done
[ -n "$(command -v "$smi")" ] && timeout 20 "$smi" --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,pstate \
    --format=csv,noheader 2>&1 | sed 's/^/after the table: /' >> "$env"
# plan variants for tuning, while time is left (the default plan is above)
while read -r f v; do
    [ "$(left)" -lt 30 ] && break
    # shellcheck disable=SC2086
    one_case gemv "$f" 14336x5120 $v
done <<'EOF'
q4_g64_fp16 NF_CUDA_R=4
q4_g64_fp16 NF_CUDA_R=1
q6_g64_fp16 NF_CUDA_R=4
nvfp4 NF_CUDA_R=4
bf16 NF_CUDA_W=1
bf16 NF_CUDA_W=8
EOF

finish "done" "$(status_of_run)"
