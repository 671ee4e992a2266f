#!/usr/bin/env bats
# Writers racing for one target (issue 11 items 2 and 5; DESIGN 3):
# publication is serialized by a flock on the target's directory and the
# entry is published with RENAME_NOREPLACE, so of two writers the second to
# publish fails with io (exit 3) and leaves nothing of its own -- it never
# replaces the other's entry, nor removes its parts as "leftovers". A
# writer holds thousands of temporaries and removes every one on a signal.
#
# Every race is forced, not timed: writer B reads a stream from a FIFO that
# the test feeds only up to a point, so B holds its temporaries, blocked,
# while writer A runs to the end; then the test lets B finish.

load helper

P=12000

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    NF_P=$P nf_make a.ninfer
    cp a.ninfer a.stream # a single-file artifact is its own stream (DESIGN 4)
    mkdir out
}

# id_of ENTRY — the artifact_id in ENTRY's header.
id_of() {
    od -An -tx1 -j16 -N16 "$1" | tr -d ' \n'
}

# the set in out/ without writer temporaries
set_snapshot() {
    nf_snapshot out | grep -v '/\.[^/]*\.tmp-'
}

# stall_b OPTIONS... — writer B: ninfer-split OPTIONS -o out/t.ninfer - on a
# stream that stops 100 bytes into the payload, held there with its
# temporaries in out/.
stall_b() {
    stall_start a.stream $((4096 + 100)) ninfer-split --no-sync --max-file-bytes 8K "$@" -o out/t.ninfer -
    wait_until "writer B holds its temporaries" temps_in out 3
}

# b_lost — B, let go, fails with io (3) and leaves nothing of its own: what
# is in out/ is exactly SNAPSHOT, and it verifies as artifact ID.
b_lost() {
    stall_finish
    echo "B: status $STALL_STATUS"
    [ "$STALL_STATUS" -eq 3 ]
    stderr=$(cat stall.err)
    expect_only_codes io
    grep -qF 'another writer published this output while this one ran; nothing was replaced' stall.err
    no_temporaries out
    [ "$(set_snapshot)" = "$1" ]
    run -0 --separate-stderr ninfer-verify out/t.ninfer
    [ "$(id_of out/t.ninfer)" = "$2" ]
}

@test "two splits to one target: the one that publishes second fails (io, 3) and replaces nothing" {
    stall_b
    run -0 --separate-stderr ninfer-split --no-sync --max-file-bytes 8K -o out/t.ninfer a.ninfer
    [ -e out/t.ninfer.part-0002 ]
    b_lost "$(set_snapshot)" "$(id_of out/t.ninfer)"
}

@test "--force does not replace an entry that appeared while the writer ran" {
    stall_b --force
    run -0 --separate-stderr ninfer-split --no-sync --max-file-bytes 8K -o out/t.ninfer a.ninfer
    b_lost "$(set_snapshot)" "$(id_of out/t.ninfer)"
}

@test "--force replaces the entry it found, not one another writer put there meanwhile" {
    ninfer-split --no-sync --max-file-bytes 8K -o out/t.ninfer a.ninfer
    stall_b --force
    # A replaces the entry B set out to replace
    run -0 --separate-stderr ninfer-split --no-sync --force -o out/t.ninfer a.ninfer
    [ ! -e out/t.ninfer.part-0001 ]
    b_lost "$(set_snapshot)" "$(id_of out/t.ninfer)"
}

@test "parts another writer published are no leftovers: B removes none of them" {
    # leftovers of a dead run: parts, no entry
    ninfer-split --no-sync --max-file-bytes 8K -o out/t.ninfer a.ninfer
    rm out/t.ninfer
    stall_b
    run -0 --separate-stderr ninfer-split --no-sync --max-file-bytes 8K -o out/t.ninfer a.ninfer
    grep -qF 'replacing a leftover part with no entry' <<< "$stderr"
    b_lost "$(set_snapshot)" "$(id_of out/t.ninfer)"
}

@test "pack as the other writer: the stalled split still loses cleanly" {
    nf_bytes $P big.bin
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "r.big", "kind": "resource", "encoding": "raw_bytes_v1", "source": {"file": "big.bin"}}], "bindings": {}, "uses": []}' > m.json
    stall_b
    run -0 --separate-stderr ninfer-pack -q --no-sync --max-file-bytes 8K -o out/t.ninfer m.json
    b_lost "$(set_snapshot)" "$(id_of out/t.ninfer)"
}

@test "two stalled writers let go in turn: the first publishes, the second fails (3)" {
    mkfifo f1 f2
    set -m
    ninfer-split --no-sync --max-file-bytes 8K -o out/t.ninfer - < f1 > /dev/null 2> e1 3>&- &
    local p1=$!
    ninfer-split --no-sync --max-file-bytes 8K -o out/t.ninfer - < f2 > /dev/null 2> e2 3>&- &
    local p2=$!
    set +m
    exec 6> f1 7> f2
    head -c 4196 a.stream >&6
    head -c 4196 a.stream >&7
    wait_until "both writers hold temporaries" temps_in out 6
    tail -c +4197 a.stream >&6
    exec 6>&-
    local s1=0 s2=0
    wait "$p1" || s1=$?
    [ "$s1" -eq 0 ]
    local snap id
    snap=$(set_snapshot)
    id=$(id_of out/t.ninfer)
    tail -c +4197 a.stream >&7
    exec 7>&-
    wait "$p2" || s2=$?
    cat e2
    [ "$s2" -eq 3 ]
    grep -qF ': io: ' e2
    no_temporaries out
    [ "$(set_snapshot)" = "$snap" ]
    [ "$(id_of out/t.ninfer)" = "$id" ]
    run -0 --separate-stderr ninfer-verify out/t.ninfer
}

# many_parts N — big.ninfer, whose split at --max-file-bytes 512K makes an
# entry and N - 1 parts (sparse: nothing but headers is ever written).
many_parts() {
    local n=$1 cap=$((512 * 1024 - 4096))
    local p=$((cap * n))
    printf '{"components": {"text": {"config": {}, "resources": {"blob": "r.big"}}}, "objects": [%s], "bindings": {}, "uses": [], "files": [{"path": null, "payload_bytes": %d}]}' \
        "$(nf_resource r.big 0 $p)" "$p" > big.json
    nf-mkartifact --catalog big.json --payload zero:$p -o big.ninfer
}

@test "5000 temporaries (more than 4096): SIGTERM, SIGINT and SIGHUP remove every one" {
    [ -z "${NF_WRAPPER:-}" ] || skip "5000 files under NF_WRAPPER take too long"
    many_parts 5000
    local sig
    for sig in TERM INT HUP; do
        stall_start big.ninfer 8192 ninfer-split --no-sync --max-file-bytes 512K -o out/t.ninfer -
        wait_until "the writer holds its 5000 temporaries" temps_in out 5000
        stall_signal "$sig"
        echo "SIG$sig: status $STALL_STATUS"
        [ "$STALL_STATUS" -eq $((128 + $(kill -l "$sig"))) ]
        no_temporaries out
        [ -z "$(ls -A out)" ]
    done
}
