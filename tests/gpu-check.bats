#!/usr/bin/env bats
# gpu-check.bats — scripts/gpu-check.sh without a GPU (issue 20): its whole
# flow on stand-ins (--dry-run: tests/gpu/fake-* for t_device, ninfer-bench,
# compute-sanitizer and nvidia-smi, faults planted by FAKE_* variables), its
# parser and verdicts (scripts/gpu-check-lib.sh, fed failed, skipped and
# crashed runs), and the real binaries of this build, which find no device.
# Nothing here depends on timing: a stand-in that hangs blocks until killed
# (its cap is 1 s), and the interrupted run is signalled once the log says
# the hanging job started.

load helper

GC="$REPO/scripts/gpu-check.sh"

# dry [VAR=VALUE...] — the dry run into ./out, $output its stdout.
dry() {
    run env OUT="$BATS_TEST_TMPDIR/out" "$@" "$GC" --dry-run
}

# cell FORMAT COLUMN — a verdict of out/summary.txt's table.
cell() {
    awk -v f="$1" -v c="$2" '
        /^## verdicts/ { t = 1; next }
        t && $1 == "format" { for (i = 1; i <= NF; i++) col[$i] = i; next }
        t && $1 == f { print $col[c]; exit }' out/summary.txt
}

@test "--dry-run: the whole flow, every format PASS (exit 0); one t_device per format; at most 8 files back" {
    dry FAKE_TDEV_LOG="$BATS_TEST_TMPDIR/starts"
    [ "$status" -eq 0 ]
    [ "$(tail -n1 out/summary.txt)" = "VERDICT: PASS (26)" ]
    [ "${lines[-1]}" = "VERDICT: PASS (26)" ]
    local f c
    for f in $(tests_formats) misc; do
        for c in load sanitizer verdict; do
            [ "$(cell "$f" "$c")" = PASS ] || { echo "$f $c: $(cell "$f" "$c")"; return 1; }
        done
    done
    for f in $(tests_formats); do
        for c in decode gemv large bench; do [ "$(cell "$f" "$c")" = PASS ]; done
    done
    # the probe, the list, one process per format and misc, five sanitizer groups
    [ "$(grep -c '^--probe$' starts)" -eq 1 ]
    [ "$(grep -c '^--only [a-z0-9_]*$' starts)" -eq 26 ]
    [ "$(grep -c '^--quick --only ' starts)" -eq 4 ]
    [ "$(grep -c '^## t_device --only ' out/t_device.tap)" -eq 26 ]
    # bench.csv: the header once, 50 large rows, 75 timed rows and 6 variants
    [ "$(head -n1 out/bench.csv)" = "phase,device,op,activation,format,layout,object,rows,cols,threads,bytes,iters,min_us,p10_us,med_us,p90_us,gbps,input_mbps,peak_before_gbps,peak_after_gbps,ratio,unstable,max_err,bound,check" ]
    [ "$(grep -c '^large,' out/bench.csv)" -eq 50 ]
    [ "$(grep -c '^table,' out/bench.csv)" -eq 81 ]
    grep -q '^gemv   q4_g64_fp16          14336x5120        9.1       9.4   4033.0   4310.2   4322.8  0.933 0 ok    meets 0.85 SM 1980 MHz$' out/summary.txt
    grep -q '^# device: Fake H200 (stand-in), cc 9.0, 132 SMs, 60 MiB L2, 140 GiB; driver CUDA 13.0, runtime 13.0; copy peak 4310.5 GB/s, SM clock 1980 MHz (rated 1980)$' out/summary.txt
    # what the device tool brings back: at most 8 files, plain names, one folder
    [ "$(find out -type f | wc -l)" -le 8 ]
    [ -z "$(find out -mindepth 1 ! -name '*[!A-Za-z0-9._-]*' -prune -o -print)" ]
    [ -z "$(find out -mindepth 1 -type d)" ]
}

# tests_formats — the 25 formats of the stand-in's --list
tests_formats() {
    "$REPO/tests/gpu/fake-t_device" --list
}

@test "planted faults: FAIL, CRASH (a signal, a CUDA error), SKIP; failed benchmark runs print FAIL or CRASH, never a row" {
    dry FAKE_FORMATS="q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 bf16 fp8_e4m3fn_row_bf16 nvfp4 gguf_q4_k gguf_q8_0 int32" \
        FAKE_TDEV="q5_g64_fp16=fail-decode q6_g64_fp16=crash fp8_e4m3fn_row_bf16=cuda int32=skip bf16=fail-large" \
        FAKE_BENCH="gguf_q4_k:gemv=checkfail nvfp4:decode=crash gguf_q8_0:gemv=cuda bf16:decode=unsupported" \
        FAKE_SAN=error=q5_g64_fp16
    [ "$status" -eq 1 ]
    [ "$(cell q4_g64_fp16 verdict)" = PASS ]
    [ "$(cell q5_g64_fp16 decode)" = FAIL ]
    [ "$(cell q5_g64_fp16 gemv)" = PASS ]
    [ "$(cell q5_g64_fp16 load)" = PASS ]
    [ "$(cell q6_g64_fp16 decode)" = CRASH ]
    [ "$(cell q6_g64_fp16 verdict)" = CRASH ]
    [ "$(cell fp8_e4m3fn_row_bf16 gemv)" = CRASH ]
    [ "$(cell fp8_e4m3fn_row_bf16 decode)" = PASS ]
    [ "$(cell int32 decode)" = SKIP ]
    [ "$(cell int32 large)" = - ]
    [ "$(cell bf16 large)" = FAIL ]
    [ "$(cell bf16 bench)" = FAIL ]
    [ "$(cell gguf_q4_k bench)" = FAIL ]
    [ "$(cell nvfp4 bench)" = CRASH ]
    [ "$(cell gguf_q8_0 bench)" = CRASH ]
    # memcheck: the error in q5 (q4 finished before it; q6, after, proves nothing)
    [ "$(cell q5_g64_fp16 sanitizer)" = FAIL ]
    [ "$(cell q4_g64_fp16 sanitizer)" = PASS ]
    [ "$(cell q6_g64_fp16 sanitizer)" = INCONCLUSIVE ]
    grep -qx 'q5_g64_fp16 sanitizer FAIL: 1 errors: Invalid __global__ read of size 16 bytes' out/summary.txt
    grep -qx 'q6_g64_fp16 decode CRASH: exit 139 (signal 11)' out/summary.txt
    grep -q '^fp8_e4m3fn_row_bf16 gemv CRASH: \[gemv\] .* -- io: cuda: gemv: an illegal memory access was encountered; exit 1$' out/summary.txt
    # the timed table: a failed case is its verdict and reason, not figures
    grep -qx 'gemv   gguf_q4_k            14336x5120  FAIL: exit 1: ninfer-bench: 14336x5120: codes: gemv on the device: row 14335: error 0.37 over its bound 2.1e-05 (256 rows checked)' out/summary.txt
    grep -qx 'decode nvfp4                14336x5120  CRASH: exit 139: killed by signal 11' out/summary.txt
    grep -qx 'gemv   gguf_q8_0            4096x14336  CRASH: exit 3: ninfer-bench: 4096x14336: io: cuda: gemv: an illegal memory access was encountered' out/summary.txt
    grep -qx 'decode bf16                 14336x5120  FAIL: exit 4: ninfer-bench: 14336x5120: unsupported: no CUDA kernel for bf16/x' out/summary.txt
    # bench.csv holds the rows there were: the FAIL row of the check, none of the others
    [ "$(grep -c '^table,cuda,gemv,a16,gguf_q4_k,.*,FAIL$' out/bench.csv)" -eq 2 ]
    [ "$(grep -c '^table,cuda,decode,,nvfp4,' out/bench.csv)" -eq 0 ]
    [ "$(grep -c ',gguf_q8_0,' out/bench.csv)" -eq 2 ] # its decode rows only
    [[ "${lines[-1]}" == "VERDICT: FAIL: 7 of 10 ("*")" ]]
    [[ "${lines[-1]}" == *" q6_g64_fp16:CRASH "* ]]
}

@test "columns are read by name: the same verdicts and figures when ninfer-bench orders them otherwise" {
    dry FAKE_FORMATS="q4_g64_fp16 gguf_q4_k" FAKE_BENCH="gguf_q4_k:gemv=checkfail" FAKE_BENCH_SHUFFLE=1
    [ "$status" -eq 1 ]
    grep -q '^gemv   q4_g64_fp16          14336x5120        9.1       9.4   4033.0   4310.2   4322.8  0.933 0 ok    meets 0.85' out/summary.txt
    [ "$(cell gguf_q4_k bench)" = FAIL ]
    [ "$(cell q4_g64_fp16 bench)" = PASS ]
}

@test "TIMEOUT: a t_device that hangs is cut at its cap; a sanitizer that hangs is INCONCLUSIVE" {
    dry FAKE_FORMATS="q4_g64_fp16 bf16" FAKE_TDEV="q4_g64_fp16=hang" FAKE_SAN=hang \
        GPU_CHECK_CAP_TDEV=3 GPU_CHECK_CAP_SAN=3 # the jobs that do not hang need less than 3 s
    [ "$status" -eq 1 ]
    [ "$(cell q4_g64_fp16 decode)" = TIMEOUT ]
    [ "$(cell q4_g64_fp16 verdict)" = TIMEOUT ]
    [ "$(cell bf16 decode)" = PASS ]
    [ "$(cell bf16 sanitizer)" = INCONCLUSIVE ]
    [ "$(cell bf16 verdict)" = INCONCLUSIVE ] # said, not failed
    grep -qx 'bf16 sanitizer INCONCLUSIVE: timed out' out/summary.txt
}

@test "the deadline: what it leaves out is NOTRUN, the run incomplete (exit 3)" {
    dry FAKE_FORMATS="q4_g64_fp16 bf16" GPU_CHECK_BUDGET=4
    [ "$status" -eq 3 ]
    [ "$(cell q4_g64_fp16 decode)" = NOTRUN ]
    [ "$(cell q4_g64_fp16 bench)" = NOTRUN ]
    [ "$(cell q4_g64_fp16 sanitizer)" = INCONCLUSIVE ]
    grep -qx 'gemv   q4_g64_fp16          14336x5120  NOTRUN: the deadline had passed' out/summary.txt
    [ "${lines[-1]}" = "VERDICT: INCOMPLETE: 3 of 3 not run for the deadline" ]
}

@test "no device, binaries that do not start, no binaries: exit 2, said in the summary" {
    dry FAKE_PROBE=nodevice
    [ "$status" -eq 2 ]
    [ "${lines[-1]}" = "VERDICT: NOT RUN: no device, or binaries that cannot run here (the device line says which)" ]
    grep -qx '# device: none: no CUDA device (no CUDA-capable device is detected)' out/summary.txt
    dry FAKE_PROBE=noload
    [ "$status" -eq 2 ]
    grep -q '^# device: the binaries do not start here: t_device: error while loading shared libraries: libjson-c.so.5' out/summary.txt
    dry NF_GPU_TEST=/nonexistent/t_device
    [ "$status" -eq 2 ]
    grep -q 'scripts/gpu-check.sh --prepare' out/summary.txt
    dry FAKE_PROBE=crash
    [ "$status" -eq 1 ]
    [ "$(cell misc load)" = CRASH ]
    grep -qx '# device: the probe failed (CRASH): exit 139, signal 11 after: ok 1 - \[probe\] device Fake H200' out/summary.txt
    grep -qx 'misc load CRASH: the probe: exit 139, signal 11 after: ok 1 - \[probe\] device Fake H200' out/summary.txt
    [ "${lines[-1]}" = "VERDICT: INCOMPLETE (probe CRASH); so far FAIL: misc:CRASH" ]
}

@test "this build's own t_device and ninfer-bench find no GPU here: exit 2 with the reason" {
    local t="$NF_TOOLS/../tests/gpu/t_device"
    [ -x "$t" ] || { echo "missing $t" >&2; return 1; }
    # a CUDA build where a GPU is: the script then runs for real (gpu-check.sh)
    ! "$t" --probe > /dev/null 2>&1 || skip "t_device finds a GPU here: this case is for machines without one"
    run env OUT="$BATS_TEST_TMPDIR/out" NF_GPU_TEST="$t" NF_GPU_BENCH="$NF_BIN/ninfer-bench" \
        NF_GPU_SMI=/nonexistent/nvidia-smi "$GC"
    [ "$status" -eq 2 ]
    grep -Eq '^# device: none: (built without CUDA|no NVIDIA driver|no CUDA device|the NVIDIA driver supports CUDA)' out/summary.txt
    grep -qx 'warning: /nonexistent/nvidia-smi not found: the device is probed with t_device alone' out/env.txt
    # its --list is the fallback list of the script, and ninfer-bench's formats
    run -0 "$t" --list
    . "$REPO/scripts/gpu-check-lib.sh"
    [ "$(echo $output)" = "$(echo $GC_FORMATS)" ]
    # (the list in --help wraps: "Formats:" and the indented lines after it)
    [ "$(echo $GC_FORMATS)" = "$(echo $(ninfer-bench --help | sed -n '/^Formats:/,$p' | sed 's/^Formats://'))" ]
}

@test "an exclusive compute mode runs one process at a time; no nvidia-smi is a warning" {
    dry FAKE_FORMATS="q4_g64_fp16" FAKE_PROBE=exclusive NF_GPU_SMI=/nonexistent/nvidia-smi
    [ "$status" -eq 0 ]
    grep -q 'exclusive compute mode: one process at a time' out/gpu-check.log
    grep -q '^warning: /nonexistent/nvidia-smi not found' out/env.txt
}

@test "a run interrupted by TERM leaves its summary: what finished, INCOMPLETE" {
    env OUT="$BATS_TEST_TMPDIR/out" FAKE_FORMATS="q4_g64_fp16 bf16" FAKE_TDEV="bf16=hang" \
        GPU_CHECK_JOBS=1 "$GC" --dry-run > run.out 2>&1 &
    local pid=$!
    wait_until "the hanging job started" grep -qs 'start t.bf16' out/gpu-check.log
    kill -TERM $pid
    local rc=0
    wait $pid || rc=$?
    [ "$rc" -eq 0 ] # nothing failed before the signal
    [ "$(cell q4_g64_fp16 decode)" = PASS ]
    [ "$(cell bf16 decode)" = - ]
    [[ "$(tail -n1 out/summary.txt)" == "VERDICT: INCOMPLETE (interrupted after "*" s)" ]]
    # the hanging stand-in was stopped with it
    run pgrep -f 'sleep 100000'
    [ "$status" -eq 1 ]
}

# ---- the parser (scripts/gpu-check-lib.sh) ------------------------------------------

@test "parser: a failed test is FAIL, a skipped one SKIP, a crash CRASH, a timeout TIMEOUT" {
    . "$REPO/scripts/gpu-check-lib.sh"
    printf '%s\n' 'ok 1 - [load] 9 test objects built' 'ok 2 - [decode] q4-300x200: decode (0 differ)' \
        'not ok 3 - [gemv] q4-300x200: gemv within bound' '#   row 7: got 1.5 want 1.25' \
        'ok 4 - [large] q4-8259x5120: gemv # skip no CUDA device' '1..4' > t.tap
    [ "$(gc_tap_verdict t.tap 1 gemv)" = FAIL ]
    [ "$(gc_tap_verdict t.tap 1 decode)" = PASS ]
    [ "$(gc_tap_verdict t.tap 1 large)" = SKIP ]
    [ "$(gc_tap_verdict t.tap 1 misc)" = - ]
    [ "$(gc_tap_note t.tap)" = '[gemv] q4-300x200: gemv within bound -- row 7: got 1.5 want 1.25' ]
    # a signal: every kind CRASH; a timeout TIMEOUT
    [ "$(gc_tap_verdict t.tap 139 decode)" = CRASH ]
    [ "$(gc_tap_verdict t.tap 137 load)" = CRASH ]
    [ "$(gc_tap_verdict t.tap 124 decode)" = TIMEOUT ]
    [ "$(gc_tap_verdict t.tap 124 gemv)" = FAIL ]
    # a CUDA error after a failed test: CRASH (even if the process exits 1)
    printf '%s\n' 'not ok 1 - [gemv] x: gemv' '#   failed at t_device.c:9: rc == 0' \
        '#   io: cuda: gemv: an illegal memory access was encountered' 'ok 2 - [decode] x: decode' > c.tap
    [ "$(gc_tap_verdict c.tap 1 gemv)" = CRASH ]
    [ "$(gc_tap_verdict c.tap 1 decode)" = PASS ]
    # exit 1 with no failed test at all: FAIL; a missing file: "-" (or the exit's verdict)
    printf 'ok 1 - [decode] x\n' > e.tap
    [ "$(gc_tap_verdict e.tap 1 decode)" = FAIL ]
    [ "$(gc_tap_verdict e.tap 0 decode)" = PASS ]
    [ "$(gc_tap_verdict nothing.tap 0 decode)" = - ]
    [ "$(gc_tap_verdict nothing.tap 139 decode)" = CRASH ]
    [ "$(gc_worst PASS SKIP INCONCLUSIVE)" = INCONCLUSIVE ]
    [ "$(gc_worst PASS FAIL CRASH TIMEOUT)" = CRASH ]
    [ "$(gc_worst)" = - ]
}

@test "parser: benchmark rows by column name (RFC 4180 quoting); a failed row FAIL, a crash CRASH, no row FAIL" {
    . "$REPO/scripts/gpu-check-lib.sh"
    # columns in another order, a quoted object with a comma, a doubled quote and a newline
    printf '%s\n' 'check,object,gbps,op' 'ok,"a,""b""' 'c",12.5,gemv' 'FAIL,plain,3.25,decode' > r.csv
    run -0 gc_csv_cols r.csv op gbps check object
    [ "${lines[0]}" = "$(printf 'gemv\t12.5\tok\ta,"b" c')" ]
    [ "${lines[1]}" = "$(printf 'decode\t3.25\tFAIL\tplain')" ]
    run -2 gc_csv_cols r.csv op ratio
    [[ "$output" == *"missing column ratio"* ]]
    : > e.err
    [ "$(gc_bench_verdict r.csv e.err 1)" = FAIL ]
    printf '%s\n' 'device,check' 'cuda,ok' > ok.csv
    [ "$(gc_bench_verdict ok.csv e.err 0)" = PASS ]
    [ "$(gc_bench_verdict ok.csv e.err 139)" = CRASH ]
    [ "$(gc_bench_verdict ok.csv e.err 124)" = TIMEOUT ]
    printf '%s\n' 'device,check' 'cuda,-' > un.csv
    [ "$(gc_bench_verdict un.csv e.err 0)" = SKIP ]
    # the old script's "failed gemv ..." line is no row: FAIL, with the reason
    echo 'failed gemv q4_g64_fp16 14336x5120 exit=3 ninfer-bench: cuda oops' > old.csv
    run -2 gc_csv_cols old.csv op gbps
    [ "$output" = "missing column op" ]
    echo 'ninfer-bench: 4096x4096: io: out of memory' > oom.err
    [ "$(gc_bench_verdict old.csv oom.err 3)" = FAIL ]
    [ "$(gc_bench_note oom.err 3)" = 'exit 3: ninfer-bench: 4096x4096: io: out of memory' ]
    echo 'ninfer-bench: 4096x4096: io: cuda: gemv: an illegal memory access was encountered' > cuda.err
    [ "$(gc_bench_verdict ok.csv cuda.err 3)" = CRASH ]
    : > empty.csv
    [ "$(gc_bench_verdict empty.csv e.err 4)" = FAIL ]
    [ "$(gc_bench_note e.err 139)" = 'exit 139: killed by signal 11' ]
}

@test "parser: memcheck's first error falls in a format; a run without a summary is INCONCLUSIVE" {
    . "$REPO/scripts/gpu-check-lib.sh"
    printf '%s\n' '========= COMPUTE-SANITIZER' 'ok 1 - [load] x' '# format a' 'ok 2 - [decode] a' \
        '# format b' '========= Invalid __global__ write of size 4 bytes' '=========     at k+0x10' \
        '# format c' 'ok 3 - [decode] c' '========= ERROR SUMMARY: 2 errors' > s.log
    run -0 gc_san_verdicts s.log 99 c a b d
    [ "${lines[0]}" = "c INCONCLUSIVE after an error in b" ]
    [ "${lines[1]}" = "a PASS no error before the next format" ]
    [ "${lines[2]}" = "b FAIL 2 errors: Invalid __global__ write of size 4 bytes" ]
    [ "${lines[3]}" = "d INCONCLUSIVE after an error in b" ]
    printf '%s\n' '========= COMPUTE-SANITIZER' '# format a' '========= ERROR SUMMARY: 0 errors' > z.log
    [ "$(gc_san_verdicts z.log 1 a)" = "a PASS 0 errors" ]
    printf '%s\n' '========= Error: Device not supported.' > u.log
    [ "$(gc_san_verdicts u.log 1 a)" = "a INCONCLUSIVE device not supported by the sanitizer" ]
    printf '%s\n' '# format a' > t.log
    [ "$(gc_san_verdicts t.log 124 a)" = "a INCONCLUSIVE timed out" ]
    printf '%s\n' '========= Invalid __global__ read' '========= ERROR SUMMARY: 1 error' > p.log
    [ "$(gc_san_verdicts p.log 99 a)" = "a FAIL 1 errors (before any format): Invalid __global__ read" ]
}

@test "parser: the verdict table takes each cell's worst verdict and closes with the run's" {
    . "$REPO/scripts/gpu-check-lib.sh"
    printf 'a\tbench\tPASS\t\na\tbench\tFAIL\tgemv: row 3\na\tbench\tPASS\t\nb\tdecode\tSKIP\t\n' > v
    run -0 gc_table v done a b
    [[ "${lines[1]}" =~ ^a\ +-\ +-\ +-\ +-\ +FAIL\ +-\ +FAIL$ ]]
    [[ "${lines[2]}" =~ ^b\ +-\ +SKIP\ +-\ +-\ +-\ +-\ +SKIP$ ]]
    [[ "$output" == *$'## notes\na bench FAIL: gemv: row 3'* ]]
    [ "${lines[-1]}" = "VERDICT: FAIL: 1 of 2 (a:FAIL)" ]
    printf 'a\tload\tPASS\t\nb\tload\tNOTRUN\tlate\n' > w
    run -0 gc_table w done a b
    [ "${lines[-1]}" = "VERDICT: INCOMPLETE: 1 of 2 not run for the deadline" ]
    run -0 gc_table w running a b
    [ "${lines[-1]}" = "VERDICT: INCOMPLETE (running)" ]
}
