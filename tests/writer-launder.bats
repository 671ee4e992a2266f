#!/usr/bin/env bats
# A corrupt object is never laundered into a fresh, valid digest (issue 11
# item 6; DESIGN 3): a source object whose artifact carries a digest is
# checked while it is read -- by pack (copied or transcoded, from one file
# or across parts) and by split -- and a mismatch is exit 1 `digest` naming
# the source; nothing is published, and a stream output is cut short so its
# reader reports `length`.

load helper

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    # a.ninfer: w [64, 64] bf16 (8192 bytes) from random bytes, digests
    # written, split so that w lies in the entry and part 1
    nf_bytes 8192 w.bin
    nf_bytes 4000 r.bin
    printf '{"components": {"text": {"config": {}, "resources": {"blob": "r"}}}, "objects": [{"id": "r", "kind": "resource", "encoding": "raw_bytes_v1", "source": {"file": "r.bin"}}, {"id": "w", "kind": "tensor", "shape": [64, 64], "format": "bf16", "layout": "contiguous_le_v1", "source": {"file": "w.bin"}}], "bindings": {}, "uses": []}' > src.json
    ninfer-pack -q --max-file-bytes 12K -o a.ninfer src.json
    [ -e a.ninfer.part-0001 ]
    ninfer-cat --manifest a.ninfer > m.json
}

# corrupt_w — flip one byte of w where it lies in part 1 (the entry's payload
# starts at 4096 and holds 8192 bytes: r, then w from 4096 on)
corrupt_w() {
    nf_flip a.ninfer.part-0001 $((4096 + 100))
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_only_codes digest
}

# refused_digest — the last run failed with exit 1 naming a.ninfer's w as
# the source whose digest fails.
refused_digest() {
    expect_only_codes digest
    grep -qF 'a.ninfer: /objects/1: digest: source object "w": sha256 ' <<< "$stderr"
}

@test "ninfer-cat --manifest a | ninfer-pack -o b -: a corrupt source object is digest (1), b is not written" {
    corrupt_w
    local before
    before=$(nf_snapshot .)
    run -1 --separate-stderr bash -c 'ninfer-cat --manifest a.ninfer | ninfer-pack -q -o b.ninfer -'
    refused_digest
    expect_unchanged "$before"
    [ ! -e b.ninfer ]
    # a clean source packs and verifies
    nf_flip a.ninfer.part-0001 $((4096 + 100))
    run -0 --separate-stderr bash -c 'ninfer-cat --manifest a.ninfer | ninfer-pack -q -o b.ninfer -'
    run -0 --separate-stderr ninfer-verify b.ninfer
}

@test "a transcoded source (bf16 -> q8) is checked too" {
    corrupt_w
    # (no bindings for ninfer-quant to match: the manifest is edited)
    sed 's/"format": "bf16"/"format": "q8_g32_fp16"/; s/"layout": "contiguous_le_v1"/"layout": "row_split_k128_v1"/' m.json > q.json
    grep -q q8_g32_fp16 q.json
    local before
    before=$(nf_snapshot .)
    run -1 --separate-stderr ninfer-pack -q -o b.ninfer q.json
    refused_digest
    expect_unchanged "$before"
}

@test "to a stream: pack stops at the bad object, the stream is cut short (length for its reader)" {
    corrupt_w
    run -1 --separate-stderr bash -c 'ninfer-pack -q -o - m.json > s.stream'
    refused_digest
    run -1 --separate-stderr ninfer-verify - < s.stream
    expect_only_codes length
    # compressed: the zstd frame never ends (here nothing was flushed yet, so
    # the reader finds the stream ending inside the header)
    run -1 --separate-stderr bash -c 'ninfer-pack -q --zstd -o - m.json > s.zst'
    refused_digest
    run -1 --separate-stderr ninfer-verify - < s.zst
    expect_only_codes length header
}

@test "split from a corrupt stream: digest (1) before the object's end reaches the output" {
    corrupt_w
    ninfer-cat a.ninfer > a.stream
    local before
    before=$(nf_snapshot .)
    run -1 --separate-stderr ninfer-split -o b.ninfer - < a.stream
    expect_only_codes digest
    expect_unchanged "$before"
    [ ! -e b.ninfer ]
    run -1 --separate-stderr bash -c 'ninfer-split -o - - < a.stream > b.stream'
    expect_only_codes digest
    run -1 --separate-stderr ninfer-verify - < b.stream
    expect_only_codes length
    # files to files with --verify the same
    run -1 --separate-stderr ninfer-split --verify -o c.ninfer a.ninfer
    expect_only_codes digest
    [ ! -e c.ninfer ]
}
