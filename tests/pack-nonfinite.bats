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

# ---- byte copies (red-team E7): an fp32/bf16 object copied from a source of
# its own dtype is checked as a transcoded one is ----

# st_manifest DTYPE FORMAT HEXBYTES — x.safetensors holding one tensor w of
# DTYPE with these bytes, and m.json copying it into FORMAT.
st_manifest() {
    local dt=$1 fmt=$2 bytes=$3 n h
    n=$(( ${#bytes} / 2 ))
    h=$(printf '{"w":{"dtype":"%s","shape":[%d],"data_offsets":[0,%d]}}' "$dt" \
        $(( n / (${dt: -2} / 8) )) "$n")
    {
        printf "\\x$(printf %02x ${#h})\\0\\0\\0\\0\\0\\0\\0"
        printf '%s' "$h"
        printf '%b' "$(sed 's/../\\x&/g' <<< "$bytes")"
    } > x.safetensors
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [%d], "format": "%s", "layout": "contiguous_le_v1", "source": {"safetensors": "x.safetensors", "tensor": "w"}}], "bindings": {}, "uses": []}' \
        $(( n / (${dt: -2} / 8) )) "$fmt" > m.json
}

@test "copies: a NaN or Inf in an F32 or BF16 source copied into fp32/bf16 is range naming the element, unless --allow-nonfinite" {
    # F32 [1, 2, NaN] into fp32: element 2
    st_manifest F32 fp32 0000803f000000400000c07f
    refused '/objects/0: range: object "w": the source holds NaN or Inf at element 2 (nan; copied as fp32) (--allow-nonfinite keeps them in bf16/fp32)'
    run -0 --separate-stderr ninfer-pack -q --allow-nonfinite -o w.ninfer m.json
    [ "$(ninfer-cat --object w w.ninfer | od -An -tx4 | tr -s ' ')" = " 3f800000 40000000 7fc00000" ]
    rm w.ninfer
    # BF16 [-Inf, 1] into bf16: element 0
    st_manifest BF16 bf16 80ff803f
    refused 'object "w": the source holds NaN or Inf at element 0 (-inf; copied as bf16)'
    # an f32 file copied into fp32, a large finite value (FLT_MAX) passes
    f32_manifest fp32 3f800000 7f7fffff ff7fffff
    run -0 --separate-stderr ninfer-pack -q -o w.ninfer m.json
    [ -z "$stderr" ]
    rm w.ninfer
    f32_manifest fp32 3f800000 7f800000
    refused 'at element 1 (inf; copied as fp32)'
}

@test "copies: a GGUF F32 norm holding NaN is refused at pack, not packed silently" {
    nf-mkarch --arch llama ck
    nf-mkgguf ck g.gguf
    local off
    off=$(nf-srcdump --list g.gguf | awk -F'\t' '$1 == "blk.0.attn_norm.weight" { print $3 }')
    [ -n "$off" ]
    # element 5 of the norm := NaN (0x7fc00000)
    nf_poke g.gguf $((off + 22)) c0
    nf_poke g.gguf $((off + 23)) 7f
    ninfer-import -q -o m.json g.gguf
    run -1 --separate-stderr ninfer-pack -q -o g.ninfer m.json
    expect_only_codes range
    [[ "$stderr" == *'range: object "blk.0.attn_norm.weight": the source holds NaN or Inf at element 5 (nan; copied as fp32)'* ]]
    [ ! -e g.ninfer ]
    run -0 --separate-stderr ninfer-pack -q --allow-nonfinite -o g.ninfer m.json
}

@test "copies: bytes declared to be the encoding already (a file without dtype, an artifact's object) are copied as they are" {
    # a NaN in a raw file (no dtype): the object's bytes as given; verify --deep's concern
    printf '\x80\x3f\xc0\x7f' > raw.bin
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [2], "format": "bf16", "layout": "contiguous_le_v1", "source": {"file": "raw.bin"}}], "bindings": {}, "uses": []}' > m.json
    run -0 --separate-stderr ninfer-pack -q -o a.ninfer m.json
    [ "$(ninfer-cat --object w a.ninfer | od -An -tx2 | tr -s ' ')" = " 3f80 7fc0" ]
    # the same bytes with "dtype": "bf16" are values: checked
    sed 's/"file": "raw.bin"/"file": "raw.bin", "dtype": "bf16"/' m.json > typed.json
    run -1 --separate-stderr ninfer-pack -q -o b.ninfer typed.json
    [ "$stderr" = 'ninfer-pack: typed.json: /objects/0: range: object "w": the source holds NaN or Inf at element 1 (nan; copied as bf16) (--allow-nonfinite keeps them in bf16/fp32)' ]
    [ ! -e b.ninfer ]
    # re-packing an artifact's object (its manifest) copies its encoding
    ninfer-cat --manifest a.ninfer > again.json
    run -0 --separate-stderr ninfer-pack -q -o c.ninfer again.json
    cmp <(ninfer-cat --object w a.ninfer) <(ninfer-cat --object w c.ninfer)
}
