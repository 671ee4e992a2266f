#!/usr/bin/env bats
# Values that bf16 or fp32 cannot hold finitely (issue 11 item 9; DESIGN
# 7.4): NaN and +-Inf sources, an inline 1e400 (which reads as Inf), and a
# finite value that rounds to +-Inf (bf16: |x| >= 0x7f7f8000 as f32 bits)
# are `range` errors naming the object and the element unless
# --allow-nonfinite; nothing is written. The boundary is checked bit for
# bit: 0x7f7f7fff rounds to bf16's largest finite value, 0x7f7f8000 to Inf.

load helper

# values_manifest FORMAT VALUES — m.json: one tensor w of that format from
# inline values (a JSON array body).
values_manifest() {
    local n
    n=$(awk -F, '{ print NF }' <<< "$2")
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [%d], "format": "%s", "layout": "contiguous_le_v1", "source": {"values": [%s]}}], "bindings": {}, "uses": []}' \
        "$n" "$1" "$2" > m.json
}

# f32_manifest FORMAT HEX... — m.json: w from an f32 file holding these
# 32-bit patterns (little-endian).
f32_manifest() {
    local fmt=$1 h
    shift
    : > x.f32
    for h in "$@"; do
        printf "\\x${h:6:2}\\x${h:4:2}\\x${h:2:2}\\x${h:0:2}" >> x.f32
    done
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [%d], "format": "%s", "layout": "contiguous_le_v1", "source": {"file": "x.f32", "dtype": "f32"}}], "bindings": {}, "uses": []}' \
        "$#" "$fmt" > m.json
}

# refused POINTER_OR_TEXT — pack exits 1 with one range diagnostic holding
# the text; no output and nothing else changed.
refused() {
    local before
    before=$(nf_snapshot .)
    run -1 --separate-stderr ninfer-pack -q -o w.ninfer m.json
    expect_only_codes range
    grep -qF -- "$1" <<< "$stderr"
    expect_unchanged "$before"
    [ ! -e w.ninfer ]
}

# words — the 16-bit words of w in w.ninfer, as hex, space-separated.
words() {
    ninfer-cat --object w w.ninfer | od -An -tx2 | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'
}

@test "inline 1e400 and -1e400 (read as infinities): range naming the element, into bf16 and fp32" {
    values_manifest bf16 '1, 1e400'
    refused '/objects/0/source/values/1: range: object "w": value 1 is +Inf, not finite'
    values_manifest fp32 '-1e400, 2'
    refused '/objects/0/source/values/0: range: object "w": value 0 is -Inf'
    run -0 --separate-stderr ninfer-pack -q --force --allow-nonfinite -o w.ninfer m.json
    [ "$(ninfer-cat --object w w.ninfer | od -An -tx4 | tr -d ' \n')" = ff80000040000000 ]
}

@test "inline finite values that round to infinity: range in bf16 (3.4e38) and fp32 (1e39)" {
    values_manifest bf16 '3.4e38'
    refused 'range: object "w": value 0 (3.4e+38) rounds to infinity in bf16'
    values_manifest fp32 '1, 1e39'
    refused 'value 1 (9.9999999999999994e+38) rounds to infinity in fp32'
    # bf16's largest finite value is no overflow
    values_manifest bf16 '3.3895313892515355e38, -3.3895313892515355e38'
    run -0 --separate-stderr ninfer-pack -q -o w.ninfer m.json
    [ "$(words)" = "7f7f ff7f" ]
    # with --allow-nonfinite the value becomes infinity
    values_manifest bf16 '3.4e38'
    run -0 --separate-stderr ninfer-pack -q --force --allow-nonfinite -o w.ninfer m.json
    [ "$(words)" = 7f80 ]
}

@test "f32 sources into bf16: 0x7f7f7fff is the largest finite, 0x7f7f8000 rounds to Inf (range, element named)" {
    f32_manifest bf16 3f800000 7f7f7fff ff7f7fff
    run -0 --separate-stderr ninfer-pack -q -o w.ninfer m.json
    [ "$(words)" = "3f80 7f7f ff7f" ]
    rm w.ninfer
    f32_manifest bf16 3f800000 40000000 7f7f8000
    refused 'object "w": a finite value at element 2 (3.39617753e+38) rounds to infinity in bf16'
    f32_manifest bf16 3f800000 ff7fffff
    refused 'at element 1 ('
    run -0 --separate-stderr ninfer-pack -q --force --allow-nonfinite -o w.ninfer m.json
    [ "$(words)" = "3f80 ff80" ]
}

@test "NaN and Inf f32 sources into bf16: range unless --allow-nonfinite" {
    f32_manifest bf16 3f800000 7fc00000
    refused 'object "w": the source holds NaN or Inf at element 1'
    f32_manifest bf16 ff800000
    refused 'at element 0'
    run -0 --separate-stderr ninfer-pack -q --force --allow-nonfinite -o w.ninfer m.json
    [ "$(words)" = ff80 ]
}

@test "into a stream too: refused before a byte of the object is written" {
    f32_manifest bf16 3f800000 7f7f8000
    run -1 --separate-stderr bash -c 'ninfer-pack -q -o - m.json > s.stream'
    expect_only_codes range
    run -1 --separate-stderr ninfer-verify - < s.stream
    expect_only_codes length
}
