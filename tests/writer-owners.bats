#!/usr/bin/env bats
# Leftovers and --force (issue 17 items 1 and 2; DESIGN 3). A part is a
# leftover only when no entry in the target's directory owns it: an entry
# (a regular file there with the entry magic, whatever its name) owns every
# part that carries its artifact_id, since a renamed entry still reads
# (spec 2.1). --force moves the old entry (and what is in the way of each
# new part) aside under the directory lock, publishes, then removes them; a
# failure in between puts everything back. Every case checks, with a
# SHA-256 of every file, what changed and what did not.

load helper

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    nf_bytes 200000 big.bin
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "r.big", "kind": "resource", "encoding": "raw_bytes_v1", "source": {"file": "big.bin"}}], "bindings": {}, "uses": []}' > m.json
}

# asides — what a --force publication moved aside (.NAME.old-PID).
asides() {
    find . -maxdepth 1 -name '.*.old-*' -print
}

# snapshot_of NAME — the snapshot lines of NAME and its parts.
snapshot_of() {
    nf_snapshot . | grep -F " ./$1"
}

@test "a renamed entry owns its parts: pack -o the old name neither deletes nor replaces them (the issue's case)" {
    ninfer-pack -q --no-sync --max-file-bytes 64K -o model.ninfer m.json
    [ -e model.ninfer.part-0003 ]
    mv model.ninfer model-v1.ninfer
    run -0 --separate-stderr ninfer-verify model-v1.ninfer
    local before
    before=$(nf_snapshot .)
    # into parts: the new part names are model-v1's parts, owned: refused
    run -3 --separate-stderr ninfer-pack -q --no-sync --max-file-bytes 64K -o model.ninfer m.json
    expect_only_codes io
    grep -qF 'ninfer-pack: ./model.ninfer.part-0001: io: this part belongs to the entry model-v1.ninfer beside it (no leftover); refusing to replace it' <<< "$stderr"
    expect_unchanged "$before"
    # into one file: model-v1's parts are beyond the new set, owned: kept, no warning
    run -0 --separate-stderr ninfer-pack -q --no-sync -o model.ninfer m.json
    [ -z "$stderr" ]
    diff <(echo "$before") <(nf_snapshot . | grep -v ' \./model\.ninfer ')
    run -0 --separate-stderr ninfer-verify model-v1.ninfer model.ninfer
    # split the same way (from a stream: model-v1's parts are no input)
    rm model.ninfer
    ninfer-cat model-v1.ninfer > s.ninfer
    before=$(nf_snapshot .)
    run -3 --separate-stderr ninfer-split --no-sync --max-file-bytes 64K -o model.ninfer - < s.ninfer
    expect_only_codes io
    expect_unchanged "$before"
    no_temporaries .
}

@test "an entry under any name owns its parts, also a hidden one; with it gone they are leftovers again" {
    ninfer-pack -q --no-sync --max-file-bytes 64K -o t.ninfer m.json
    mv t.ninfer .backup
    local before
    before=$(nf_snapshot .)
    run -3 --separate-stderr ninfer-pack -q --no-sync --max-file-bytes 64K -o t.ninfer m.json
    grep -qF 'belongs to the entry .backup beside it' <<< "$stderr"
    expect_unchanged "$before"
    # a symlink to a file that is no entry, a dangling one, a FIFO, a
    # symlink to a FIFO or a part with the entry's id own nothing (and the
    # FIFO is never opened blocking)
    rm .backup
    ln -s big.bin link.ninfer
    ln -s nowhere dangling.ninfer
    mkfifo fifo.ninfer
    ln -s fifo.ninfer fifo-link.ninfer
    run -0 --separate-stderr ninfer-pack -q --no-sync --max-file-bytes 64K -o t.ninfer m.json
    grep -qF 't.ninfer.part-0001: replacing a leftover part with no entry' <<< "$stderr"
    run -0 --separate-stderr ninfer-verify t.ninfer
    [ -p fifo.ninfer ]
    [ -L link.ninfer ]
    no_temporaries .
    [ -z "$(asides)" ]
}

@test "a file beside the parts whose header cannot be read may be an entry: refused (io, 3), nothing deleted" {
    command -v setpriv > /dev/null || skip "setpriv is missing"
    need_shim # runs as another user: the sanitizers' and wrapper's paths may not be theirs
    # in a directory of its own: bats keeps its own unreadable temporaries
    # (run --separate-stderr) in the test's directory, which would be read too
    mkdir w && mv big.bin m.json w/ && cd w
    ninfer-pack -q --no-sync --max-file-bytes 64K -o t.ninfer m.json
    rm t.ninfer
    echo secret > locked
    chmod 000 locked
    chmod 777 .
    chmod a+r ./*
    chmod 000 locked
    local as=()
    [ "$(id -u)" -ne 0 ] || as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    local before
    before=$(nf_snapshot .)
    run -3 --separate-stderr "${as[@]}" "$NF_BIN/ninfer-pack" -q --no-sync --max-file-bytes 64K -o t.ninfer m.json
    expect_only_codes io
    grep -qF 't.ninfer.part-0001: io: cannot tell whether this part is a leftover: locked beside it cannot be read' <<< "$stderr"
    expect_unchanged "$before"
    # one file: the leftovers beyond it are kept, with a warning
    run -0 --separate-stderr "${as[@]}" "$NF_BIN/ninfer-pack" -q --no-sync -o t.ninfer m.json
    grep -qF 't.ninfer.part-0001: kept: cannot tell whether an entry owns this part (locked beside it cannot be read)' <<< "$stderr"
    diff <(echo "$before") <(nf_snapshot . | grep -v ' \./t\.ninfer ')
}

@test "an entry reached through a symlink owns the parts beside the link (the reader looks for them there)" {
    ninfer-pack -q --no-sync --max-file-bytes 64K -o model.ninfer m.json
    mkdir archive
    mv model.ninfer archive/model-v1.ninfer
    ln -s archive/model-v1.ninfer model-v1.ninfer
    run -0 --separate-stderr ninfer-verify model-v1.ninfer
    local before
    before=$(nf_snapshot .)
    run -3 --separate-stderr ninfer-pack -q --no-sync --max-file-bytes 64K -o model.ninfer m.json
    expect_only_codes io
    grep -qF 'ninfer-pack: ./model.ninfer.part-0001: io: this part belongs to the entry model-v1.ninfer beside it (no leftover); refusing to replace it' <<< "$stderr"
    expect_unchanged "$before"
    # into one file: the parts beyond it are owned, kept without a word (they
    # were removed as leftovers, and model-v1.ninfer no longer read)
    run -0 --separate-stderr ninfer-pack -q --no-sync -o model.ninfer m.json
    [ -z "$stderr" ]
    diff <(echo "$before") <(nf_snapshot . | grep -v ' \./model\.ninfer ')
    run -0 --separate-stderr ninfer-verify model-v1.ninfer model.ninfer
    no_temporaries .
    # a symlink to the target itself shows the new set once it is published:
    # it owns nothing, and --force replaces the old parts as ever
    rm model.ninfer
    ninfer-pack -q --no-sync --max-file-bytes 64K -o t.ninfer m.json
    ln -s t.ninfer current.ninfer
    run -0 --separate-stderr ninfer-pack -q --no-sync --force --max-file-bytes 100K -o t.ninfer m.json
    [ -z "$stderr" ]
    [ ! -e t.ninfer.part-0003 ]
    run -0 --separate-stderr ninfer-verify current.ninfer
    [ -z "$(asides)" ]
}

@test "an entry cut short inside its header (its artifact_id unread) may own the parts: refused (io, 3), nothing deleted" {
    ninfer-pack -q --no-sync --max-file-bytes 64K -o t.ninfer m.json
    mkdir keep
    mv t.ninfer keep/
    local n before
    for n in 8 20 31; do
        head -c "$n" keep/t.ninfer > cut.ninfer
        before=$(nf_snapshot .)
        run -3 --separate-stderr ninfer-pack -q --no-sync --max-file-bytes 64K -o t.ninfer m.json
        expect_only_codes io
        grep -qF 't.ninfer.part-0001: io: cannot tell whether this part is a leftover: cut.ninfer beside it is an entry cut short inside its header (it may be the one that owns it); refusing to replace it' <<< "$stderr"
        expect_unchanged "$before"
    done
    # one file: the parts beyond it are kept, with a warning
    run -0 --separate-stderr ninfer-pack -q --no-sync -o t.ninfer m.json
    grep -qF 't.ninfer.part-0001: kept: cannot tell whether an entry owns this part (cut.ninfer beside it is an entry cut short inside its header)' <<< "$stderr"
    diff <(echo "$before") <(nf_snapshot . | grep -v ' \./t\.ninfer ')
    # 7 bytes of the magic, or a file that only begins like one, own nothing
    rm t.ninfer
    head -c 7 keep/t.ninfer > cut.ninfer
    run -0 --separate-stderr ninfer-pack -q --no-sync --max-file-bytes 64K -o t.ninfer m.json
    grep -qF 't.ninfer.part-0001: replacing a leftover part with no entry' <<< "$stderr"
    run -0 --separate-stderr ninfer-verify t.ninfer
}

@test "--force -o naming another entry's part: refused (io, 3), nothing replaced; a part no entry owns is the user's to replace" {
    ninfer-pack -q --no-sync --max-file-bytes 64K -o y.ninfer m.json
    ninfer-cat y.ninfer > s.ninfer
    local before
    before=$(nf_snapshot .)
    run -3 --separate-stderr ninfer-pack -q --no-sync --force -o y.ninfer.part-0001 m.json
    expect_only_codes io
    [ "$stderr" = "ninfer-pack: y.ninfer.part-0001: io: the output is a part of the entry y.ninfer beside it (--force replaces an entry, never another entry's part); refusing to replace it" ]
    run -3 --separate-stderr ninfer-split --no-sync --force --max-file-bytes 64K -o y.ninfer.part-0002 - < s.ninfer
    expect_only_codes io
    expect_unchanged "$before"
    run -0 --separate-stderr ninfer-verify y.ninfer
    # with the entry gone the parts are leftovers: --force may take one
    rm y.ninfer
    run -0 --separate-stderr ninfer-pack -q --no-sync --force -o y.ninfer.part-0001 m.json
    run -0 --separate-stderr ninfer-verify y.ninfer.part-0001
}

@test "--force over an entry whose copy shares its parts: refused (io, 3) when they are in the way, kept when beyond" {
    ninfer-pack -q --no-sync --max-file-bytes 64K -o t.ninfer m.json
    cp t.ninfer copy.ninfer
    local before
    before=$(nf_snapshot .)
    run -3 --separate-stderr ninfer-pack -q --no-sync --force --max-file-bytes 64K -o t.ninfer m.json
    expect_only_codes io
    grep -qF 'this part of the entry being replaced is also used by the entry copy.ninfer (a copy shares its parts)' <<< "$stderr"
    expect_unchanged "$before"
    run -0 --separate-stderr ninfer-pack -q --no-sync --force -o t.ninfer m.json
    grep -qF 't.ninfer.part-0001: kept: a part of the replaced entry that the entry copy.ninfer beside it also uses' <<< "$stderr"
    run -0 --separate-stderr ninfer-verify t.ninfer copy.ninfer
    diff <(echo "$before" | grep -v ' \./t\.ninfer ') <(nf_snapshot . | grep -v ' \./t\.ninfer ')
    [ -z "$(asides)" ]
}

@test "--force that fails at any step of its publication (rename shim) puts the old set back byte for byte" {
    need_shim
    NF_P=20000 nf_make a.ninfer
    local k before
    # renames: the old entry aside, part 1 aside, part 1, part 2 aside,
    # part 2, the entry
    for k in 1 2 3 4 5 6; do
        rm -f t.ninfer*
        ninfer-split --no-sync --max-file-bytes 8K -o t.ninfer a.ninfer
        [ -e t.ninfer.part-0004 ]
        before=$(nf_snapshot .)
        run -3 --separate-stderr env NF_FAIL_RENAME=$k NF_FAIL_ERRNO=ENOSPC LD_PRELOAD="$NF_TOOLS/libfailwrite.so" \
            "$NF_BIN/ninfer-split" --no-sync --force --max-file-bytes 12K -o t.ninfer a.ninfer
        echo "rename $k: $stderr"
        expect_only_codes io
        grep -qF 'No space left on device' <<< "$stderr"
        expect_unchanged "$before"
        run -0 --separate-stderr ninfer-verify t.ninfer
        [ -z "$(asides)" ]
        no_temporaries .
    done
    # pack, into one file (the entry aside, then the new entry fails)
    before=$(nf_snapshot .)
    run -3 --separate-stderr env NF_FAIL_RENAME=2 LD_PRELOAD="$NF_TOOLS/libfailwrite.so" \
        "$NF_BIN/ninfer-pack" -q --no-sync --force -o t.ninfer m.json
    expect_only_codes io
    expect_unchanged "$before"
    run -0 --separate-stderr ninfer-verify t.ninfer
}

@test "--force that succeeds leaves nothing aside: the old entry and its surplus are gone" {
    ninfer-pack -q --no-sync --max-file-bytes 64K -o t.ninfer m.json
    [ -e t.ninfer.part-0003 ]
    run -0 --separate-stderr ninfer-pack -q --no-sync --force --max-file-bytes 128K -o t.ninfer m.json
    [ -z "$stderr" ]
    [ -e t.ninfer.part-0001 ]
    [ ! -e t.ninfer.part-0002 ]
    [ -z "$(asides)" ]
    run -0 --separate-stderr ninfer-verify t.ninfer
    no_temporaries .
}
