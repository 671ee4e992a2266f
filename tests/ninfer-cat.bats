#!/usr/bin/env bats
# ninfer-cat: header, catalog, manifest, files, object, resource and range
# selectors over single-file and multi-part artifacts, and the whole artifact
# as a stream (DESIGN 4 and 6).

load helper

# slice FILE OFFSET LENGTH — bytes [OFFSET, OFFSET+LENGTH) of FILE on stdout.
slice() {
    tail -c +$(($2 + 1)) "$1" | head -c "$3"
}

@test "--header prints version, json_bytes, artifact_id and entry_payload_start" {
    nf_make a.ninfer -- --artifact-id 00112233445566778899aabbccddeeff
    run -0 --separate-stderr ninfer-cat --header a.ninfer
    [ "$(json_field version)" = 3 ]
    [ "$(json_field json_bytes)" = "$(nf_size a.ninfer.json)" ]
    [ "$(json_field artifact_id)" = 00112233445566778899aabbccddeeff ]
    [ "$(json_field entry_payload_start)" = 4096 ]
    [ -z "$stderr" ]
}

@test "--header of a larger catalog: entry_payload_start is align_up(32 + json_bytes, 4096)" {
    nf_make a.ninfer -- --json-bytes 8160
    run -0 ninfer-cat --header a.ninfer
    [ "$(json_field json_bytes)" = 8160 ]
    [ "$(json_field entry_payload_start)" = 8192 ]
    nf_make b.ninfer -- --json-bytes 8161
    run -0 ninfer-cat --header b.ninfer
    [ "$(json_field entry_payload_start)" = 12288 ]
}

@test "--files of a multi-part artifact: path, payload_bytes, logical_offset, file_bytes" {
    nf_make a.ninfer 1 599 400
    run -0 --separate-stderr ninfer-cat --files a.ninfer
    local flat
    flat=$(tr -d ' \n' <<< "$output")
    [ "$flat" = '[{"index":0,"path":"a.ninfer","payload_bytes":1,"logical_offset":0,"file_bytes":4097},{"index":1,"path":"a.ninfer.part-0001","payload_bytes":599,"logical_offset":1,"file_bytes":4695},{"index":2,"path":"a.ninfer.part-0002","payload_bytes":400,"logical_offset":600,"file_bytes":4496}]' ]
}

@test "--files --component lists only the files holding that component's objects" {
    # w.a and r.tok (text) lie in the entry; w.v and r.vis (vision) in part 1
    NF_COMPONENTS='{"text": {"config": {}, "resources": {"tokenizer.json": "r.tok"}}, "vision": {"config": {}, "resources": {"extra": "r.vis"}}, "mtp": {"config": {}, "target": "text"}}' \
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 16 484), $(nf_tensor w.v '[2, 4]' 768 16), $(nf_resource r.vis 784 216)]" \
    NF_BINDINGS='{"text/a": {"object": "w.a"}, "vision/v": {"object": "w.v"}}' \
        nf_make a.ninfer 600 400
    run -0 --separate-stderr ninfer-verify a.ninfer
    run -0 ninfer-cat --files --component text a.ninfer
    [[ "$output" == *'"a.ninfer"'* ]]
    [[ "$output" != *'part-0001'* ]]
    run -0 ninfer-cat --files --component vision a.ninfer
    [[ "$output" == *'"a.ninfer.part-0001"'* ]]
    # selecting mtp loads its target, text
    run -0 ninfer-cat --files --component mtp a.ninfer
    [[ "$output" == *'"a.ninfer"'* ]]
    [[ "$output" != *'part-0001'* ]]
    run -0 ninfer-cat --files --component text,vision a.ninfer
    [[ "$output" == *'"a.ninfer"'* ]]
    [[ "$output" == *'"a.ninfer.part-0001"'* ]]
}

@test "--files --component naming an absent component -> component-missing (1)" {
    # DESIGN 3: a selected component absent -> component-missing, as
    # --resource --component already reports; ninfer-cat(1) EXIT STATUS: "no
    # component c" exits 1.
    nf_make a.ninfer
    run -1 --separate-stderr ninfer-cat --resource tokenizer.json --component nope a.ninfer
    expect_only_codes component-missing
    run -1 --separate-stderr ninfer-cat --files --component nope a.ninfer
    expect_only_codes component-missing
}

@test "--catalog prints the catalog as stored" {
    nf_make a.ninfer 600 400
    ninfer-cat --catalog a.ninfer > out.json
    cmp out.json a.ninfer.json
}

@test "--catalog drops the trailing whitespace padding" {
    nf_make a.ninfer -- --json-bytes 3000
    run -0 ninfer-cat --catalog a.ninfer
    [ "$output" = "$(cat a.ninfer.json)" ]
}

@test "--manifest names this artifact's objects as sources" {
    nf_make a.ninfer 600 400
    run -0 --separate-stderr ninfer-cat --manifest a.ninfer
    [[ "$output" == *'"artifact":'* ]]
    [[ "$output" == *'"object": "w.a"'* || "$output" == *'"object":"w.a"'* ]]
    # a manifest has no files table and no offsets
    [[ "$output" != *'"files"'* ]]
    [[ "$output" != *'"offset"'* ]]
}

@test "--object prints the object's bytes (entry-only, crossing, and in a part)" {
    nf_make a.ninfer 600 400
    local pay
    pay=$(nf_payload)
    ninfer-cat --object w.a a.ninfer > wa
    slice "$pay" 0 16 | cmp - wa
    ninfer-cat --object r.tok a.ninfer > tok
    slice "$pay" 16 984 | cmp - tok
    nf_make b.ninfer 1 1 998
    ninfer-cat --object w.a b.ninfer | cmp - wa
}

@test "--object of an unknown ID -> reference (1)" {
    nf_make a.ninfer
    run -1 --separate-stderr ninfer-cat --object nope a.ninfer
    expect_only_codes reference
    [ -z "$output" ]
}

@test "--range across a part boundary equals the payload slice" {
    nf_make a.ninfer 600 200 200
    local pay
    pay=$(nf_payload)
    ninfer-cat --range 590:220 a.ninfer > r
    slice "$pay" 590 220 | cmp - r
    ninfer-cat --range 0:1000 a.ninfer | cmp - "$pay"
    run -0 ninfer-cat --range 1000:0 a.ninfer
    [ -z "$output" ]
}

@test "--range outside the payload -> bounds (1); malformed -> usage (2)" {
    nf_make a.ninfer
    run -1 --separate-stderr ninfer-cat --range 990:11 a.ninfer
    expect_only_codes bounds
    run -1 --separate-stderr ninfer-cat --range 18446744073709551615:2 a.ninfer
    expect_only_codes bounds
    run -2 ninfer-cat --range 5 a.ninfer
    run -2 ninfer-cat --range 1:-1 a.ninfer
    run -2 ninfer-cat --range 18446744073709551616:0 a.ninfer
}

@test "--resource prints the resource bytes of the text component" {
    nf_make a.ninfer 600 400
    ninfer-cat --resource tokenizer.json a.ninfer > tok
    slice "$(nf_payload)" 16 984 | cmp - tok
    run -1 --separate-stderr ninfer-cat --resource nope a.ninfer
    expect_only_codes reference
}

@test "no selector: a single-file artifact comes out byte for byte" {
    nf_make a.ninfer
    ninfer-cat a.ninfer > s
    cmp s a.ninfer
    nf_make b.ninfer -- --json-bytes 5000
    ninfer-cat b.ninfer | cmp - b.ninfer
}

@test "no selector: a multi-part artifact becomes a verified stream with a new artifact_id" {
    nf_make a.ninfer 600 200 200
    ninfer-cat a.ninfer > s.ninfer
    run -0 --separate-stderr ninfer-verify s.ninfer
    run -0 ninfer-cat --header s.ninfer
    local id
    id=$(json_field artifact_id)
    [[ "$id" =~ ^[0-9a-f]{32}$ ]]
    [ "$id" != 0102030405060708090a0b0c0d0e0f10 ]
    run -0 ninfer-cat --files s.ninfer
    [ "$(json_field path)" = s.ninfer ]
    [ "$(json_field payload_bytes)" = 1000 ]
    ninfer-cat --range 0:1000 s.ninfer | cmp - "$(nf_payload)"
    # objects and the rest of the catalog are kept
    ninfer-cat --object r.tok s.ninfer | cmp - <(ninfer-cat --object r.tok a.ninfer)
}

@test "--zstd: zstd magic, ninfer-verify - accepts it, zstd -d gives the plain stream" {
    nf_make a.ninfer
    ninfer-cat --zstd a.ninfer > s.zst
    [ "$(od -An -tx1 -N4 s.zst | tr -d ' \n')" = 28b52ffd ]
    run -0 --separate-stderr ninfer-verify - < s.zst
    zstd -q -d -c s.zst | cmp - a.ninfer
    ninfer-cat --zstd=19 a.ninfer | zstd -q -d -c | cmp - a.ninfer
}

@test "--zstd of a multi-part artifact decompresses to the stream (apart from the new artifact_id)" {
    nf_make a.ninfer 600 400
    ninfer-cat a.ninfer > plain
    ninfer-cat --zstd a.ninfer | zstd -q -d -c > unz
    cmp -n 16 plain unz
    cmp -i 32 plain unz
    run -0 --separate-stderr ninfer-verify unz
}

@test "--zstd of an object decompresses to its bytes" {
    nf_make a.ninfer 600 400
    ninfer-cat --zstd --object r.tok a.ninfer | zstd -q -d -c | cmp - <(slice "$(nf_payload)" 16 984)
}

@test "a stream (plain or zstd) on stdin is accepted by every selector" {
    nf_make a.ninfer
    ninfer-cat --object r.tok - < a.ninfer | cmp - <(slice "$(nf_payload)" 16 984)
    zstd -q -c a.ninfer > a.zst
    ninfer-cat --range 10:100 - < a.zst | cmp - <(slice "$(nf_payload)" 10 100)
    ninfer-cat - < a.zst | cmp - a.ninfer
}

@test "a multi-file catalog on stdin is refused -> files (1)" {
    nf_make a.ninfer 600 400
    run -1 --separate-stderr ninfer-cat --object w.a - < a.ninfer
    expect_only_codes files
}

@test "cat opens only the files it needs" {
    # w.a lies in the entry and part 1; r.tok runs on into part 2
    nf_make a.ninfer 8 592 400
    rm a.ninfer.part-0002
    ninfer-cat --object w.a a.ninfer | cmp - <(slice "$(nf_payload)" 0 16)
    ninfer-cat --range 0:600 a.ninfer | cmp - <(slice "$(nf_payload)" 0 600)
    run -0 ninfer-cat --header a.ninfer
    run -0 ninfer-cat --files a.ninfer
    run -3 --separate-stderr ninfer-cat --object r.tok a.ninfer
    expect_only_codes part-missing
    run -3 --separate-stderr ninfer-cat --range 590:20 a.ninfer
    expect_only_codes part-missing
}

@test "a part of another artifact is refused when read -> artifact-id (1)" {
    nf_make a.ninfer 600 400 -- --part-id 11111111111111111111111111111111
    run -0 ninfer-cat --object w.a a.ninfer
    run -1 --separate-stderr ninfer-cat --object r.tok a.ninfer
    expect_only_codes artifact-id
}

@test "a broken catalog is refused -> (1) with its code" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 8 992)]" nf_make a.ninfer
    run -1 --separate-stderr ninfer-cat --header a.ninfer
    expect_only_codes overlap
}

@test "no selector: refuses to write the stream to a terminal (2)" {
    command -v script > /dev/null || skip "script(1) not installed"
    nf_make a.ninfer
    run -2 script -qec "ninfer-cat a.ninfer" /dev/null
    [[ "$output" == *terminal* ]]
    # JSON selectors are text and may go to a terminal
    run -0 script -qec "ninfer-cat --header a.ninfer" /dev/null
}

@test "stdout on a full device -> io (3)" {
    nf_make a.ninfer
    run -3 --separate-stderr bash -c 'ninfer-cat a.ninfer > /dev/full'
    expect_only_codes io
    run -3 --separate-stderr bash -c 'ninfer-cat --object r.tok a.ninfer > /dev/full'
    expect_only_codes io
    run -3 --separate-stderr bash -c 'ninfer-cat --files a.ninfer > /dev/full'
    expect_only_codes io
}

@test "usage errors exit 2; a missing artifact exits 3" {
    nf_make a.ninfer
    run -2 ninfer-cat --header --files a.ninfer
    run -2 ninfer-cat
    run -2 ninfer-cat --bogus a.ninfer
    run -2 ninfer-cat --zstd=99 a.ninfer
    run -3 --separate-stderr ninfer-cat --header missing.ninfer
    expect_only_codes io
    run -0 ninfer-cat --help
}
