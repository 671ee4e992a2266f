# shellcheck shell=bash disable=SC2034
# gpu-check-lib.sh — what scripts/gpu-check.sh makes of its tools' output,
# sourced by it and by tests/gpu-check.bats (which feeds these functions
# failed, skipped and crashed runs without a GPU). bash; POSIX awk (mawk).
#
# Verdict words, worst first (gc_worst ranks them):
#   CRASH         a signal, or a CUDA error ("cuda: ..." in a diagnostic)
#   FAIL          a check failed, or the tool exited non-zero without a row
#   TIMEOUT       the tool ran past its cap (timeout's status 124)
#   NOTRUN        not started: the deadline had passed
#   INCONCLUSIVE  the sanitizer could not say (timed out, refused the device,
#                 not installed, or an earlier error in its process)
#   SKIP          the tool skipped (no device)
#   PASS
#   -             nothing of that kind in the run

# The formats with device kernels, when t_device --list cannot say.
GC_FORMATS="bf16 fp32 int32 q2_g64_fp16 q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 q8_g32_fp16
t2_g128_fp16 nvfp4 fp8_e4m3fn_row_bf16 gguf_f16 gguf_q8_0 gguf_q4_0 gguf_q4_1 gguf_q5_0
gguf_q5_1 gguf_iq4_nl gguf_mxfp4 gguf_q2_k gguf_q3_k gguf_q4_k gguf_q5_k gguf_q6_k gguf_iq4_xs"

# gc_rank VERDICT — its rank (higher is worse).
gc_rank() {
    case "$1" in
        CRASH) echo 7 ;; FAIL) echo 6 ;; TIMEOUT) echo 5 ;; NOTRUN) echo 4 ;;
        INCONCLUSIVE) echo 3 ;; SKIP) echo 2 ;; PASS) echo 1 ;; *) echo 0 ;;
    esac
}

# gc_worst VERDICT... — the worst of them ("-" for none).
gc_worst() {
    local w=- v
    for v in "$@"; do
        [ "$(gc_rank "$v")" -gt "$(gc_rank "$w")" ] && w=$v
    done
    echo "$w"
}

# gc_is_bad VERDICT — true for the verdicts that fail the run.
gc_is_bad() {
    case "$1" in CRASH | FAIL | TIMEOUT) return 0 ;; *) return 1 ;; esac
}

# gc_exit_verdict RC — what a tool's exit status alone says: TIMEOUT (124),
# CRASH (a signal: above 128, 137 included, e.g. killed for memory), or
# nothing (empty).
gc_exit_verdict() {
    if [ "$1" -eq 124 ]; then
        echo TIMEOUT
    elif [ "$1" -gt 128 ]; then
        echo CRASH
    fi
}

# gc_tap_verdict FILE RC KIND — the verdict of t_device's tests of KIND
# (load, decode, gemv, large, misc, probe: the "[KIND]" tag that starts each
# test line) in the TAP output FILE of a process that exited RC. A failed
# test followed by a "cuda: " diagnostic is a CRASH (the context may be
# poisoned: the rest of the process proves nothing); a failed test FAIL; a
# process killed by a signal CRASH, one that ran out of time TIMEOUT, for
# every kind it left unfinished; all skipped SKIP; none "-"; a process that
# exited non-zero without any failed test FAIL (a test of another kind that
# failed is that kind's verdict).
gc_tap_verdict() {
    local file=$1 rc=$2 kind=$3 counts n_ok n_bad n_skip n_cuda n_all ex
    counts=$(awk -v kind="[$kind]" '
        function flush() { if (infail && sawcuda) cuda++; infail = 0; sawcuda = 0 }
        /^(not )?ok [0-9]+ / {
            flush()
            if ($0 ~ /^not ok/) all++
            d = $0; sub(/^(not )?ok [0-9]+ (- )?/, "", d)
            if (substr(d, 1, length(kind)) != kind) next
            if ($0 ~ /^not ok/) { bad++; infail = 1 }
            else if ($0 ~ /# [Ss][Kk][Ii][Pp]/) skip++
            else ok++
            next
        }
        { if (infail && $0 ~ /cuda: /) sawcuda = 1 }
        END { flush(); printf "%d %d %d %d %d\n", ok, bad, skip, cuda, all }
    ' "$file" 2> /dev/null)
    read -r n_ok n_bad n_skip n_cuda n_all <<< "${counts:-0 0 0 0 0}"
    ex=$(gc_exit_verdict "$rc")
    if [ "$n_cuda" -gt 0 ]; then
        echo CRASH
    elif [ "$n_bad" -gt 0 ]; then
        echo FAIL
    elif [ -n "$ex" ]; then
        echo "$ex"
    elif [ $((n_ok + n_skip)) -eq 0 ]; then
        echo -
    elif [ "$n_ok" -eq 0 ]; then
        echo SKIP
    elif [ "$rc" -ne 0 ] && [ "$n_all" -eq 0 ]; then
        echo FAIL # it failed, and no test says why
    else
        echo PASS
    fi
}

# gc_tap_note FILE — the first failed test of FILE and its first
# diagnostic, one line (for the notes under the verdict table).
gc_tap_note() {
    awk '/^not ok / { if (t == "") { t = $0; grab = 1 }; next }
         grab && /^#/ { if ($0 !~ /failed at /) { n = $0; grab = 0 }; next }
         grab { grab = 0 }
         END { if (t != "") { sub(/^not ok [0-9]+ (- )?/, "", t); sub(/^#[ \t]*/, "", n)
               print t (n != "" ? " -- " n : "") } }' "$1" 2> /dev/null | cut -c1-300
}

# gc_csv_cols FILE NAME... — the data rows of the CSV FILE (RFC 4180: quoted
# fields with , and doubled ", a record continued over lines while a quote
# is open) as tab-separated values of the columns NAME..., found BY NAME in
# the header line, whatever their order; a field's tabs and newlines become
# blanks. A missing column is an error (status 2, the name on stderr); a
# file without a header gives nothing.
gc_csv_cols() {
    local file=$1
    shift
    awk -v want="$*" '
        # split record r into f[1..n] (quotes removed), return n
        function split_csv(r, f,    n, i, c, q, cur) {
            n = 0; cur = ""; q = 0
            for (i = 1; i <= length(r); i++) {
                c = substr(r, i, 1)
                if (q) {
                    if (c == "\"") {
                        if (substr(r, i + 1, 1) == "\"") { cur = cur "\""; i++ } else q = 0
                    } else cur = cur c
                } else if (c == "\"") q = 1
                else if (c == ",") { f[++n] = cur; cur = "" }
                else cur = cur c
            }
            f[++n] = cur
            return n
        }
        function quotes_open(r,    t) { t = r; return gsub(/"/, "", t) % 2 }
        {
            sub(/\r$/, "")
            rec = (pending != "") ? pending "\n" $0 : $0
            if (quotes_open(rec)) { pending = rec; next }
            pending = ""
            n = split_csv(rec, f)
            if (!header) {
                header = 1
                for (i = 1; i <= n; i++) col[f[i]] = i
                nw = split(want, w, " ")
                for (i = 1; i <= nw; i++)
                    if (!(w[i] in col)) { print "missing column " w[i] > "/dev/stderr"; bad = 1; exit 2 }
                next
            }
            line = ""
            for (i = 1; i <= nw; i++) {
                v = f[col[w[i]]]
                gsub(/[\t\n]/, " ", v)
                line = line (i > 1 ? "\t" : "") v
            }
            print line
        }
        END { if (bad) exit 2 }
    ' "$file"
}

# gc_bench_verdict CSV ERR RC — the verdict of one ninfer-bench --csv run:
# its stdout in CSV, its stderr in ERR, its exit status RC. A row with
# check FAIL is FAIL; a "cuda: " diagnostic or a signal CRASH; RC 124
# TIMEOUT; no row FAIL (exit 4, unsupported, included: t_device listed the
# format as having kernels); rows all checked ok PASS; a row checking
# nothing ("-") SKIP.
gc_bench_verdict() {
    local csv=$1 err=$2 rc=$3 checks ex
    ex=$(gc_exit_verdict "$rc")
    if grep -q 'cuda: ' "$err" 2> /dev/null; then
        echo CRASH
        return
    fi
    checks=$(gc_csv_cols "$csv" check 2> /dev/null | sort -u | tr '\n' ' ')
    case " $checks" in
        *" FAIL "*) echo FAIL ;;
        *)
            if [ -n "$ex" ]; then
                echo "$ex"
            elif [ -z "$checks" ] || [ "$rc" -ne 0 ]; then
                echo FAIL
            elif [ "$checks" = "- " ]; then
                echo SKIP
            else
                echo PASS
            fi
            ;;
    esac
}

# gc_bench_note ERR RC — why a bench run failed, one line: its last
# diagnostic, or its exit status.
gc_bench_note() {
    local last
    last=$(grep -v ': device: sm_mhz=' "$1" 2> /dev/null | tail -n1 | cut -c1-240)
    if [ -n "$last" ]; then
        echo "exit $2: $last"
    elif [ "$2" -gt 128 ]; then
        echo "exit $2: killed by signal $(($2 - 128))"
    else
        echo "exit $2"
    fi
}

# gc_san_verdicts LOG RC FORMAT... — compute-sanitizer's verdict for each
# FORMAT of one `compute-sanitizer --tool memcheck t_device --only ...` run,
# one "FORMAT VERDICT NOTE" line each. t_device's "# format F" lines place
# the first error: the format it falls in FAIL, those t_device finished
# before it PASS, the rest INCONCLUSIVE (the error may have poisoned the
# context). An "ERROR SUMMARY: 0 errors" passes every format; a run
# without a summary (timeout, a device it does not support, the tool
# failing) is INCONCLUSIVE.
gc_san_verdicts() {
    local log=$1 rc=$2
    shift 2
    local summary why="no error summary" f
    summary=$(sed -n 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' "$log" 2> /dev/null | tail -n1)
    if [ "$rc" -eq 124 ]; then
        why="timed out"
    elif grep -qi 'device not supported\|not supported on this device' "$log" 2> /dev/null; then
        why="device not supported by the sanitizer"
    elif [ "$rc" -eq 127 ]; then
        why="compute-sanitizer not found"
    fi
    if [ -z "$summary" ]; then
        for f in "$@"; do echo "$f INCONCLUSIVE $why"; done
        return
    fi
    if [ "$summary" -eq 0 ]; then
        for f in "$@"; do echo "$f PASS 0 errors"; done
        return
    fi
    # each format t_device reached: before the first error report, in it, after it
    local states
    states=$(awk '
        function report(l) { return l ~ /^========= / && l !~ /ERROR SUMMARY/ && l !~ /COMPUTE-SANITIZER/ && l !~ /^=========[ ]*$/ }
        /^# format / { f = $3; if (!err) st[f] = "PASS"; else if (!(f in st)) st[f] = "INCONCLUSIVE"; order[++n] = f; next }
        report($0) && !err { err = 1; msg = $0; sub(/^========= */, "", msg); if (f != "") st[f] = "FAIL"; first = f }
        END { for (i = 1; i <= n; i++) print order[i], st[order[i]]; print "first", (first == "" ? "?" : first); print "msg", msg }
    ' "$log")
    local first msg st
    first=$(awk '$1 == "first" { print $2 }' <<< "$states")
    msg=$(sed -n 's/^msg //p' <<< "$states" | cut -c1-200)
    for f in "$@"; do
        st=$(awk -v f="$f" '$1 == f { s = $2 } END { print s }' <<< "$states")
        if [ "$first" = "?" ]; then
            echo "$f FAIL $summary errors (before any format): $msg"
        elif [ "$st" = FAIL ]; then
            echo "$f FAIL $summary errors: $msg"
        elif [ "$st" = PASS ]; then
            echo "$f PASS no error before the next format"
        else
            echo "$f INCONCLUSIVE after an error in $first"
        fi
    done
}

# gc_probe_field FILE KEY — KEY's value on t_device --probe's "# probe"
# line (name: the rest of the line).
gc_probe_field() {
    if [ "$2" = name ]; then
        sed -n 's/^# probe .* name=//p' "$1" | head -n1
    else
        sed -n "s/^# probe.* $2=\\([^ ]*\\).*/\\1/p" "$1" | head -n1
    fi
}

# gc_table VFILE STATE FORMAT... — the verdict table: a row per FORMAT
# with the columns of GC_COLS, each the worst verdict VFILE holds for it
# (lines FORMAT<TAB>COLUMN<TAB>VERDICT<TAB>NOTE), "-" where none, and the
# worst of them; then the notes (every verdict but PASS that has one) and
# the closing line: "VERDICT: FAIL: N of M (FORMAT:VERDICT ...)", "VERDICT:
# INCOMPLETE: ..." (STATE other than "done", or something not run for the
# deadline), "VERDICT: NOT RUN: ..." (STATE "no device") or "VERDICT: PASS
# (M)".
GC_COLS="load decode gemv large bench sanitizer"
gc_table() {
    local vfile=$1 state=$2
    shift 2
    awk -F'\t' -v formats="$*" -v cols="$GC_COLS" -v state="$state" '
        function rank(v) {
            if (v == "CRASH") return 7; if (v == "FAIL") return 6; if (v == "TIMEOUT") return 5
            if (v == "NOTRUN") return 4; if (v == "INCONCLUSIVE") return 3; if (v == "SKIP") return 2
            return v == "PASS" ? 1 : 0
        }
        {   # the worst verdict of a cell wins, with its note
            k = $1 SUBSEP $2
            if (!(k in val) || rank($3) > rank(val[k])) {
                val[k] = $3
                if ($4 != "" && $3 != "PASS") note[k] = $4; else delete note[k]
            }
        }
        END {
            nf = split(formats, F, " "); nc = split(cols, C, " ")
            line = sprintf("%-22s", "format")
            for (j = 1; j <= nc; j++) line = line sprintf(" %-12s", C[j])
            print line " verdict"
            bad = 0; notrun = 0; list = ""
            for (i = 1; i <= nf; i++) {
                f = F[i]; w = "-"
                line = sprintf("%-22s", f)
                for (j = 1; j <= nc; j++) {
                    k = f SUBSEP C[j]
                    v = (k in val) ? val[k] : "-"
                    line = line sprintf(" %-12s", v)
                    if (rank(v) > rank(w)) w = v
                }
                print line " " w
                if (rank(w) >= 5) { bad++; list = list " " f ":" w }
                if (w == "NOTRUN") notrun++
            }
            n = 0
            for (i = 1; i <= nf; i++)
                for (j = 1; j <= nc; j++) {
                    k = F[i] SUBSEP C[j]
                    if (k in note) {
                        if (!n++) print "\n## notes"
                        if (n <= 60) printf "%s %s %s: %s\n", F[i], C[j], val[k], note[k]
                    }
                }
            print ""
            if (state == "no device")
                print "VERDICT: NOT RUN: no device, or binaries that cannot run here (the device line says which)"
            else if (state != "done")
                print "VERDICT: INCOMPLETE (" state ")" (bad ? "; so far FAIL:" list : "")
            else if (bad)
                print "VERDICT: FAIL: " bad " of " nf " (" substr(list, 2) ")"
            else if (notrun)
                print "VERDICT: INCOMPLETE: " notrun " of " nf " not run for the deadline"
            else
                print "VERDICT: PASS (" nf ")"
        }' "$vfile"
}
