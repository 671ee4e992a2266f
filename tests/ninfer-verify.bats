#!/usr/bin/env bats
# ninfer-verify: valid artifacts of any segmentation pass; every generic-reader
# rule of spec 11.1 / 12.6 and DESIGN 3 and 13 fails with its code and exit.
# Artifacts are framed at test time by nf-mkartifact (see helper.bash).

load helper

# ---- valid artifacts --------------------------------------------------------

@test "valid single-file artifact verifies OK" {
    nf_make a.ninfer
    run -0 --separate-stderr ninfer-verify a.ninfer
    [ "$output" = "a.ninfer: OK (0 digests checked)" ]
    [ -z "$stderr" ]
}

@test "valid multi-part artifact, segments 600,400 (resource crosses the boundary)" {
    nf_make a.ninfer 600 400
    [ "$(nf_size a.ninfer.part-0001)" -eq $((4096 + 400)) ]
    run -0 --separate-stderr ninfer-verify a.ninfer
    [[ "$output" == "a.ninfer: OK"* ]]
    [ -z "$stderr" ]
}

@test "valid multi-part artifact, segments 1,999 (tensor crosses the boundary)" {
    nf_make a.ninfer 1 999
    run -0 --separate-stderr ninfer-verify a.ninfer
    [[ "$output" == "a.ninfer: OK"* ]]
}

@test "valid artifact of nine files with 1-byte segments" {
    nf_make a.ninfer 1 1 1 1 1 1 1 1 992
    [ -f a.ninfer.part-0008 ]
    run -0 --separate-stderr ninfer-verify a.ninfer
    [[ "$output" == "a.ninfer: OK"* ]]
}

@test "valid multi-part artifact whose parts have free-form names" {
    NF_FILES='[{"path": null, "payload_bytes": 300}, {"path": "second shard.bin", "payload_bytes": 300}, {"path": "Z", "payload_bytes": 400}]' \
        nf_make a.ninfer 300 300 400 -- --part-names 'second shard.bin,Z'
    run -0 --separate-stderr ninfer-verify a.ninfer
    [[ "$output" == "a.ninfer: OK"* ]]
}

@test "valid artifact given by a path in another directory, parts found beside the entry" {
    mkdir d
    nf_make d/a.ninfer 600 400
    run -0 --separate-stderr ninfer-verify d/a.ninfer
    [[ "$output" == "d/a.ninfer: OK"* ]]
}

@test "catalog padded with trailing whitespace to end exactly at 4096 (no fill)" {
    nf_make a.ninfer -- --json-bytes 4064
    run -0 ninfer-cat --header a.ninfer
    [[ "$output" == *'"entry_payload_start": 4096'* ]]
    run -0 --separate-stderr ninfer-verify a.ninfer
    nf_make b.ninfer -- --json-bytes 4065
    [ "$(nf_size b.ninfer)" -eq $((8192 + 1000)) ]
    run -0 --separate-stderr ninfer-verify b.ninfer
}

@test "open metadata and provenance, 16 dimensions and nesting depth 64 are valid" {
    # config sits at depth 4; 60 nested arrays inside it reach depth 64.
    local deep
    deep=$(printf '[%.0s' $(seq 60))$(printf ']%.0s' $(seq 60))
    NF_COMPONENTS="{\"text\": {\"config\": {\"deep\": $deep, \"eps\": 1e-06}, \"resources\": {\"tokenizer.json\": \"r.tok\"}}}" \
    NF_OBJECTS="[$(nf_tensor w.a '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,2,4]' 0 16), $(nf_resource r.tok 16 984)]" \
    NF_EXTRA=', "metadata": {"name": "tiny", "anything": [1.5e3, null]}, "provenance": {"free": true}' \
        nf_make a.ninfer
    run -0 --separate-stderr ninfer-verify a.ninfer
}

@test "-q prints nothing for a valid artifact" {
    nf_make a.ninfer
    run -0 --separate-stderr ninfer-verify -q a.ninfer
    [ -z "$output" ]
    [ -z "$stderr" ]
}

# ---- spec 12.6 rows that belong to the generic reader ----------------------

@test "12.6: the same object ID twice -> duplicate-id (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 16 484), $(nf_resource r.tok 500 500)]" \
        nf_make a.ninfer
    nf_verify_fails 1 a.ninfer duplicate-id
    grep -qF ': /objects/2/id: duplicate-id: ' <<< "$stderr"
}

@test "12.6: two objects' byte ranges overlap -> overlap (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 8 992)]" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer overlap
}

@test "12.6: part end past the object's elements -> part-range (1)" {
    NF_BINDINGS='{"text/a": {"parts": [{"object": "w.a", "range": [0, 9]}]}}' nf_make a.ninfer
    nf_verify_fails 1 a.ninfer part-range
    grep -qF ': /bindings/text~1a/parts/0/range: part-range: ' <<< "$stderr"
}

@test "12.6: part range that is empty or reversed -> part-range (1)" {
    NF_BINDINGS='{"text/a": {"parts": [{"object": "w.a", "range": [4, 4]}]}}' nf_make a.ninfer
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_code part-range
}

@test "12.6: unknown format -> unsupported (4)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16 bf17), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    nf_verify_fails 4 a.ninfer unsupported
}

@test "12.6: unknown layout -> unsupported (4)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16 bf16 tiled_v9), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    nf_verify_fails 4 a.ninfer unsupported
}

@test "12.6: unknown resource encoding -> unsupported (4)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 16 984 zip_v1)]" nf_make a.ninfer
    nf_verify_fails 4 a.ninfer unsupported
}

@test "12.6: a needed part is missing -> part-missing (3)" {
    nf_make a.ninfer 600 200 200
    rm a.ninfer.part-0002
    nf_verify_fails 3 a.ninfer part-missing
    grep -qF ': /files/2: part-missing: ' <<< "$stderr"
}

@test "12.6: another artifact's part with the same number -> artifact-id (1)" {
    nf_make a.ninfer 600 400
    nf_make b.ninfer 600 400 -- --artifact-id ffeeddccbbaa99887766554433221100
    cp b.ninfer.part-0001 a.ninfer.part-0001
    nf_verify_fails 1 a.ninfer artifact-id
}

@test "part header with a foreign artifact_id (--part-id) -> artifact-id (1)" {
    nf_make a.ninfer 600 400 -- --part-id 11111111111111111111111111111111
    nf_verify_fails 1 a.ninfer artifact-id
}

# ---- file lengths and part headers -----------------------------------------

@test "entry truncated by one byte -> incomplete (1)" {
    nf_make a.ninfer
    truncate -s -1 a.ninfer
    nf_verify_fails 1 a.ninfer incomplete
}

@test "entry extended by one byte -> length (1)" {
    nf_make a.ninfer
    printf '\0' >> a.ninfer
    nf_verify_fails 1 a.ninfer length
}

@test "part truncated by one byte -> incomplete (1)" {
    nf_make a.ninfer 600 400
    truncate -s -1 a.ninfer.part-0001
    nf_verify_fails 1 a.ninfer incomplete
}

@test "part extended by one byte -> length (1)" {
    nf_make a.ninfer 600 400
    printf '\0' >> a.ninfer.part-0001
    nf_verify_fails 1 a.ninfer length
}

@test "parts with swapped part_index -> part-header (1)" {
    nf_make a.ninfer 600 200 200 -- --part-index 2,1
    nf_verify_fails 1 a.ninfer part-header
    grep -qF ': /files/1: part-header: ' <<< "$stderr"
    grep -qF ': /files/2: part-header: ' <<< "$stderr"
}

@test "part_index 0 -> part-header (1)" {
    nf_make a.ninfer 600 400 -- --part-index 0
    nf_verify_fails 1 a.ninfer part-header
}

@test "part with a wrong magic -> part-header (1)" {
    nf_make a.ninfer 600 400
    nf_poke a.ninfer.part-0001 3 41
    nf_verify_fails 1 a.ninfer part-header
}

@test "part with the entry's magic -> part-header (1)" {
    nf_make a.ninfer 600 400
    printf 'NINFER' | dd of=a.ninfer.part-0001 bs=1 conv=notrunc status=none
    nf_verify_fails 1 a.ninfer part-header
}

@test "part shorter than its 32-byte header -> part-header (1)" {
    nf_make a.ninfer 600 400
    head -c 10 a.ninfer.part-0001 > p && mv p a.ninfer.part-0001
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_code part-header
}

@test "a part path that is a directory or a FIFO is an I/O failure (3)" {
    nf_make a.ninfer 600 400
    rm a.ninfer.part-0001
    mkdir a.ninfer.part-0001
    run -3 --separate-stderr ninfer-verify a.ninfer
    expect_code io
    rmdir a.ninfer.part-0001
    mkfifo a.ninfer.part-0001
    run -3 --separate-stderr timeout 10 ninfer-verify a.ninfer
    expect_code io
}

@test "an entry path that is a directory, or missing, is an I/O failure (3)" {
    mkdir d.ninfer
    run -3 --separate-stderr ninfer-verify d.ninfer
    expect_only_codes io
    run -3 --separate-stderr ninfer-verify missing.ninfer
    expect_only_codes io
}

# ---- the files table (spec 3.3) ----------------------------------------------

# bad_part_path JSON_STRING_TEXT — a two-file artifact whose files[1].path is
# the given JSON string text (the part itself exists under another name).
bad_part_path() {
    NF_FILES="[{\"path\": null, \"payload_bytes\": 600}, {\"path\": $1, \"payload_bytes\": 400}]" \
        nf_make a.ninfer 600 400 -- --part-names real.part
    nf_verify_fails 1 a.ninfer files
    grep -qF ': /files/1/path: files: ' <<< "$stderr"
}

@test "part path '../x' -> files (1)" {
    bad_part_path '"../x"'
}

@test "part path 'a/b' -> files (1)" {
    bad_part_path '"a/b"'
}

@test "part path with a backslash 'a\\b' -> files (1)" {
    bad_part_path '"a\\b"'
}

@test "part path '.' -> files (1)" {
    bad_part_path '"."'
}

@test "part path '..' -> files (1)" {
    bad_part_path '".."'
}

@test "empty part path -> files (1)" {
    bad_part_path '""'
}

@test "part path with U+0000 (\\u0000) -> files (1)" {
    bad_part_path '"real\u0000.part"'
}

@test "part path equal to the entry's own name -> files (1)" {
    bad_part_path '"a.ninfer"'
}

@test "the same part path twice -> files (1)" {
    NF_FILES='[{"path": null, "payload_bytes": 600}, {"path": "p1", "payload_bytes": 200}, {"path": "p1", "payload_bytes": 200}]' \
        nf_make a.ninfer 600 200 200 -- --part-names p1,p2
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_code files
    grep -qF ': /files/2/path: files: ' <<< "$stderr"
    # reading p1 as files[2] may also report its part_index
    expect_only_codes files part-header
}

@test "files[0].path not null -> files (1)" {
    NF_FILES='[{"path": "a.ninfer", "payload_bytes": 1000}]' nf_make a.ninfer
    nf_verify_fails 1 a.ninfer files
    grep -qF ': /files/0/path: files: ' <<< "$stderr"
}

@test "a part path null or not a string -> files (1)" {
    bad_part_path 'null'
    bad_part_path '7'
}

@test "files[i].payload_bytes 0 -> range (1); empty files -> schema (1)" {
    NF_FILES='[{"path": null, "payload_bytes": 600}, {"path": "a.ninfer.part-0001", "payload_bytes": 0}]' \
        nf_make a.ninfer 600 400
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_code range
    NF_FILES='[]' nf_make b.ninfer
    nf_verify_fails 1 b.ninfer schema
}

@test "payload_bytes that overflow U64 when summed -> range (1)" {
    NF_FILES='[{"path": null, "payload_bytes": 18446744073709551615}, {"path": "a.ninfer.part-0001", "payload_bytes": 2}]' \
        nf_make a.ninfer 600 400
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_code range
}

# ---- fill -----------------------------------------------------------------

@test "nonzero fill byte in the entry -> fill (1)" {
    nf_make a.ninfer
    nf_poke a.ninfer 4095 01
    nf_verify_fails 1 a.ninfer fill
}

@test "nonzero fill right after the catalog in the entry -> fill (1); whitespace there -> header (1)" {
    nf_make a.ninfer
    local end=$((32 + $(nf_size a.ninfer.json)))
    nf_poke a.ninfer "$end" 01
    nf_verify_fails 1 a.ninfer fill
    # a space: whitespace outside json_bytes is no padding, and says that
    # json_bytes ends the catalog inside its trailing whitespace
    nf_poke a.ninfer "$end" 20
    nf_verify_fails 1 a.ninfer header
}

@test "nonzero fill byte in a part -> fill (1)" {
    nf_make a.ninfer 600 400
    nf_poke a.ninfer.part-0001 32 ff
    nf_verify_fails 1 a.ninfer fill
}

@test "--fill-byte in entry and parts -> fill (1)" {
    nf_make a.ninfer 600 400 -- --fill-byte 0x5a
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_only_codes fill
    [ "$(grep -c ': fill: ' <<< "$stderr")" -ge 2 ]
}

# ---- digests ----------------------------------------------------------------

@test "a flipped payload bit is caught by the digest (1); --no-digests skips it" {
    NF_P=20000 nf_make src.ninfer
    ninfer-split --max-file-bytes 12288 -o a.ninfer src.ninfer
    run -0 --separate-stderr ninfer-verify a.ninfer
    [ "$output" = "a.ninfer: OK (2 digests checked)" ]
    # logical byte 10000 lies in r.tok, in part 1 at 4096 + (10000 - 8192)
    nf_flip a.ninfer.part-0001 $((4096 + 10000 - 8192))
    nf_verify_fails 1 a.ninfer digest
    grep -qF ': /objects/1: digest: ' <<< "$stderr"
    run -0 --separate-stderr ninfer-verify --no-digests a.ninfer
}

@test "a flipped bit in a single-file artifact's tensor -> digest (1)" {
    nf_make src.ninfer
    ninfer-split -o a.ninfer src.ninfer
    local eps
    eps=$(ninfer-cat --header a.ninfer | sed -n 's/.*"entry_payload_start": *\([0-9]*\).*/\1/p')
    nf_flip a.ninfer $((eps + 3))
    nf_verify_fails 1 a.ninfer digest
    grep -qF ': /objects/0: digest: ' <<< "$stderr"
}

@test "--no-digests reports that no digest was checked" {
    # DESIGN 9/3: --no-digests skips object digests; the record must not
    # claim it checked them (digests_checked, "OK (N digests checked)").
    nf_make src.ninfer
    ninfer-split -o a.ninfer src.ninfer
    run -0 --separate-stderr ninfer-verify --no-digests a.ninfer
    [ "$output" = "a.ninfer: OK (0 digests checked)" ]
    run -0 ninfer-verify --json --no-digests a.ninfer
    [ "$(json_field digests_checked)" = 0 ]
}

@test "digest present but wrong -> digest (1), on a stream too" {
    local h
    h=$(printf 'a%.0s' $(seq 64))
    NF_EXTRA=", \"metadata\": {\"integrity\": {\"sha256\": {\"w.a\": \"$h\"}}}" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer digest
    run -1 --separate-stderr ninfer-verify - < a.ninfer
    expect_only_codes digest
}

# ---- the header (spec 3.1) ---------------------------------------------------

@test "short file (< 32 bytes) -> header (1)" {
    printf 'NINFER\0\3abc' > a.ninfer
    nf_verify_fails 1 a.ninfer header
}

@test "empty file -> header (1)" {
    : > a.ninfer
    nf_verify_fails 1 a.ninfer header
}

@test "bad magic -> magic (1)" {
    nf_make a.ninfer
    nf_poke a.ninfer 0 4f
    nf_verify_fails 1 a.ninfer magic
}

@test "version byte other than 3 -> magic (1)" {
    nf_make a.ninfer
    nf_poke a.ninfer 7 04
    nf_verify_fails 1 a.ninfer magic
}

@test "a continuation part given as the entry -> magic (1)" {
    nf_make a.ninfer 600 400
    nf_verify_fails 1 a.ninfer.part-0001 magic
}

@test "json_bytes 0 -> header (1)" {
    nf_make a.ninfer -- --json-bytes raw:0
    nf_verify_fails 1 a.ninfer header
}

@test "json_bytes 2^64-1 -> header (1)" {
    nf_make a.ninfer -- --json-bytes raw:18446744073709551615
    nf_verify_fails 1 a.ninfer header
}

@test "json_bytes past the end of the file -> header (1)" {
    nf_make a.ninfer -- --json-bytes raw:100000
    nf_verify_fails 1 a.ninfer header
}

@test "json_bytes shorter than the catalog cuts the JSON -> header (1), no pointer" {
    nf_make a.ninfer -- --json-bytes raw:300
    run -1 --separate-stderr ninfer-verify a.ninfer
    [ "$stderr" = "ninfer-verify: a.ninfer: header: json_bytes ends the catalog inside its JSON value (after 300 bytes): the header's length is too small" ]
}

@test "--max-json-bytes smaller than the catalog -> header (1); equal passes" {
    nf_make a.ninfer
    local n
    n=$(nf_size a.ninfer.json)
    run -1 --separate-stderr ninfer-verify --max-json-bytes $((n - 1)) a.ninfer
    expect_only_codes header
    run -0 --separate-stderr ninfer-verify --max-json-bytes "$n" a.ninfer
}

# ---- JSON (DESIGN 13: RFC 8259 strictly) -------------------------------------

@test "JSON: byte-order mark -> json (1)" {
    nf_make_catalog a.ninfer "$(printf '\357\273\277')$(nf_catalog)"
    nf_verify_fails 1 a.ninfer json
}

@test "JSON: garbage after the value inside json_bytes -> json (1)" {
    nf_make_catalog a.ninfer "$(nf_catalog) x"
    nf_verify_fails 1 a.ninfer json
}

@test "JSON: NaN literal -> json (1)" {
    nf_make_sed a.ninfer 's/"model_type": "test"/"model_type": NaN/'
    nf_verify_fails 1 a.ninfer json
}

@test "JSON: duplicate member written \"off\\u0073et\" -> duplicate-member (1)" {
    nf_make_sed a.ninfer 's/"offset": 0,/"offset": 0, "off\\u0073et": 0,/'
    nf_verify_fails 1 a.ninfer duplicate-member
    grep -qF ': /objects/0/offset: duplicate-member: ' <<< "$stderr"
}

@test "JSON: duplicate member inside config -> duplicate-member (1)" {
    nf_make_sed a.ninfer 's/"model_type": "test"/"model_type": "test", "model_type": "x"/'
    nf_verify_fails 1 a.ninfer duplicate-member
}

@test "JSON: nesting depth 65 -> depth (1)" {
    # config sits at depth 4; 61 nested arrays inside it reach depth 65.
    local deep
    deep=$(printf '[%.0s' $(seq 61))$(printf ']%.0s' $(seq 61))
    nf_make_sed a.ninfer "s/\"model_type\": \"test\"/\"model_type\": \"test\", \"deep\": $deep/"
    nf_verify_fails 1 a.ninfer depth
}

@test "JSON: lone surrogate escape -> utf8 (1)" {
    nf_make_sed a.ninfer 's/"model_type": "test"/"model_type": "te\\ud800st"/'
    nf_verify_fails 1 a.ninfer utf8
}

@test "JSON: invalid UTF-8 byte -> utf8 (1)" {
    nf_make_sed a.ninfer "$(printf 's/"model_type": "test"/"model_type": "t\377"/')"
    nf_verify_fails 1 a.ninfer utf8
}

@test "JSON: offset 1e3 -> schema (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 1e3 16), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer schema
    grep -qF ': /objects/0/offset: schema: ' <<< "$stderr"
}

@test "JSON: offset 256.0 -> schema (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 256.0 16), $(nf_resource r.tok 600 400)]" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer schema
}

@test "JSON: offset 0256 (leading zero) -> json (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0256 16), $(nf_resource r.tok 600 400)]" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer json
}

@test "JSON: bytes 18446744073709551616 -> range (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 16 18446744073709551616)]" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer range
    grep -qF ': /objects/1/bytes: range: ' <<< "$stderr"
}

@test "JSON: negative offset -> range (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok -16 984)]" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer range
}

@test "JSON: bytes -0 reads as 0 -> range (1), not negative" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 16 -0)]" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer range
}

@test "JSON: offset + bytes overflowing U64 -> range (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 18446744073709551615 2)]" nf_make a.ninfer
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_code range
}

@test "rank 17 -> schema (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2,4]' 0 16), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer schema
}

@test "shape [0] -> range (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[0]' 0 16), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_code range
    grep -qF ': /objects/0/shape/0: range: ' <<< "$stderr"
    # the encoded size of an invalid shape may be reported as well
    expect_only_codes range size
}

@test "elements(shape) overflowing U64 -> range (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[4294967296, 4294967296, 2]' 0 16), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_code range
}

@test "bf16 [2,4] with bytes 15 -> size (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 15), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer size
    grep -qF ': /objects/0/bytes: size: ' <<< "$stderr"
}

@test "tensor offset not a multiple of 256 -> alignment (1)" {
    NF_OBJECTS="[$(nf_resource r.tok 0 100), $(nf_tensor w.a '[2, 4]' 100 16)]" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer alignment
    grep -qF ': /objects/1/offset: alignment: ' <<< "$stderr"
}

@test "resources need no alignment: a resource at offset 1 is valid" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 17 983)]" nf_make a.ninfer
    run -0 --separate-stderr ninfer-verify a.ninfer
}

@test "objects out of offset order -> order (1)" {
    NF_OBJECTS="[$(nf_resource r.tok 512 100), $(nf_tensor w.a '[2, 4]' 0 16)]" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer order
}

@test "object past the payload -> bounds (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 16 985)]" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer bounds
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 2000 10)]" nf_make b.ninfer
    nf_verify_fails 1 b.ninfer bounds
}

@test "missing required member -> schema (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16 | sed 's/"layout": "contiguous_le_v1", //'), $(nf_resource r.tok 16 984)]" \
        nf_make a.ninfer
    nf_verify_fails 1 a.ninfer schema
    nf_make_sed b.ninfer '/^ "uses": /d'
    nf_verify_fails 1 b.ninfer schema
}

@test "unknown member -> schema (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16 | sed 's/"kind"/"colour": 1, "kind"/'), $(nf_resource r.tok 16 984)]" \
        nf_make a.ninfer
    nf_verify_fails 1 a.ninfer schema
    grep -qF ': /objects/0/colour: schema: ' <<< "$stderr"
    NF_EXTRA=', "extra": {}' nf_make b.ninfer
    nf_verify_fails 1 b.ninfer schema
}

@test "bad enum (activation_policy) and empty ID -> schema (1)" {
    NF_USES='[{"parameter": "text/a", "input": "in", "activation_policy": "AllowA2"}]' nf_make a.ninfer
    nf_verify_fails 1 a.ninfer schema
    NF_USES='[{"parameter": "text/a", "input": ""}]' nf_make b.ninfer
    run -1 --separate-stderr ninfer-verify b.ninfer
    expect_code schema
}

@test "catalog that is not an object -> schema (1)" {
    nf_make_catalog a.ninfer '[1]'
    nf_verify_fails 1 a.ninfer schema
}

@test "binding to a missing object -> reference (1)" {
    NF_BINDINGS='{"text/a": {"object": "w.missing"}}' nf_make a.ninfer
    nf_verify_fails 1 a.ninfer reference
    grep -qF ': /bindings/text~1a/object: reference: ' <<< "$stderr"
}

@test "binding to a resource (wrong kind) -> reference (1)" {
    NF_BINDINGS='{"text/a": {"object": "r.tok"}}' nf_make a.ninfer
    nf_verify_fails 1 a.ninfer reference
}

@test "use with an unknown parameter -> reference (1)" {
    NF_USES='[{"parameter": "text/zzz", "input": "in"}]' nf_make a.ninfer
    nf_verify_fails 1 a.ninfer reference
    grep -qF ': /uses/0/parameter: reference: ' <<< "$stderr"
}

@test "auxiliary binding to a missing object -> reference (1)" {
    NF_USES='[{"parameter": "text/a", "input": "in", "activation_policy": "AllowA4", "auxiliaries": {"activation_input_divisor": {"object": "nope"}}}]' \
        nf_make a.ninfer
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_code reference
}

@test "duplicate (parameter, input) -> duplicate-use (1)" {
    NF_USES='[{"parameter": "text/a", "input": "in"}, {"parameter": "text/a", "input": "in"}]' nf_make a.ninfer
    nf_verify_fails 1 a.ninfer duplicate-use
}

@test "component target missing -> reference (1)" {
    NF_COMPONENTS='{"text": {"config": {}, "resources": {"tokenizer.json": "r.tok"}}, "mtp": {"config": {}, "target": "vision"}}' \
        nf_make a.ninfer
    nf_verify_fails 1 a.ninfer reference
    grep -qF ': /components/mtp/target: reference: ' <<< "$stderr"
}

@test "resource role naming a tensor or a missing object -> reference (1)" {
    NF_COMPONENTS='{"text": {"config": {}, "resources": {"tokenizer.json": "w.a"}}}' nf_make a.ninfer
    nf_verify_fails 1 a.ninfer reference
    NF_COMPONENTS='{"text": {"config": {}, "resources": {"tokenizer.json": "r.none"}}}' nf_make b.ninfer
    nf_verify_fails 1 b.ninfer reference
}

@test "metadata.integrity with uppercase hex -> integrity (1)" {
    local h
    h=$(printf 'A%.0s' $(seq 64))
    NF_EXTRA=", \"metadata\": {\"integrity\": {\"sha256\": {\"w.a\": \"$h\"}}}" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer integrity
}

@test "metadata.integrity naming an unknown object -> integrity (1)" {
    local h
    h=$(printf 'a%.0s' $(seq 64))
    NF_EXTRA=", \"metadata\": {\"integrity\": {\"sha256\": {\"w.zz\": \"$h\"}}}" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer integrity
}

@test "metadata.integrity with 63 hex digits or no sha256 object -> integrity (1)" {
    local h
    h=$(printf 'a%.0s' $(seq 63))
    NF_EXTRA=", \"metadata\": {\"integrity\": {\"sha256\": {\"w.a\": \"$h\"}}}" nf_make a.ninfer
    nf_verify_fails 1 a.ninfer integrity
    NF_EXTRA=', "metadata": {"integrity": {}}' nf_make b.ninfer
    nf_verify_fails 1 b.ninfer integrity
}

@test "a catalog with 1000 problems reports them all, not only the first" {
    local uses
    uses=$(seq 1000 | awk '{printf "%s{\"parameter\": \"text/p%d\", \"input\": \"in\"}", (NR > 1 ? ", " : ""), $1}')
    NF_USES="[$uses]" nf_make a.ninfer
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_only_codes reference
    [ "$(grep -c ': reference: ' <<< "$stderr")" -ge 100 ]
    grep -qF ': /uses/0/parameter: reference: ' <<< "$stderr"
    grep -qF ': /uses/999/parameter: reference: ' <<< "$stderr"
}

@test "problems of different kinds are all reported" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 15), $(nf_resource r.tok 16 985)]" \
    NF_USES='[{"parameter": "text/zzz", "input": "in"}]' nf_make a.ninfer
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_code size
    expect_code bounds
    expect_code reference
}

# ---- several operands, --json, sums, streams, usage --------------------------

@test "several operands: exit 1 outranks 3 outranks 4; every operand is checked" {
    nf_make good.ninfer
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16 bf17), $(nf_resource r.tok 16 984)]" nf_make unsup.ninfer
    nf_make bad.ninfer
    nf_poke bad.ninfer 0 00
    run -1 --separate-stderr ninfer-verify unsup.ninfer missing.ninfer bad.ninfer good.ninfer
    expect_code unsupported
    expect_code io
    expect_code magic
    [[ "$output" == *"good.ninfer: OK"* ]]
    run -3 --separate-stderr ninfer-verify unsup.ninfer missing.ninfer good.ninfer
    expect_only_codes unsupported io
    run -4 --separate-stderr ninfer-verify good.ninfer unsup.ninfer
    expect_only_codes unsupported
    run -0 --separate-stderr ninfer-verify good.ninfer good.ninfer
}

@test "--json: one record per operand with exit, counts and diagnostics" {
    nf_make good.ninfer 600 400
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 16 985)]" nf_make bad.ninfer
    run -1 --separate-stderr ninfer-verify --json good.ninfer bad.ninfer missing.ninfer
    [ -z "$stderr" ]
    [ "${#lines[@]}" -eq 3 ]
    output=${lines[0]}
    [ "$(json_field file)" = good.ninfer ]
    [ "$(json_field exit)" = 0 ]
    [ "$(json_field artifact_id)" = 0102030405060708090a0b0c0d0e0f10 ]
    [ "$(json_field payload_bytes)" = 1000 ]
    # the files table (DESIGN 3: "plus the command's own results")
    [ "$(grep -o '"logical_offset":' <<< "$output" | wc -l)" -eq 2 ]
    [ "$(json_field objects)" = 2 ]
    [ "$(json_field json_bytes)" = "$(nf_size good.ninfer.json)" ]
    [[ "$output" == *'"diagnostics":[]'* ]]
    output=${lines[1]}
    [ "$(json_field file)" = bad.ninfer ]
    [ "$(json_field exit)" = 1 ]
    [ "$(json_field code)" = bounds ]
    [ "$(json_field pointer)" = /objects/1 ]
    output=${lines[2]}
    [ "$(json_field file)" = missing.ninfer ]
    [ "$(json_field exit)" = 3 ]
    [ "$(json_field code)" = io ]
}

@test "--json: a part failure names the part's file" {
    nf_make a.ninfer 600 400
    rm a.ninfer.part-0001
    run -3 ninfer-verify --json a.ninfer
    [ "$(json_field exit)" = 3 ]
    [ "$(json_field code)" = part-missing ]
    [[ "$output" == *'"file":"'*'a.ninfer.part-0001"'* ]]
}

@test "--sums output is checkable with sha256sum -c in the artifact's directory" {
    mkdir d
    NF_P=20000 nf_make src.ninfer
    ninfer-split --max-file-bytes 12288 -o d/a.ninfer src.ninfer
    run -0 --separate-stderr ninfer-verify --sums d/a.ninfer
    [ "${#lines[@]}" -eq 3 ]
    [[ "${lines[0]}" =~ ^[0-9a-f]{64}\ \ a\.ninfer$ ]]
    [[ "${lines[1]}" =~ ^[0-9a-f]{64}\ \ a\.ninfer\.part-0001$ ]]
    [[ "${lines[2]}" =~ ^[0-9a-f]{64}\ \ a\.ninfer\.part-0002$ ]]
    printf '%s\n' "${lines[@]}" > d/SHA256SUMS
    cd d
    run -0 sha256sum -c SHA256SUMS
}

@test "--sums prints nothing and fails when the set does not verify" {
    nf_make a.ninfer 600 400
    truncate -s -1 a.ninfer.part-0001
    run -1 --separate-stderr ninfer-verify --sums a.ninfer
    [ -z "$output" ]
    expect_only_codes incomplete
}

@test "--check-sums passes on the sums and fails on a tampered sums file" {
    mkdir d
    NF_P=20000 nf_make src.ninfer
    ninfer-split --max-file-bytes 12288 -o d/a.ninfer src.ninfer
    ninfer-verify --sums d/a.ninfer > d/SUMS
    run -0 --separate-stderr ninfer-verify --check-sums d/SUMS d/a.ninfer
    # tamper with the part-0001 line's digest
    local first
    first=$(sed -n 2p d/SUMS | cut -c1)
    if [ "$first" = 0 ]; then first=1; else first=0; fi
    sed "2s/^./$first/" d/SUMS > d/BAD
    run -1 --separate-stderr ninfer-verify --check-sums d/BAD d/a.ninfer
    expect_only_codes digest
    # a sums file lacking a line for a part fails too
    head -n 1 d/SUMS > d/SHORT
    run -1 --separate-stderr ninfer-verify --check-sums d/SHORT d/a.ninfer
    expect_code digest
}

@test "--check-sums catches a tampered part the catalog's digests would not" {
    # with --no-digests only the per-file sums can see a changed payload byte
    mkdir d
    NF_P=20000 nf_make src.ninfer
    ninfer-split --max-file-bytes 12288 -o d/a.ninfer src.ninfer
    ninfer-verify --sums d/a.ninfer > d/SUMS
    nf_flip d/a.ninfer.part-0002 $((4096 + 100))
    run -1 --separate-stderr ninfer-verify --no-digests --check-sums d/SUMS d/a.ninfer
    expect_only_codes digest
    grep -qF 'a.ninfer.part-0002: ' <<< "$stderr"
}

@test "a stream on stdin verifies; a zstd stream too" {
    nf_make a.ninfer
    run -0 --separate-stderr ninfer-verify - < a.ninfer
    [ "$output" = "-: OK (0 digests checked)" ]
    zstd -q -c a.ninfer > a.zst
    run -0 --separate-stderr ninfer-verify - < a.zst
}

@test "a stream whose catalog lists several files is refused -> files (1)" {
    nf_make a.ninfer 600 400
    run -1 --separate-stderr ninfer-verify - < a.ninfer
    expect_only_codes files
}

@test "a stream that ends early or runs on -> length (1)" {
    nf_make a.ninfer
    head -c 4500 a.ninfer > short
    run -1 --separate-stderr ninfer-verify - < short
    expect_only_codes length
    { cat a.ninfer; printf x; } > long
    run -1 --separate-stderr ninfer-verify - < long
    expect_only_codes length
}

@test "usage errors exit 2" {
    run -2 ninfer-verify
    run -2 ninfer-verify --bogus x
    run -2 ninfer-verify --max-json-bytes nope x
    run -2 ninfer-verify - - < /dev/null
    run -0 ninfer-verify --help
    [[ "$output" == *usage* ]]
}

@test "stdout on a full device -> exit 3" {
    nf_make a.ninfer
    run -3 bash -c 'ninfer-verify a.ninfer > /dev/full'
    run -3 bash -c 'ninfer-verify --json a.ninfer > /dev/full'
}

# big_catalog N OUT — a valid catalog of N one-element bf16 objects, each
# bound under text/pI, digests included (DESIGN 14: large catalogs parse,
# never refused for what parsing would cost). About 150 bytes a record.
big_catalog() {
    awk -v n="$1" 'BEGIN {
        printf "{\"components\":{\"text\":{\"config\":{}}},\"objects\":["
        for (i = 0; i < n; i++)
            printf "%s{\"id\":\"o%d\",\"kind\":\"tensor\",\"shape\":[1],\"format\":\"bf16\",\"layout\":\"contiguous_le_v1\",\"offset\":%d,\"bytes\":2}", i ? "," : "", i, i * 256
        printf "],\"bindings\":{"
        for (i = 0; i < n; i++)
            printf "%s\"text/p%d\":{\"object\":\"o%d\"}", i ? "," : "", i, i
        printf "},\"uses\":[],\"files\":[{\"path\":null,\"payload_bytes\":%d}]}", (n - 1) * 256 + 2
    }' > "$2"
}

@test "a catalog of 100,000 objects and 100,000 bindings (15 MB) verifies" {
    big_catalog 100000 big.json
    size=$(nf_size big.json)
    [ "$size" -gt 14000000 ]
    nf-mkartifact --catalog big.json --payload zero:$((99999 * 256 + 2)) -o big.ninfer
    run -0 --separate-stderr ninfer-verify big.ninfer
    [ "$output" = "big.ninfer: OK (0 digests checked)" ]
    # a reference one past the last object is found missing, by name
    sed 's/"text\/p99999":{"object":"o99999"}/"text\/p99999":{"object":"o100000"}/' big.json > bad.json
    nf-mkartifact --catalog bad.json --payload zero:$((99999 * 256 + 2)) -o bad.ninfer
    run -1 --separate-stderr ninfer-verify bad.ninfer
    expect_only_codes reference
    grep -qF 'bad.ninfer: /bindings/text~1p99999/object: reference: no object "o100000"' <<< "$stderr"
}

@test "every command: a bad option is one usage line (no getopt line with the binary's path), exit 2" {
    local c
    for c in bench bind cat import pack quant run split verify; do
        run -2 --separate-stderr "ninfer-$c" --bogus
        [ "$stderr" = "ninfer-$c: usage: unrecognized option '--bogus' (see 'ninfer-$c --help')" ]
        run -2 --separate-stderr "ninfer-$c" -Z
        [ "$stderr" = "ninfer-$c: usage: invalid option '-Z' (see 'ninfer-$c --help')" ]
        run -2 --separate-stderr "ninfer-$c" --help=1
        [ "$stderr" = "ninfer-$c: usage: option '--help' takes no argument (see 'ninfer-$c --help')" ]
    done
    run -2 --separate-stderr ninfer-split -o
    [ "$stderr" = "ninfer-split: usage: option '-o' needs an argument (see 'ninfer-split --help')" ]
    run -2 --separate-stderr ninfer-verify --max-json-bytes
    [ "$stderr" = "ninfer-verify: usage: option '--max-json-bytes' needs an argument (see 'ninfer-verify --help')" ]
}

# sums_case FILE STATUS — ninfer-verify --check-sums FILE on d/a.ninfer exits
# STATUS, and sha256sum -c agrees on pass/fail for the same lines.
sums_case() {
    local f=$1 want=$2 sc=0
    run "-$want" --separate-stderr ninfer-verify --check-sums "d/$f" d/a.ninfer
    (cd d && sha256sum -c --quiet "$f" > /dev/null 2>&1) || sc=1
    [ "$sc" -eq "$((want != 0))" ]
}

@test "--check-sums reads lines as sha256sum -c does: duplicates, upper-case hex, CRLF, --tag, comments, malformed lines (red-team E6)" {
    mkdir d
    NF_P=20000 nf_make src.ninfer
    ninfer-split --max-file-bytes 12288 -o d/a.ninfer src.ninfer
    ninfer-verify --sums d/a.ninfer > d/SUMS
    local entry_hex bad
    entry_hex=$(head -c 64 d/SUMS)
    bad=$(printf '%s' "$entry_hex" | tr 0-9a-f 1-9a-f0)
    # a second line for the entry with a wrong digest fails, as sha256sum -c
    { cat d/SUMS; echo "$bad  a.ninfer"; } > d/DUP
    sums_case DUP 1
    expect_only_codes digest
    [ "$stderr" = "ninfer-verify: d/a.ninfer: digest: sha256 $entry_hex differs from d/DUP's $bad" ]
    # the same right line twice is fine
    { cat d/SUMS; head -n 1 d/SUMS; } > d/TWICE
    sums_case TWICE 0
    # upper-case hex, CRLF line ends, the --tag form, comment and empty lines
    awk '{ print toupper($1) "  " $2 }' d/SUMS > d/UPPER
    grep -q '^[0-9A-F]\{64\}  a\.ninfer$' d/UPPER
    sed 's/$/\r/' d/SUMS > d/CRLF
    sed -E 's/^([0-9a-f]{64})  (.*)$/SHA256 (\2) = \1/' d/SUMS > d/TAG
    { echo "# made by ninfer-verify --sums"; echo; cat d/SUMS; } > d/COMMENT
    local f
    for f in UPPER CRLF TAG COMMENT; do
        sums_case "$f" 0
        [ -z "$stderr" ]
    done
    grep -q '^SHA256 (a.ninfer.part-0002) = ' d/TAG
    # malformed lines: one warning with their count, the verdict unchanged
    { echo "not a sums line"; cat d/SUMS; echo "${entry_hex:0:63}  a.ninfer"; echo "\\$entry_hex  a\\qninfer"; } > d/MAL
    sums_case MAL 0
    [ "$stderr" = "ninfer-verify: d/MAL: warning: 3 lines are improperly formatted" ]
    # nothing but malformed lines: every file lacks its line
    echo "garbage" > d/NONE
    sums_case NONE 1
    [ "${#stderr_lines[@]}" -eq 4 ]
    [ "${stderr_lines[0]}" = "ninfer-verify: d/NONE: warning: 1 line is improperly formatted" ]
    [ "${stderr_lines[1]}" = "ninfer-verify: d/a.ninfer: digest: no line for this file in d/NONE" ]
}

@test "--sums escapes a name with a backslash, newline or carriage return as sha256sum does (red-team E15)" {
    NF_P=20000 nf_make src.ninfer
    local nl=$'we\ni\rd.ninfer'
    ninfer-split --max-file-bytes 12288 -o "$nl" src.ninfer
    ninfer-split -o 'back\slash.ninfer' src.ninfer
    run -0 --separate-stderr ninfer-verify --sums "$nl" 'back\slash.ninfer'
    [ "${#lines[@]}" -eq 4 ]
    [ "${lines[0]}" = "\\$(sha256sum < "$nl" | cut -c1-64)  we\\ni\\rd.ninfer" ]
    [ "${lines[1]}" = "\\$(sha256sum < "$nl.part-0001" | cut -c1-64)  we\\ni\\rd.ninfer.part-0001" ]
    [ "${lines[3]}" = "\\$(sha256sum < 'back\slash.ninfer' | cut -c1-64)  back\\\\slash.ninfer" ]
    # the same bytes sha256sum writes, and both checkers read them back
    [ "$output" = "$(sha256sum "$nl" "$nl.part-0001" "$nl.part-0002" 'back\slash.ninfer')" ]
    printf '%s\n' "$output" > SUMS
    run -0 sha256sum -c SUMS
    run -0 --separate-stderr ninfer-verify -q --check-sums SUMS "$nl" 'back\slash.ninfer'
    # the OK lines escape the name as diagnostics do: one line per operand
    local n
    n=$(ninfer-verify --json "$nl" | sed 's/.*"digests_checked":\([0-9]*\).*/\1/')
    [ "$n" -gt 0 ]
    run -0 --separate-stderr ninfer-verify "$nl" 'back\slash.ninfer'
    [ "${#lines[@]}" -eq 2 ]
    [ "${lines[0]}" = "we\\x0ai\\x0dd.ninfer: OK ($n digests checked)" ]
    [ "${lines[1]}" = "back\\slash.ninfer: OK ($n digests checked)" ]
    # a part name cannot hold '\': splitting such an entry is a usage error
    run -2 --separate-stderr ninfer-split --max-file-bytes 12288 -o 'x\y.ninfer' src.ninfer
    [[ "$stderr" == *"usage: the part names derive from the entry's name, which contains '\\': a part path cannot (spec 3.3; name the output without it)" ]]
    [ ! -e 'x\y.ninfer' ]
}
