#!/usr/bin/env bats
# Faults (issue 6; DESIGN 3 and 12; spec 11.4): writers killed at random
# points never publish a target that fails ninfer-verify, and a rerun
# succeeds; signals remove temporaries; full disks, I/O errors and file-size
# limits give a clean `io` (exit 3) and leave nothing; an output naming an
# input is refused before anything is written; readers refuse parts that are
# FIFOs, directories or devices without hanging, and report a file that
# shrinks while it is read.
#
# The large inputs are sparse and live in /dev/shm when it has room, so the
# kill trials stay fast; --no-sync makes the kills land mid-write.

load helper

P=$((192 * 1024 * 1024)) # payload of the large artifacts

teardown() {
    if [ -n "${FAST:-}" ] && [ "${FAST#/dev/shm/}" != "$FAST" ]; then
        rm -rf "$FAST"
    fi
}

# fast_dir — cd into a scratch directory in RAM when /dev/shm has 3 GB free,
# else stay in the test's own directory.
fast_dir() {
    local free
    free=$(df -Pk /dev/shm 2> /dev/null | awk 'NR == 2 { print $4 }')
    if [ -n "$free" ] && [ "$free" -gt 3000000 ] && [ -w /dev/shm ]; then
        FAST=$(mktemp -d /dev/shm/nf-faults.XXXXXX)
        cd "$FAST"
    fi
}

no_wrapper() {
    [ -z "${NF_WRAPPER:-}" ] || skip "signals and timing are not tested under NF_WRAPPER"
}

# shim — the write-failure shim cannot ride with ASan (it must come first in
# LD_PRELOAD): skip under sanitizers.
shim() {
    [ -z "${NF_SANITIZE:-}" ] || skip "the LD_PRELOAD write shim does not run under sanitizers (ASan must be first in LD_PRELOAD)"
    [ -e "$NF_TOOLS/libfailwrite.so" ] || skip "build/tools/libfailwrite.so is not built"
}

# big_source — big.ninfer: a 192 MiB sparse single-file artifact holding a
# bf16 tensor and a resource with the rest.
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

# kill_trials TARGET CMD... — CMD writes TARGET (under out/). Time one full
# run, then 20 times: start CMD, SIGKILL it at a random moment of that time
# (x1.2), and check:
#   - a published TARGET verifies (its parts are there, lengths and digests);
#   - else a rerun of CMD succeeds, replacing what the dead run left (parts
#     without an entry, temporaries of a dead process), and verifies;
#   - no temporaries remain.
kill_trials() {
    local target=$1 dir
    shift
    dir=$(dirname "$target")
    local t0 t1 ms i delay pid published=0 mid=0 early=0 delays=""
    rm -rf "$dir"
    t0=$(date +%s%N)
    "$@" 2> /dev/null
    t1=$(date +%s%N)
    ms=$(((t1 - t0) / 1000000 + 1))
    run -0 --separate-stderr ninfer-verify "$target"
    for i in $(seq 20); do
        rm -rf "$dir"
        delay=$((RANDOM * (ms * 12 / 10 + 1) / 32768))
        delays="$delays $delay"
        "$@" 2> /dev/null &
        pid=$!
        sleep "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))"
        kill -KILL "$pid" 2> /dev/null || true
        wait "$pid" 2> /dev/null || true
        if [ -e "$target" ]; then
            published=$((published + 1))
            run -0 --separate-stderr ninfer-verify "$target" ||
                { echo "trial $i (kill after ${delay} ms): published target fails verify" >&2; return 1; }
        else
            if [ -n "$(ls -A "$dir" 2> /dev/null)" ]; then
                mid=$((mid + 1))
            else
                early=$((early + 1))
            fi
            run -0 --separate-stderr "$@" ||
                { echo "trial $i (kill after ${delay} ms): the rerun failed" >&2; return 1; }
            run -0 --separate-stderr ninfer-verify "$target"
        fi
        no_temporaries "$dir"
    done
    echo "# $*: one run ${ms} ms; kills at${delays} ms: $mid mid-write, $published after publication, $early before any output" >&3
    [ "$mid" -gt 0 ]
}

# ---- SIGKILL at random points ------------------------------------------------------

@test "ninfer-split killed with SIGKILL at 20 random points: never a bad target, a rerun succeeds" {
    no_wrapper
    fast_dir
    big_source
    kill_trials out/s.ninfer "$NF_BIN/ninfer-split" --no-sync --max-file-bytes 64M -o out/s.ninfer big.ninfer
}

@test "ninfer-pack killed with SIGKILL at 20 random points: never a bad target, a rerun succeeds" {
    no_wrapper
    fast_dir
    big_manifest
    kill_trials out/p.ninfer "$NF_BIN/ninfer-pack" --no-sync --max-file-bytes 64M -o out/p.ninfer big.manifest
}

@test "parts of an interrupted run without an entry are replaced by the rerun (split, pack)" {
    fast_dir
    big_source
    big_manifest
    ninfer-split --no-sync --max-file-bytes 64M -o out/s.ninfer big.ninfer
    rm out/s.ninfer
    # and one stale part beyond what the new set needs
    cp out/s.ninfer.part-0001 out/s.ninfer.part-0009
    run -0 --separate-stderr ninfer-split --no-sync --max-file-bytes 64M -o out/s.ninfer big.ninfer
    run -0 --separate-stderr ninfer-verify out/s.ninfer
    ninfer-pack --no-sync --max-file-bytes 64M -o out/p.ninfer big.manifest
    rm out/p.ninfer
    run -0 --separate-stderr ninfer-pack --no-sync --max-file-bytes 64M -o out/p.ninfer big.manifest
    run -0 --separate-stderr ninfer-verify out/p.ninfer
    no_temporaries out
}

# ---- SIGINT, SIGTERM -------------------------------------------------------------------

# interrupt SIGNAL CMD... — start CMD (writing under out/), wait for its
# temporaries, send SIGNAL: it dies of SIGNAL and leaves nothing in out/.
interrupt() {
    local sig=$1 pid st=0 i
    shift
    mkdir -p out
    set -m
    "$@" 2> err &
    pid=$!
    set +m
    for i in $(seq 400); do
        [ -n "$(find out -name '.*tmp*' -print -quit)" ] && break
        sleep 0.01
    done
    kill -s "$sig" "$pid" 2> /dev/null || true
    wait "$pid" || st=$?
    cat err
    if [ "$st" -eq 0 ]; then
        skip "the run finished before the signal arrived"
    fi
    [ "$st" -eq $((128 + $(kill -l "$sig"))) ]
    no_temporaries out
    nothing_left out
}

@test "SIGINT and SIGTERM during ninfer-pack remove its temporaries" {
    no_wrapper
    fast_dir
    P=$((2 * 1024 * 1024 * 1024)) big_manifest
    interrupt INT "$NF_BIN/ninfer-pack" --no-sync --max-file-bytes 512M -o out/p.ninfer big.manifest
    rm -rf out
    interrupt TERM "$NF_BIN/ninfer-pack" --no-sync --max-file-bytes 512M -o out/p.ninfer big.manifest
}

@test "SIGTERM during ninfer-split from a stream removes its temporaries" {
    no_wrapper
    fast_dir
    P=$((2 * 1024 * 1024 * 1024)) big_source
    mkdir -p out
    set -m
    # $! is the last command of the pipeline: the split
    "$NF_BIN/ninfer-cat" big.ninfer | "$NF_BIN/ninfer-split" --no-sync --max-file-bytes 512M -o out/s.ninfer - 2> err &
    local pid=$! i st=0
    set +m
    for i in $(seq 400); do
        [ -n "$(find out -name '.*tmp*' -print -quit)" ] && break
        sleep 0.01
    done
    kill -TERM "$pid" 2> /dev/null || true
    wait "$pid" || st=$?
    cat err
    [ "$st" -ne 0 ] || skip "the split finished before the signal"
    [ "$st" -eq 143 ]
    no_temporaries out
    nothing_left out
}

# ---- full disks, I/O errors, file-size limits ------------------------------------------

@test "ninfer-pack: ENOSPC and EIO (write shim) -> io (3), no temporaries, no target" {
    shim
    fast_dir
    big_manifest
    local after err
    for err in ENOSPC EIO EFBIG; do
        for after in 0 5000 70000000 150000000; do
            run -3 --separate-stderr nf_failwrite "$after" "$err" ninfer-pack --no-sync --max-file-bytes 64M -o out/p.ninfer big.manifest
            expect_only_codes io
            no_temporaries out
            nothing_left out
        done
    done
}

@test "ninfer-split into parts: ENOSPC after every part boundary (write shim) -> io (3), nothing left" {
    shim
    fast_dir
    big_source
    local after
    for after in 4096 67108864 134217728 201000000; do
        run -3 --separate-stderr nf_failwrite "$after" ENOSPC ninfer-split --no-sync --max-file-bytes 64M -o out/s.ninfer big.ninfer
        expect_only_codes io
        no_temporaries out
        nothing_left out
    done
}

@test "ulimit -f (EFBIG, no SIGXFSZ death): split, pack and a stream to a file -> io (3), nothing left" {
    fast_dir
    big_source
    big_manifest
    run -3 --separate-stderr bash -c 'ulimit -f 10000; exec "$0" "$@"' \
        "$NF_BIN/ninfer-split" --no-sync --max-file-bytes 64M -o out/s.ninfer big.ninfer
    expect_only_codes io
    grep -q 'File too large' <<< "$stderr"
    nothing_left out
    run -3 --separate-stderr bash -c 'ulimit -f 10000; exec "$0" "$@"' \
        "$NF_BIN/ninfer-pack" --no-sync -o out/p.ninfer big.manifest
    expect_only_codes io
    nothing_left out
    run -3 --separate-stderr bash -c 'ulimit -f 10000; exec "$0" "$@" > s.out' \
        "$NF_BIN/ninfer-cat" big.ninfer
    expect_only_codes io
    run -3 --separate-stderr bash -c 'ulimit -f 10000; exec "$0" "$@" > s.out' \
        "$NF_BIN/ninfer-pack" -o - big.manifest
    expect_only_codes io
    run -3 --separate-stderr bash -c 'ulimit -f 10000; exec "$0" "$@" > s.out' \
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
# part holding the rest of a 192 MiB resource.
shrink_source() {
    printf '{"components": {"text": {"config": {}, "resources": {"blob": "r.big"}}}, "objects": [%s], "bindings": {}, "uses": [], "files": [{"path": null, "payload_bytes": 4096}, {"path": "s.ninfer.part-0001", "payload_bytes": %d}]}' \
        "$(nf_resource r.big 0 $P)" $((P - 4096)) > s.json
    nf-mkartifact --catalog s.json --payload zero:$P --segments 4096,$((P - 4096)) -o s.ninfer
}

# while_blocked CMD... — run CMD with stdout into a pipe nobody reads for a
# second; meanwhile cut the part to 1 MiB; then drain. Sets $status, $stderr.
while_blocked() {
    local st
    (
        set -o pipefail
        "$@" 2> cmd.err | { sleep 1; cat > /dev/null; }
    ) &
    local pid=$!
    sleep 0.4
    truncate -s $((4096 + 1048576)) s.ninfer.part-0001
    st=0
    wait "$pid" || st=$?
    status=$st
    stderr=$(cat cmd.err)
}

@test "a part that shrinks while ninfer-cat reads it -> length (1), no crash" {
    fast_dir
    shrink_source
    while_blocked "$NF_BIN/ninfer-cat" --object r.big s.ninfer
    echo "$stderr"
    [ "$status" -eq 1 ]
    expect_code length
}

@test "a part that shrinks while ninfer-split streams it -> length (1), no crash" {
    fast_dir
    shrink_source
    while_blocked "$NF_BIN/ninfer-split" -o - s.ninfer
    echo "$stderr"
    [ "$status" -eq 1 ]
    expect_code length
}

@test "a part that shrinks while ninfer-split writes files -> length (1), nothing published" {
    no_wrapper
    fast_dir
    P=$((2 * 1024 * 1024 * 1024)) shrink_source
    mkdir out
    "$NF_BIN/ninfer-split" --no-sync --max-file-bytes 256M -o out/t.ninfer s.ninfer 2> err &
    local pid=$! i st=0
    # wait until it has read some of the part, then cut it
    for i in $(seq 400); do
        [ -n "$(find out -name '.*tmp*' -size +1M -print -quit)" ] && break
        sleep 0.005
    done
    truncate -s $((4096 + 1048576)) s.ninfer.part-0001
    wait "$pid" || st=$?
    cat err
    if [ "$st" -eq 0 ]; then
        skip "the split finished before the part was cut"
    fi
    [ "$st" -eq 1 ]
    grep -qF ': length: ' err
    [ ! -e out/t.ninfer ]
    no_temporaries out
}

@test "a part that shrinks while ninfer-verify hashes it -> length (1), no crash" {
    no_wrapper
    fast_dir
    P=$((512 * 1024 * 1024))
    # digests make verify read every byte: a 512 MiB object of zeros, hashed
    local sum
    sum=$(head -c $P /dev/zero | sha256sum | cut -d' ' -f1)
    printf '{"components": {"text": {"config": {}, "resources": {"blob": "r.big"}}}, "objects": [%s], "bindings": {}, "uses": [], "files": [{"path": null, "payload_bytes": 4096}, {"path": "s.ninfer.part-0001", "payload_bytes": %d}], "metadata": {"integrity": {"sha256": {"r.big": "%s"}}}}' \
        "$(nf_resource r.big 0 $P)" $((P - 4096)) "$sum" > s.json
    nf-mkartifact --catalog s.json --payload zero:$P --segments 4096,$((P - 4096)) -o s.ninfer
    run -0 --separate-stderr ninfer-verify s.ninfer
    "$NF_BIN/ninfer-verify" s.ninfer > /dev/null 2> err &
    local pid=$! i st=0 rchar
    for i in $(seq 400); do
        rchar=$(awk '/^rchar:/ { print $2 }' "/proc/$pid/io" 2> /dev/null || echo 0)
        [ "${rchar:-0}" -gt 16777216 ] && break
        sleep 0.005
    done
    truncate -s $((4096 + 1048576)) s.ninfer.part-0001
    wait "$pid" || st=$?
    cat err
    if [ "$st" -eq 0 ]; then
        skip "verify finished before the part was cut"
    fi
    [ "$st" -eq 1 ]
    grep -qF ': length: ' err
}
