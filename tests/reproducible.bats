#!/usr/bin/env bats
# Reproducible output (issue 17; ninfer(5) "Reproducible output"): with
# --reproducible, or SOURCE_DATE_EPOCH set, artifact_id is the first 16
# bytes of the SHA-256 of the catalog as written, so the same inputs and
# options give byte-identical files, streams and SHA256SUMS whatever the
# thread count or the directory the build ran in; --artifact-id gives one.

load helper

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    nf-mkckpt ck > /dev/null
    ninfer-import -q -o m.json ck
    # quantized: the encoders run on the pack's threads
    ninfer-quant -i m.json -o q.json 'text/layers/*=q4_g64_fp16'
}

# id_of FILE — the artifact_id in FILE's header.
id_of() {
    od -An -tx1 -j16 -N16 "$1" | tr -d ' \n'
}

# catalog_id ENTRY — the first 16 bytes of the SHA-256 of its json_bytes
# catalog bytes.
catalog_id() {
    local jb
    jb=$(ninfer-cat --header "$1" | sed -n 's/.*"json_bytes": *\([0-9]*\).*/\1/p')
    tail -c +33 "$1" | head -c "$jb" | sha256sum | cut -c1-32
}

# pack_in DIR OPTIONS... — pack q.json into DIR/m.ninfer, and DIR/SHA256SUMS.
pack_in() {
    local dir=$1
    shift
    mkdir -p "$dir"
    ninfer-pack -q --no-sync --max-file-bytes 1M "$@" -o "$dir/m.ninfer" q.json
    (cd "$dir" && ninfer-verify --sums m.ninfer > SHA256SUMS)
}

@test "two packs of one manifest with --reproducible: byte-identical files and SHA256SUMS, on 1 and 4 threads" {
    pack_in r1 --reproducible --threads 1
    pack_in r2 --reproducible --threads 4
    [ -e r1/m.ninfer.part-0001 ]
    diff -r r1 r2
    # the id is the catalog's digest, in the entry and every part
    [ "$(id_of r1/m.ninfer)" = "$(catalog_id r1/m.ninfer)" ]
    local p
    for p in r1/m.ninfer.part-*; do
        [ "$(id_of "$p")" = "$(id_of r1/m.ninfer)" ]
    done
    run -0 --separate-stderr ninfer-verify r1/m.ninfer
    # SOURCE_DATE_EPOCH implies it
    SOURCE_DATE_EPOCH=0 pack_in r3
    diff -r r1 r3
    # without: a random id, so the files differ
    pack_in r4
    ! cmp -s r1/m.ninfer r4/m.ninfer
    [ "$(id_of r4/m.ninfer)" != "$(id_of r1/m.ninfer)" ]
}

@test "--reproducible from a checkpoint in another directory: provenance is relative, the artifact the same" {
    mkdir -p a/deep b
    cp -r ck a/deep/ck
    cp -r ck b/ck
    (cd a/deep && ninfer-import -q -o m.json ck && ninfer-pack -q --no-sync --reproducible -o m.ninfer m.json)
    (cd b && ninfer-import -q -o m.json ck && ninfer-pack -q --no-sync --reproducible -o m.ninfer m.json)
    cmp a/deep/m.ninfer b/m.ninfer
    ninfer-cat --catalog b/m.ninfer | tr -d ' \n' | grep -qF '"source":{"format":"safetensors","path":"ck"'
    ! ninfer-cat --catalog b/m.ninfer | grep -qF "$BATS_TEST_TMPDIR"
}

@test "ninfer-cat of a multi-part artifact twice with --reproducible: identical streams, which split reproduces" {
    pack_in r1
    ninfer-cat --reproducible r1/m.ninfer > s1
    ninfer-cat --reproducible r1/m.ninfer > s2
    cmp s1 s2
    SOURCE_DATE_EPOCH=1 ninfer-cat r1/m.ninfer > s3
    cmp s1 s3
    [ "$(id_of s1)" = "$(catalog_id s1)" ]
    run -0 --separate-stderr ninfer-verify - < s1
    # without it: a random id each time
    ninfer-cat r1/m.ninfer > s4
    ! cmp -s s1 s4
    # split to one file or a stream derives the same bytes
    ninfer-split -q --no-sync --reproducible -o one.ninfer r1/m.ninfer
    cmp s1 one.ninfer
    ninfer-split -q --reproducible -o - r1/m.ninfer > s5
    cmp s1 s5
    # and back into parts, twice
    ninfer-split -q --no-sync --reproducible --max-file-bytes 1M -o x/m.ninfer - < s1
    ninfer-split -q --no-sync --reproducible --max-file-bytes 1M -o y/m.ninfer - < s1
    diff -r x y
    # a single-file artifact is catted as it is, its id included
    ninfer-cat --reproducible one.ninfer | cmp - one.ninfer
}

@test "what cannot be reproducible: a stream from pack, --no-digests (usage, 2, nothing written); implied, a warning" {
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr bash -c 'ninfer-pack -q --reproducible q.json > out.bin'
    [[ "$stderr" == "ninfer-pack: q.json: usage: --reproducible: the artifact_id of reproducible output is derived from the catalog's digests, and a stream from ninfer-pack (its catalog is written before its payload) has none for "*" objects (write files with -o, or give --artifact-id)" ]]
    [ ! -s out.bin ]
    rm out.bin
    run -2 --separate-stderr ninfer-pack -q --reproducible --no-digests -o t.ninfer q.json
    [ "$stderr" = "ninfer-pack: usage: --reproducible derives the artifact_id from the digests that --no-digests leaves out (see 'ninfer-pack --help')" ]
    run -2 --separate-stderr ninfer-split --reproducible --artifact-id 00112233445566778899aabbccddeeff -o t.ninfer x
    expect_only_codes usage
    run -2 --separate-stderr ninfer-pack --artifact-id 0011 -o t.ninfer q.json
    [ "$stderr" = "ninfer-pack: usage: bad --artifact-id '0011' (32 hex digits, as ninfer-cat --header prints one) (see 'ninfer-pack --help')" ]
    run -2 --separate-stderr ninfer-cat --reproducible --header q.json
    expect_only_codes usage
    expect_unchanged "$before"
    # SOURCE_DATE_EPOCH on a pack stream: the stream, a random id, a warning
    run -0 --separate-stderr bash -c 'SOURCE_DATE_EPOCH=0 ninfer-pack -q q.json | ninfer-verify -q -'
    [[ "$stderr" == "ninfer-pack: (stdout): SOURCE_DATE_EPOCH is set, but the artifact_id of reproducible output is derived from the catalog's digests, and a stream from ninfer-pack"* ]]
    # a stream of a catalog without digests, catted: the same
    ninfer-pack -q --no-sync --no-digests --max-file-bytes 1M -o nd.ninfer q.json
    run -2 --separate-stderr ninfer-cat --reproducible nd.ninfer
    expect_only_codes usage
    [ -z "$output" ]
}

@test "--artifact-id HEX: the entry, every part and a stream carry it" {
    local id=00112233445566778899AABBCCDDEEFF
    pack_in g --artifact-id "$id"
    local p
    for p in g/m.ninfer g/m.ninfer.part-*; do
        [ "$(id_of "$p")" = 00112233445566778899aabbccddeeff ]
    done
    run -0 --separate-stderr ninfer-verify g/m.ninfer
    ninfer-pack -q --artifact-id "$id" q.json > s
    [ "$(id_of s)" = 00112233445566778899aabbccddeeff ]
    run -0 --separate-stderr ninfer-verify - < s
    ninfer-cat --artifact-id ffeeddccbbaa99887766554433221100 g/m.ninfer > c
    [ "$(id_of c)" = ffeeddccbbaa99887766554433221100 ]
    run -0 --separate-stderr ninfer-verify - < c
}
