#!/usr/bin/env bats
# Faults (issues 6, 11, 12; DESIGN 3 and 12; spec 11.4): writers killed at
# known points never publish a target that fails ninfer-verify, and a rerun
# succeeds; signals remove temporaries; full disks, I/O errors and file-size
# limits give a clean `io` (exit 3) and leave nothing; an output naming an
# input is refused before anything is written; readers refuse parts that are
# FIFOs, directories or devices without hanging, and report a file that
# shrinks while it is read.
#
# No fault here races a clock (issue 12): a program is held at a known point
# -- a stream on a FIFO the test feeds only so far, standard output into a
# FIFO the test drains only later, or the sigat shim, which signals (or
# stops) the program once it has written or read an exact number of bytes
# -- and the fault is applied there. The inputs are small and sparse.

load helper

P=$((12 * 1024 * 1024)) # payload of the "large" artifacts: three 4 MiB files

no_wrapper() {
    [ -z "${NF_WRAPPER:-}" ] || skip "signals are not tested under NF_WRAPPER"
}

# shim — the write-failure shim cannot ride with ASan (it must come first in
# LD_PRELOAD): skip under sanitizers.
shim() {
    [ -z "${NF_SANITIZE:-}" ] || skip "the LD_PRELOAD write shim does not run under sanitizers (ASan must be first in LD_PRELOAD)"
    [ -e "$NF_TOOLS/libfailwrite.so" ] || skip "build/tools/libfailwrite.so is not built"
}

# big_source — big.ninfer: a sparse single-file artifact holding a bf16
# tensor and a resource with the rest of P bytes.
big_source() {
    printf '{"components": {"text": {"config": {}, "resources": {"blob": "r.big"}}}, "objects": [%s, %s], "bindings": {"text/w": {"object": "w"}}, "uses": [], "files": [{"path": null, "payload_bytes": %d}]}' \
        "$(nf_tensor w '[64, 1024]' 0 131072)" "$(nf_resource r.big 131072 $((P - 131072)))" "$P" > big.json
    nf-mkartifact --catalog big.json --payload zero:$P -o big.ninfer
}

# big_manifest — big.manifest: the same objects from files (w.bin random,
# big.bin sparse) for ninfer-pack.
big_manifest() {
    nf_bytes 131072 w.bin
    truncate -s $((P - 131072)) big.bin
    printf '{"components": {"text": {"config": {}, "resources": {"blob": "r.big"}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [64, 1024], "format": "bf16", "layout": "contiguous_le_v1", "source": {"file": "w.bin"}}, {"id": "r.big", "kind": "resource", "encoding": "raw_bytes_v1", "source": {"file": "big.bin"}}], "bindings": {"text/w": {"object": "w"}}, "uses": []}' > big.manifest
}

# nothing_left DIR — DIR is empty or missing: no target, part or temporary.
nothing_left() {
    [ ! -e "$1" ] && return 0
    if [ -n "$(ls -A "$1")" ]; then
        echo "left in $1:" >&2
        ls -la "$1" >&2
        return 1
    fi
}

# kill_points TARGET CMD... — CMD writes TARGET (under out/) as an entry and
# two parts. SIGKILL it (the sigat shim) once 1 byte, the middle of the
# entry, the entry's end, the middle of part 1, part 1's end and the last
# byte but one are written, and before each of its three renames; after
# each kill:
#   - a published TARGET verifies (its parts are there, lengths and digests);
#   - else a rerun of CMD succeeds, replacing what the dead run left (parts
#     without an entry, temporaries of a dead process), and verifies;
#   - no temporaries remain.
kill_points() {
    local target=$1 dir at
    shift
    dir=$(dirname "$target")
    rm -rf "$dir"
    run -0 --separate-stderr "$@"
    run -0 --separate-stderr ninfer-verify "$target"
    local cap=$((4 * 1024 * 1024 - 4096))
    for at in write:1 write:$((cap / 2)) write:$cap write:$((cap + cap / 2)) write:$((2 * cap)) \
        write:$((P - 1)) rename:1 rename:2 rename:3; do
        rm -rf "$dir"
        run nf_sigat "$at" KILL "$@"
        [ "$status" -eq 137 ] || { echo "$at: status $status, not killed" >&2; return 1; }
        if [ -e "$target" ]; then
            run -0 --separate-stderr ninfer-verify "$target" ||
                { echo "killed at $at: the published target fails verify" >&2; return 1; }
        else
            run -0 --separate-stderr "$@" ||
                { echo "killed at $at: the rerun failed" >&2; return 1; }
            run -0 --separate-stderr ninfer-verify "$target"
        fi
        no_temporaries "$dir"
    done
}

# ---- SIGKILL at known points -----------------------------------------------------------

@test "ninfer-split killed with SIGKILL at 9 known points: never a bad target, a rerun succeeds" {
    need_sigat
    big_source
    kill_points out/s.ninfer ninfer-split --no-sync --max-file-bytes 4M -o out/s.ninfer big.ninfer
}

@test "ninfer-pack killed with SIGKILL at 9 known points: never a bad target, a rerun succeeds" {
    need_sigat
    big_manifest
    kill_points out/p.ninfer ninfer-pack --no-sync --max-file-bytes 4M -o out/p.ninfer big.manifest
}

@test "parts of an interrupted run without an entry are replaced by the rerun (split, pack)" {
    big_source
    big_manifest
    ninfer-split --no-sync --max-file-bytes 4M -o out/s.ninfer big.ninfer
    rm out/s.ninfer
    # and one stale part beyond what the new set needs
    cp out/s.ninfer.part-0001 out/s.ninfer.part-0009
    run -0 --separate-stderr ninfer-split --no-sync --max-file-bytes 4M -o out/s.ninfer big.ninfer
    run -0 --separate-stderr ninfer-verify out/s.ninfer
    [ ! -e out/s.ninfer.part-0009 ]
    ninfer-pack --no-sync --max-file-bytes 4M -o out/p.ninfer big.manifest
    rm out/p.ninfer
    run -0 --separate-stderr ninfer-pack --no-sync --max-file-bytes 4M -o out/p.ninfer big.manifest
    run -0 --separate-stderr ninfer-verify out/p.ninfer
    no_temporaries out
}

# ---- SIGINT, SIGTERM -------------------------------------------------------------------

@test "SIGINT and SIGTERM during ninfer-pack (sent 6 MiB into the payload) remove its temporaries" {
    need_sigat
    big_manifest
    mkdir out
    local sig
    for sig in INT TERM; do
        run nf_sigat write:$((6 * 1024 * 1024)) "$sig" ninfer-pack --no-sync --max-file-bytes 4M -o out/p.ninfer big.manifest
        [ "$status" -eq $((128 + $(kill -l "$sig"))) ]
        no_temporaries out
        nothing_left out
    done
}

@test "SIGTERM during ninfer-split from a stream (held 6 MiB in) removes its temporaries" {
    no_wrapper
    big_source
    mkdir out
    stall_start big.ninfer $((6 * 1024 * 1024)) ninfer-split --no-sync --max-file-bytes 4M -o out/s.ninfer -
    wait_until "the split holds its temporaries" temps_in out 3
    stall_signal TERM
    [ "$STALL_STATUS" -eq 143 ]
    no_temporaries out
    nothing_left out
}

# ---- full disks, I/O errors, file-size limits ------------------------------------------

@test "ninfer-pack: ENOSPC and EIO (write shim) -> io (3), no temporaries, no target" {
    shim
    big_manifest
    local after err
    for err in ENOSPC EIO EFBIG; do
        for after in 0 5000 5000000 9000000; do
            run -3 --separate-stderr nf_failwrite "$after" "$err" ninfer-pack --no-sync --max-file-bytes 4M -o out/p.ninfer big.manifest
            expect_only_codes io
            no_temporaries out
            nothing_left out
        done
    done
}

@test "ninfer-split into parts: ENOSPC after every part boundary (write shim) -> io (3), nothing left" {
    shim
    big_source
    local after
    for after in 4096 4194304 8388608 12500000; do
        run -3 --separate-stderr nf_failwrite "$after" ENOSPC ninfer-split --no-sync --max-file-bytes 4M -o out/s.ninfer big.ninfer
        expect_only_codes io
        no_temporaries out
        nothing_left out
    done
}

@test "ulimit -f (EFBIG, no SIGXFSZ death): split, pack and a stream to a file -> io (3), nothing left" {
    big_source
    big_manifest
    run -3 --separate-stderr bash -c 'ulimit -f 2000; exec "$0" "$@"' \
        "$NF_BIN/ninfer-split" --no-sync --max-file-bytes 4M -o out/s.ninfer big.ninfer
    expect_only_codes io
    grep -q 'File too large' <<< "$stderr"
    nothing_left out
    run -3 --separate-stderr bash -c 'ulimit -f 2000; exec "$0" "$@"' \
        "$NF_BIN/ninfer-pack" --no-sync -o out/p.ninfer big.manifest
    expect_only_codes io
    nothing_left out
    run -3 --separate-stderr bash -c 'ulimit -f 2000; exec "$0" "$@" > s.out' \
        "$NF_BIN/ninfer-cat" big.ninfer
    expect_only_codes io
    run -3 --separate-stderr bash -c 'ulimit -f 2000; exec "$0" "$@" > s.out' \
        "$NF_BIN/ninfer-pack" -o - big.manifest
    expect_only_codes io
    run -3 --separate-stderr bash -c 'ulimit -f 2000; exec "$0" "$@" > s.out' \
        "$NF_BIN/ninfer-split" -o - big.ninfer
    expect_only_codes io
}

@test "/dev/full for every stream output -> io (3)" {
    nf_make a.ninfer 600 400
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [2, 4], "format": "bf16", "layout": "contiguous_le_v1", "source": {"artifact": "a.ninfer", "object": "w.a"}}], "bindings": {}, "uses": []}' > m.json
    local cmd
    for cmd in "ninfer-cat a.ninfer" "ninfer-cat --zstd a.ninfer" "ninfer-cat --object w.a a.ninfer" \
        "ninfer-cat --range 0:1000 a.ninfer" "ninfer-cat --catalog a.ninfer" \
        "ninfer-split -o - a.ninfer" "ninfer-split --zstd a.ninfer" \
        "ninfer-pack -o - m.json" "ninfer-pack --zstd m.json"; do
        run -3 --separate-stderr bash -c "$cmd > /dev/full"
        expect_only_codes io
    done
}

# ---- an output naming an input ------------------------------------------------------------

@test "ninfer-pack -o naming an input (the manifest, a source file, an artifact's part) is refused before writing (2)" {
    nf_make a.ninfer 600 400
    nf_bytes 16 w.bin
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [2, 4], "format": "bf16", "layout": "contiguous_le_v1", "source": {"file": "w.bin"}}, {"id": "v", "kind": "tensor", "shape": [2, 4], "format": "bf16", "layout": "contiguous_le_v1", "source": {"artifact": "a.ninfer", "object": "w.a"}}], "bindings": {}, "uses": []}' > m.json
    cp m.json m.keep
    local before out
    before=$(sha256sum a.ninfer a.ninfer.part-0001 w.bin m.json)
    for out in m.json w.bin a.ninfer a.ninfer.part-0001; do
        run -2 --separate-stderr ninfer-pack --force -o "$out" m.json
        expect_only_codes usage
    done
    ln -s m.json link.json
    run -2 --separate-stderr ninfer-pack --force -o link.json m.json
    expect_only_codes usage
    ln m.json hard.json
    run -2 --separate-stderr ninfer-pack --force -o hard.json m.json
    expect_only_codes usage
    [ "$(sha256sum a.ninfer a.ninfer.part-0001 w.bin m.json)" = "$before" ]
    no_temporaries .
}

@test "ninfer-split --force -o naming the input's entry or a part is refused before writing (2)" {
    nf_make a.ninfer 600 400
    local before
    before=$(sha256sum a.ninfer a.ninfer.part-0001)
    run -2 --separate-stderr ninfer-split --force -o a.ninfer a.ninfer
    expect_only_codes usage
    run -2 --separate-stderr ninfer-split --force -o a.ninfer.part-0001 a.ninfer
    expect_only_codes usage
    # the output's parts would overwrite the input's parts
    run -2 --separate-stderr ninfer-split --force --max-file-bytes 4800 -o a.ninfer a.ninfer
    expect_only_codes usage
    [ "$(sha256sum a.ninfer a.ninfer.part-0001)" = "$before" ]
    no_temporaries .
}

# ---- readers do not trust the file system ---------------------------------------------

# reader_refuses ARTIFACT — every reader of the part set exits 3 with io or
# part-missing, within 10 s.
reader_refuses() {
    run -3 --separate-stderr timeout 10 "$NF_BIN/ninfer-verify" "$1"
    expect_code io
    run -3 --separate-stderr timeout 10 "$NF_BIN/ninfer-cat" --object r.tok "$1"
    expect_code io
    run -3 --separate-stderr timeout 10 "$NF_BIN/ninfer-cat" "$1"
    expect_code io
    run -3 --separate-stderr timeout 10 "$NF_BIN/ninfer-split" -o out/s.ninfer "$1"
    expect_code io
    [ ! -e out/s.ninfer ]
}

@test "a part that is a FIFO is refused as io (3) without hanging" {
    nf_make a.ninfer 600 400
    rm a.ninfer.part-0001
    mkfifo a.ninfer.part-0001
    reader_refuses a.ninfer
}

@test "a part that is a directory is refused as io (3)" {
    nf_make a.ninfer 600 400
    rm a.ninfer.part-0001
    mkdir a.ninfer.part-0001
    reader_refuses a.ninfer
}

@test "a part that is a device (/dev/zero) is refused as io (3)" {
    nf_make a.ninfer 600 400
    rm a.ninfer.part-0001
    ln -s /dev/zero a.ninfer.part-0001
    reader_refuses a.ninfer
}

@test "an entry that is a FIFO, a directory or a device is refused as io (3) without hanging" {
    mkfifo fifo.ninfer
    mkdir dir.ninfer
    ln -s /dev/zero zero.ninfer
    local a
    for a in fifo.ninfer dir.ninfer zero.ninfer; do
        run -3 --separate-stderr timeout 10 "$NF_BIN/ninfer-verify" "$a"
        expect_code io
        run -3 --separate-stderr timeout 10 "$NF_BIN/ninfer-cat" --header "$a"
        expect_code io
    done
}

# ---- a file that changes length while it is read -----------------------------------------

# shrink_source — s.ninfer: an entry holding 4096 payload bytes and a sparse
# part holding the rest of a P-byte resource, with its digest.
shrink_source() {
    local sum
    sum=$(head -c $P /dev/zero | sha256sum | cut -d' ' -f1)
    printf '{"components": {"text": {"config": {}, "resources": {"blob": "r.big"}}}, "objects": [%s], "bindings": {}, "uses": [], "files": [{"path": null, "payload_bytes": 4096}, {"path": "s.ninfer.part-0001", "payload_bytes": %d}], "metadata": {"integrity": {"sha256": {"r.big": "%s"}}}}' \
        "$(nf_resource r.big 0 $P)" $((P - 4096)) "$sum" > s.json
    nf-mkartifact --catalog s.json --payload zero:$P --segments 4096,$((P - 4096)) -o s.ninfer
}

# cut_part — cut the part to 1 MiB of payload.
cut_part() {
    truncate -s $((4096 + 1048576)) s.ninfer.part-0001
}

# while_blocked CMD... — run CMD with standard output into a FIFO; once its
# first 4096 bytes are read, CMD is blocked on the full pipe well before
# the first MiB of the part; cut the part there, then drain. Sets $status
# and $stderr.
while_blocked() {
    mkfifo out.fifo
    "$@" > out.fifo 2> cmd.err 3>&- &
    local pid=$!
    exec 9< out.fifo
    dd bs=4096 count=1 iflag=fullblock status=none <&9 > /dev/null
    cut_part
    cat <&9 > /dev/null
    exec 9<&-
    status=0
    wait "$pid" || status=$?
    stderr=$(cat cmd.err)
}

@test "a part that shrinks while ninfer-cat reads it -> incomplete (1), no crash" {
    shrink_source
    while_blocked ninfer-cat --object r.big s.ninfer
    echo "$stderr"
    [ "$status" -eq 1 ]
    expect_only_codes incomplete
}

@test "a part that shrinks while ninfer-split streams it -> incomplete (1), no crash" {
    shrink_source
    while_blocked ninfer-split -o - s.ninfer
    echo "$stderr"
    [ "$status" -eq 1 ]
    expect_only_codes incomplete
}

# stopped_at WHAT:N CMD... — run CMD with the sigat shim stopping it (SIGSTOP)
# once N bytes are written or read; cut the part while it is stopped; let
# it go on. Sets $status.
stopped_at() {
    local at=$1
    shift
    # a plain command (not a function) in the background: $! is its pid
    LD_PRELOAD="$NF_TOOLS/libsigat.so" NF_SIG_AT="$at" NF_SIG=STOP "$@" > /dev/null 2> err 3>&- &
    local pid=$!
    if ! wait_until "the program stops itself at $at" is_stopped "$pid"; then
        kill -KILL "$pid" 2> /dev/null
        return 1
    fi
    cut_part
    kill -CONT "$pid"
    status=0
    wait "$pid" || status=$?
    cat err
}

@test "a part that shrinks while ninfer-split writes files -> incomplete (1), nothing published" {
    need_sigat
    shrink_source
    mkdir out
    # stopped 2 MiB into the copy, the part cut to 1 MiB
    stopped_at write:$((2 * 1024 * 1024)) "$NF_BIN/ninfer-split" --no-sync --max-file-bytes 4M -o out/t.ninfer s.ninfer
    [ "$status" -eq 1 ]
    grep -qF ': incomplete: ' err
    [ ! -e out/t.ninfer ]
    no_temporaries out
}

@test "a part that shrinks while ninfer-verify hashes it -> incomplete (1), no crash" {
    need_sigat
    shrink_source
    run -0 --separate-stderr ninfer-verify s.ninfer
    # stopped once 2 MiB of the payload are read, the part cut to 1 MiB
    stopped_at read:$((2 * 1024 * 1024)) "$NF_BIN/ninfer-verify" --threads 1 s.ninfer
    [ "$status" -eq 1 ]
    grep -qF ': incomplete: ' err
}

@test "ulimit -f with standard output on a file: every command's text output -> io (3), not a SIGXFSZ death" {
    nf-mkckpt ckpt > /dev/null
    ninfer-import -q -o m.json ckpt
    ninfer-pack -q -o a.ninfer m.json
    local cmd
    for cmd in "ninfer-import ckpt" "ninfer-quant -i m.json text/layers/*=q8_g32_fp16" \
        "ninfer-bind a.ninfer" "ninfer-bind --plan a.ninfer" "ninfer-bind --json a.ninfer" \
        "ninfer-bind --extract text/embedding a.ninfer" "ninfer-cat --manifest a.ninfer" \
        "ninfer-run --device cpu --iters 1 --json a.ninfer" \
        "ninfer-bench --format q4_g64_fp16,q8_g32_fp16,bf16 --shape 64x128,128x128 --iters 3 --warmup 0 --json"; do
        rm -f s.out
        run -3 --separate-stderr bash -c "ulimit -f 1; exec $cmd > s.out"
        grep -qF ': (stdout): io: write error: File too large' <<< "$stderr"
    done
}
