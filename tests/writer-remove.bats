#!/usr/bin/env bats
# What a writer may remove or replace (issue 11 item 1; DESIGN 3): --force
# replaces the entry and removes only files it proves to be parts of the set
# it replaces (part magic, the old entry's artifact_id, the part_index the
# old files table gives them) -- never a file the old catalog merely names,
# never an input, never a symlink or a file outside the target's directory.
# A file in the way of a new part name is replaced only when it carries the
# part magic. Every case builds its hostile files here and checks, with a
# SHA-256 of every file, that nothing else changed.

load helper

# source_files — a.ninfer (12000 payload bytes, + part 1, artifact_id 0102...0f10, nf-mkartifact's
# default) to split, w.bin, big.bin and m.json (a manifest with file sources
# and an artifact source) to pack, and precious.txt, a user's file.
source_files() {
    NF_P=12000 nf_make a.ninfer 6000 6000
    nf_bytes 16 w.bin
    nf_bytes 12000 big.bin
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [2, 4], "format": "bf16", "layout": "contiguous_le_v1", "source": {"file": "w.bin"}}, {"id": "v", "kind": "tensor", "shape": [2, 4], "format": "bf16", "layout": "contiguous_le_v1", "source": {"artifact": "a.ninfer", "object": "w.a"}}, {"id": "r.big", "kind": "resource", "encoding": "raw_bytes_v1", "source": {"file": "big.bin"}}], "bindings": {}, "uses": []}' > m.json
    echo "my thesis, chapter 1" > precious.txt
}

# hostile_entry ENTRY NAME... — ENTRY, a valid entry whose files table names
# NAME... as its parts (100 bytes each) and whose artifact_id is the
# source's (so the source's own part passes the id check), without writing
# those parts: they are whatever files already carry these names.
hostile_entry() {
    local entry=$1 names segs="500" files i=1 n
    shift
    names=$(IFS=,; echo "$*")
    files='[{"path": null, "payload_bytes": 500}'
    for n in "$@"; do
        files="$files, {\"path\": \"$n\", \"payload_bytes\": 100}"
        segs="$segs,100"
        i=$((i + 1))
    done
    files="$files]"
    mkdir -p h
    NF_P=$((500 + 100 * $#)) NF_FILES=$files nf_catalog > h/c.json
    NF_P=$((500 + 100 * $#)) nf_bytes $((500 + 100 * $#)) h/pay
    nf-mkartifact --catalog h/c.json --payload h/pay --segments "$segs" --part-names "$names" \
        -o "h/$entry"
    cp "h/$entry" "$entry"
    rm -rf h
}

# snapshot_but ENTRY — the snapshot of . without ENTRY and its own parts.
snapshot_but() {
    nf_snapshot . | grep -v " \./$1\( \|\.part-\)"
}

@test "split --force over an entry that names the user's files, the input's part and a source: only the entry is replaced" {
    source_files
    hostile_entry t.ninfer a.ninfer.part-0001 precious.txt m.json w.bin
    local before
    before=$(snapshot_but t.ninfer)
    run -0 --separate-stderr ninfer-split --force -o t.ninfer a.ninfer
    diff <(echo "$before") <(snapshot_but t.ninfer)
    run -0 --separate-stderr ninfer-verify t.ninfer
    run -0 --separate-stderr ninfer-verify a.ninfer
    # into parts too: the new parts take their own names, nothing else moves
    hostile_entry t.ninfer a.ninfer.part-0001 precious.txt m.json w.bin
    run -0 --separate-stderr ninfer-split --force --max-file-bytes 8K -o t.ninfer a.ninfer
    diff <(echo "$before") <(snapshot_but t.ninfer)
    [ -e t.ninfer.part-0001 ]
    run -0 --separate-stderr ninfer-verify t.ninfer
    no_temporaries .
}

@test "pack --force over an entry that names the manifest, a source, an input's part: only the entry is replaced" {
    source_files
    hostile_entry t.ninfer m.json w.bin a.ninfer.part-0001 precious.txt
    local before
    before=$(snapshot_but t.ninfer)
    run -0 --separate-stderr ninfer-pack --force -o t.ninfer m.json
    diff <(echo "$before") <(snapshot_but t.ninfer)
    run -0 --separate-stderr ninfer-verify t.ninfer
    no_temporaries .
}

@test "the old set's parts go only when they prove to be its own (magic, artifact_id, part_index)" {
    source_files
    NF_P=20000 nf_make big.ninfer 4000 4000 4000 4000 4000
    ninfer-split --max-file-bytes 8K -o t.ninfer big.ninfer
    [ -e t.ninfer.part-0004 ]
    [ ! -e t.ninfer.part-0005 ]
    # part 2: another artifact_id; part 3: another part_index; part 4 stays a part
    nf_flip t.ninfer.part-0002 16  # (a poke of ff missed when the id began with ff)
    nf_poke t.ninfer.part-0003 8 07
    local p2 p3
    p2=$(nf_sha256 t.ninfer.part-0002)
    p3=$(nf_sha256 t.ninfer.part-0003)
    # one file: parts 1 and 4 are removed, parts 2 and 3 are not proven
    run -0 --separate-stderr ninfer-split --force -o t.ninfer big.ninfer
    [ ! -e t.ninfer.part-0001 ]
    [ ! -e t.ninfer.part-0004 ]
    [ "$(nf_sha256 t.ninfer.part-0002)" = "$p2" ]
    [ "$(nf_sha256 t.ninfer.part-0003)" = "$p3" ]
    run -0 --separate-stderr ninfer-verify t.ninfer
    no_temporaries .
}

@test "a file without the part magic at a new part's name is refused (io, 3), with or without --force" {
    source_files
    echo "notes" > t.ninfer.part-0001
    local before
    before=$(nf_snapshot .)
    run -3 --separate-stderr ninfer-split --max-file-bytes 8K -o t.ninfer a.ninfer
    expect_only_codes io
    grep -qF 't.ninfer.part-0001: io: a file that is not an NInfer part is in the way' <<< "$stderr"
    expect_unchanged "$before"
    # an entry present, --force: the same
    ninfer-split -o t.ninfer a.ninfer
    before=$(nf_snapshot .)
    run -3 --separate-stderr ninfer-split --force --max-file-bytes 8K -o t.ninfer a.ninfer
    expect_only_codes io
    expect_unchanged "$before"
    run -3 --separate-stderr ninfer-pack --force --max-file-bytes 8K -o t.ninfer m.json
    expect_only_codes io
    expect_unchanged "$before"
}

@test "a symlink at a new part's name is refused (usage, 2): the file it points to, outside, is untouched" {
    source_files
    mkdir -p outside
    ninfer-split --max-file-bytes 8K -o outside/o.ninfer a.ninfer
    ln -s outside/o.ninfer.part-0001 t.ninfer.part-0001
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr ninfer-split --max-file-bytes 8K -o t.ninfer a.ninfer
    expect_only_codes usage
    expect_unchanged "$before"
    run -2 --separate-stderr ninfer-split --force --max-file-bytes 8K -o t.ninfer a.ninfer
    expect_only_codes usage
    expect_unchanged "$before"
    no_temporaries .
}

@test "an old entry whose part is a symlink out of the directory: the link and its target stay" {
    source_files
    mkdir -p outside
    ninfer-split --max-file-bytes 8K -o outside/o.ninfer a.ninfer
    # t.ninfer is o.ninfer's entry beside a link to o's part: a readable set
    cp outside/o.ninfer t.ninfer
    ln -s outside/o.ninfer.part-0001 o.ninfer.part-0001
    ninfer-verify t.ninfer > /dev/null 2>&1 || true
    local before
    before=$(snapshot_but t.ninfer)
    run -0 --separate-stderr ninfer-split --force -o t.ninfer a.ninfer
    diff <(echo "$before") <(snapshot_but t.ninfer)
    [ -L o.ninfer.part-0001 ]
    run -0 --separate-stderr ninfer-verify outside/o.ninfer
}

@test "a leftover with the part magic and no entry is replaced, with a warning; one beyond the set is removed" {
    source_files
    NF_P=20000 nf_make big.ninfer 4000 4000 4000 4000 4000
    ninfer-split --max-file-bytes 8K -o t.ninfer big.ninfer
    rm t.ninfer
    local keep
    keep=$(nf_snapshot . | grep -v ' \./t\.ninfer')
    run -0 --separate-stderr ninfer-split --max-file-bytes 12K -o t.ninfer big.ninfer
    grep -qF 't.ninfer.part-0001: replacing a leftover part with no entry' <<< "$stderr"
    grep -qF 't.ninfer.part-0004: removing a leftover part with no entry' <<< "$stderr"
    [ ! -e t.ninfer.part-0004 ]
    diff <(echo "$keep") <(nf_snapshot . | grep -v ' \./t\.ninfer')
    run -0 --separate-stderr ninfer-verify t.ninfer
    no_temporaries .
}

@test "stale temporaries: only regular files named like ours, of a dead process, are removed" {
    source_files
    local dead
    sh -c 'exit 0' &
    dead=$!
    wait "$dead"
    : > ".t.ninfer.tmp-$dead-AbCdEf"          # ours, dead: removed
    mkdir ".t.ninfer.tmp-$dead-GhIjKl"        # a directory: kept
    ln -s precious.txt ".t.ninfer.tmp-$dead-MnOpQr" # a symlink: kept
    : > ".t.ninfer.tmp-$dead-x"               # not mkstemp's six: kept
    : > ".t.ninfer.tmp-$dead-StUvWx.bak"      # not ours: kept
    run -0 --separate-stderr ninfer-split -o t.ninfer a.ninfer
    [ ! -e ".t.ninfer.tmp-$dead-AbCdEf" ]
    [ -d ".t.ninfer.tmp-$dead-GhIjKl" ]
    [ -L ".t.ninfer.tmp-$dead-MnOpQr" ]
    [ -e ".t.ninfer.tmp-$dead-x" ]
    [ -e ".t.ninfer.tmp-$dead-StUvWx.bak" ]
    [ "$(cat precious.txt)" = "my thesis, chapter 1" ]
}

@test "--force onto a copy of an entry: the parts the original still uses stay, with a warning (red-team B3)" {
    source_files
    NF_P=20000 nf_make big.ninfer 4000 4000 4000 4000 4000
    ninfer-split --max-file-bytes 8K -o t.ninfer big.ninfer
    [ -e t.ninfer.part-0004 ]
    [ ! -e t.ninfer.part-0005 ]
    cp t.ninfer u.ninfer
    run -0 ninfer-verify t.ninfer u.ninfer
    local before
    before=$(snapshot_but u.ninfer)
    # u.ninfer names t.ninfer.part-0001..4, proven parts of u's set: not u's names
    run -0 --separate-stderr ninfer-split --force -o u.ninfer a.ninfer
    [ "$stderr" = "$(for i in 1 2 3 4; do echo "ninfer-split: ./t.ninfer.part-000$i: kept: a part of the replaced entry, but not named after it (another entry may use it)"; done)" ]
    diff <(echo "$before") <(snapshot_but u.ninfer)
    [ ! -e u.ninfer.part-0001 ]
    run -0 --separate-stderr ninfer-verify t.ninfer u.ninfer
    # the same into parts: u's own parts are new, t's stay
    cp t.ninfer u.ninfer
    run -0 --separate-stderr ninfer-split --force --max-file-bytes 8K -o u.ninfer a.ninfer
    [ "${#stderr_lines[@]}" -eq 4 ]
    diff <(echo "$before") <(snapshot_but u.ninfer)
    [ -e u.ninfer.part-0001 ]
    run -0 --separate-stderr ninfer-verify t.ninfer u.ninfer
    # and u's own old parts do go when u is replaced again by one file
    run -0 --separate-stderr ninfer-split --force -o u.ninfer a.ninfer
    [ -z "$stderr" ]
    [ ! -e u.ninfer.part-0001 ]
    diff <(echo "$before") <(snapshot_but u.ninfer)
    no_temporaries .
}
