#!/usr/bin/env bats
# Signals while a set is published (issue 11 item 4; DESIGN 3): catchable
# signals are blocked from the directory lock until the set is whole, so a
# Ctrl-C during `split --force` never leaves no entry with old and new parts
# mixed: the new set is complete and the signal then ends the process.
# SIGKILL cannot be blocked: at every step of a publication and of the
# payload it leaves either a target that verifies or no entry, and a rerun
# (without --force) then succeeds and leaves no stray part.
#
# The signal is sent from inside the program at an exact step (the sigat
# shim: "just before the K-th rename", "once N bytes are written"), never by
# a timer.

load helper

P=20000

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    need_sigat
    NF_P=$P nf_make a.ninfer
    nf_bytes $P big.bin
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "r.big", "kind": "resource", "encoding": "raw_bytes_v1", "source": {"file": "big.bin"}}], "bindings": {}, "uses": []}' > m.json
}

id_of() {
    od -An -tx1 -j16 -N16 "$1" | tr -d ' \n'
}

# whole_set ENTRY — ENTRY verifies and every ENTRY.part-* carries its id.
whole_set() {
    run -0 --separate-stderr ninfer-verify "$1"
    local id p
    id=$(id_of "$1")
    for p in "$1".part-*; do
        [ -e "$p" ] || continue
        [ "$(id_of "$p")" = "$id" ] || { echo "$p belongs to another set" >&2; return 1; }
    done
}

@test "SIGINT, SIGTERM, SIGHUP at every step of split --force's publication: the new set is whole, then the signal ends it" {
    local sig k
    for sig in INT TERM HUP; do
        for k in 1 2 3; do
            rm -f t.ninfer*
            # the old set: an entry and four parts; the new: an entry and two
            ninfer-split --no-sync --max-file-bytes 8K -o t.ninfer a.ninfer
            [ -e t.ninfer.part-0004 ]
            local old
            old=$(id_of t.ninfer)
            run nf_sigat "rename:$k" "$sig" ninfer-split --no-sync --force --max-file-bytes 12K -o t.ninfer a.ninfer
            echo "SIG$sig before rename $k: status $status"
            [ "$status" -eq $((128 + $(kill -l "$sig"))) ]
            whole_set t.ninfer
            [ "$(id_of t.ninfer)" != "$old" ]
            [ -e t.ninfer.part-0002 ]
            [ ! -e t.ninfer.part-0003 ]
            [ ! -e t.ninfer.part-0004 ]
            no_temporaries .
        done
    done
}

@test "SIGINT during pack's publication: the same" {
    ninfer-pack -q --no-sync --max-file-bytes 8K -o t.ninfer m.json
    run nf_sigat rename:2 INT ninfer-pack -q --no-sync --force --max-file-bytes 12K -o t.ninfer m.json
    [ "$status" -eq 130 ]
    whole_set t.ninfer
    [ ! -e t.ninfer.part-0003 ]
    no_temporaries .
}

# after_kill CMD... — after a SIGKILL: a published entry verifies as a whole
# set; otherwise a rerun of CMD without --force succeeds and leaves a whole
# set and no stray part; no temporaries remain either way.
after_kill() {
    if [ -e t.ninfer ]; then
        whole_set t.ninfer
    fi
    local args=()
    local a
    for a in "$@"; do
        [ "$a" = --force ] || args+=("$a")
    done
    rm -f t.ninfer
    run -0 --separate-stderr "${args[@]}"
    whole_set t.ninfer
    no_temporaries .
}

# asides — what a --force publication moved aside (.t.ninfer*.old-PID).
asides() {
    find . -maxdepth 1 -name '.t.ninfer*.old-*' -print
}

@test "SIGKILL before every rename of a --force publication: the next writer puts the old set back byte for byte" {
    local k before
    # renames: the old entry aside, part 1 aside, part 1, part 2 aside,
    # part 2, the entry
    for k in 1 2 3 4 5 6; do
        rm -f t.ninfer* .t.ninfer*
        ninfer-split --no-sync --max-file-bytes 8K -o t.ninfer a.ninfer
        before=$(nf_snapshot .)
        run nf_sigat "rename:$k" KILL ninfer-split --no-sync --force --max-file-bytes 12K -o t.ninfer a.ninfer
        [ "$status" -eq 137 ]
        # without --force the next writer puts the old set back and refuses
        run -3 --separate-stderr ninfer-split --no-sync --max-file-bytes 12K -o t.ninfer a.ninfer
        [ "${stderr_lines[-1]}" = "ninfer-split: t.ninfer: io: output exists; use --force to replace it" ]
        if [ "$k" -gt 1 ]; then
            grep -qF "./t.ninfer: put back: an interrupted --force (process" <<< "$stderr"
        fi
        expect_unchanged "$before"
        whole_set t.ninfer
        # and the same --force again replaces it: the new set, nothing left over
        run -0 --separate-stderr ninfer-split --no-sync --force --max-file-bytes 12K -o t.ninfer a.ninfer
        whole_set t.ninfer
        [ -e t.ninfer.part-0002 ]
        [ ! -e t.ninfer.part-0003 ]
        [ ! -e t.ninfer.part-0004 ]
        [ -z "$(asides)" ]
        no_temporaries .
    done
}

@test "SIGKILL after a --force moved a symlinked entry aside: the next writer puts the link back" {
    local k before
    for k in 1 2 3; do
        rm -rf t.ninfer* .t.ninfer* keep
        ninfer-split --no-sync --max-file-bytes 8K -o t.ninfer a.ninfer
        mkdir keep
        mv t.ninfer keep/real.ninfer
        ln -s keep/real.ninfer t.ninfer # its parts, beside the link, read through it
        run -0 --separate-stderr ninfer-verify t.ninfer
        before=$(nf_snapshot .)
        run nf_sigat "rename:$k" KILL ninfer-split --no-sync --force --max-file-bytes 12K -o t.ninfer a.ninfer
        [ "$status" -eq 137 ]
        run -3 --separate-stderr ninfer-split --no-sync --max-file-bytes 12K -o t.ninfer a.ninfer
        [ "${stderr_lines[-1]}" = "ninfer-split: t.ninfer: io: output exists; use --force to replace it" ]
        expect_unchanged "$before"
        [ -L t.ninfer ]
        run -0 --separate-stderr ninfer-verify t.ninfer
        [ -z "$(asides)" ]
    done
}

@test "SIGKILL while a finished --force publication removes the old set: the next writer removes the rest" {
    local k new
    # unlinks after publication: the surplus parts 4 and 3, what was at
    # parts 2 and 1, the old entry
    for k in 1 2 3 4 5; do
        rm -f t.ninfer* .t.ninfer*
        ninfer-split --no-sync --max-file-bytes 8K -o t.ninfer a.ninfer
        run nf_sigat "unlink:$k" KILL ninfer-split --no-sync --force --max-file-bytes 12K -o t.ninfer a.ninfer
        [ "$status" -eq 137 ]
        run -0 --separate-stderr ninfer-verify t.ninfer
        new=$(nf_snapshot . | grep -F ' ./t.ninfer')
        [ -n "$(asides)" ]
        # the next writer (refused: the output exists) tidies up first
        run -3 --separate-stderr ninfer-split --no-sync --max-file-bytes 12K -o t.ninfer a.ninfer
        grep -qF 'an interrupted --force (process' <<< "$stderr"
        [ -z "$(asides)" ]
        whole_set t.ninfer
        [ ! -e t.ninfer.part-0003 ]
        [ ! -e t.ninfer.part-0004 ]
        diff <(echo "$new" | grep -v 'part-000[34]') <(nf_snapshot . | grep -F ' ./t.ninfer')
        no_temporaries .
    done
}

@test "SIGKILL at known points of the payload (split and pack): no entry, and a rerun succeeds" {
    local n
    # 1 byte in, inside the entry, at the entry/part boundary, in the last part
    for n in 1 2000 4096 12000 19999; do
        rm -f t.ninfer*
        run nf_sigat "write:$n" KILL ninfer-split --no-sync --max-file-bytes 8K -o t.ninfer a.ninfer
        [ "$status" -eq 137 ]
        [ ! -e t.ninfer ]
        after_kill ninfer-split --no-sync --max-file-bytes 8K -o t.ninfer a.ninfer
        rm -f t.ninfer*
        run nf_sigat "write:$n" KILL ninfer-pack -q --no-sync --max-file-bytes 8K -o t.ninfer m.json
        [ "$status" -eq 137 ]
        [ ! -e t.ninfer ]
        after_kill ninfer-pack -q --no-sync --max-file-bytes 8K -o t.ninfer m.json
    done
}

@test "SIGINT, SIGTERM, SIGHUP while the payload is written: status 128+N, nothing left" {
    local sig cmd
    mkdir out
    for sig in INT TERM HUP; do
        for cmd in "ninfer-split --no-sync --max-file-bytes 8K -o out/t.ninfer a.ninfer" \
            "ninfer-pack -q --no-sync --max-file-bytes 8K -o out/t.ninfer m.json"; do
            run nf_sigat write:6000 "$sig" $cmd
            echo "SIG$sig, $cmd: status $status"
            [ "$status" -eq $((128 + $(kill -l "$sig"))) ]
            [ -z "$(ls -A out)" ]
        done
    done
}

# nocore CMD... — CMD without core files (SIGQUIT, SIGXCPU, SIGABRT dump one
# by default).
nocore() {
    (
        ulimit -c 0
        "$@"
    )
}

@test "every other signal whose default ends the process (QUIT, USR1/2, ALRM, XCPU, VTALRM, PROF, ABRT, real-time): temporaries removed, status 128+N" {
    local sig num cmd
    mkdir out
    ninfer-pack -q -o out/keep.ninfer m.json
    for sig in QUIT USR1 USR2 ALRM XCPU VTALRM PROF ABRT RTMIN RTMAX; do
        num=$(kill -l "$sig")
        for cmd in "ninfer-split --no-sync --max-file-bytes 8K -o out/t.ninfer a.ninfer" \
            "ninfer-pack -q --no-sync --max-file-bytes 8K -o out/t.ninfer m.json"; do
            run nocore nf_sigat write:6000 "$num" $cmd
            echo "SIG$sig ($num), $cmd: status $status"
            [ "$status" -eq $((128 + num)) ]
            [ "$(ls -A out)" = keep.ninfer ]
        done
    done
}

@test "the single-file outputs (import -o, quant -o) and pack with its encoding threads: a signal mid-write leaves no temporary" {
    local sig num
    nf-mkckpt ck > /dev/null
    ninfer-import -q ck > m2.json
    mkdir out
    for sig in INT QUIT USR1 ALRM XCPU PROF RTMIN; do
        num=$(kill -l "$sig")
        run nocore nf_sigat write:100 "$num" ninfer-import -q -o out/m.json ck
        echo "import, SIG$sig: status $status"
        [ "$status" -eq $((128 + num)) ]
        [ -z "$(ls -A out)" ]
        run nocore nf_sigat write:100 "$num" ninfer-quant -i m2.json -o out/q.json 'text/*=q8_g32_fp16'
        echo "quant, SIG$sig: status $status"
        [ "$status" -eq $((128 + num)) ]
        [ -z "$(ls -A out)" ]
    done
    # pack while its encoding threads run (they block signals: the handler
    # runs in the thread that owns the list of temporaries)
    ninfer-quant -i m2.json -o q.json 'text/*=q4_g64_fp16'
    for sig in TERM USR2 VTALRM; do
        num=$(kill -l "$sig")
        run nocore nf_sigat write:300000 "$num" ninfer-pack -q --no-sync --threads 4 --max-file-bytes 1M -o out/t.ninfer q.json
        echo "pack --threads 4, SIG$sig: status $status"
        [ "$status" -eq $((128 + num)) ]
        [ -z "$(ls -A out)" ]
    done
}
