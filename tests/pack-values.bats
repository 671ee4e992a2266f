#!/usr/bin/env bats
# ninfer-pack: a `values` source holds elements of its dtype (ninfer-pack(1),
# DESIGN 5): integer dtypes take JSON integers within their range, bf16/f16/
# f32 any number that rounds to a finite value of the type (the element it
# rounds to is what is packed). Anything else is exit 1 naming the object,
# the value's JSON Pointer and the rule, and nothing is written. A raw file
# source with a dtype is bytes of that dtype, every pattern valid.

load helper

# values_manifest FILE SHAPE FORMAT VALUES DTYPE — FILE: one tensor "w" of
# SHAPE/FORMAT (contiguous_le_v1) from {"values": [VALUES], "dtype": DTYPE}.
values_manifest() {
    printf '{"components": {"text": {"config": {}}}, "bindings": {}, "uses": [], "objects": [{"id": "w", "kind": "tensor", "shape": [%s], "format": "%s", "layout": "contiguous_le_v1", "source": {"values": [%s], "dtype": "%s"}}]}\n' \
        "$2" "$3" "$4" "$5" > "$1"
}

# refused VALUES DTYPE INDEX CODE MESSAGE_TAIL — packing them into fp32 fails
# with one diagnostic at /objects/0/source/values/INDEX, to a file and to a
# stream alike, and leaves nothing behind (not even out/)
refused() {
    local shape
    shape=$(awk -F, '{ print NF }' <<< "$1")
    values_manifest m.json "$shape" fp32 "$1" "$2"
    run -1 --separate-stderr ninfer-pack -q -o out/a.ninfer m.json
    [ "${#stderr_lines[@]}" -eq 1 ]
    [ "$stderr" = "ninfer-pack: m.json: /objects/0/source/values/$3: $4: object \"w\": value $3 $5" ]
    [ ! -e out ]
    run -1 --separate-stderr ninfer-pack -q --allow-nonfinite -o - m.json
    [ -z "$output" ]
    [[ "$stderr" == *": /objects/0/source/values/$3: $4: "* ]]
    [ "$(ls -A | grep -v "^separate-stderr-")" = m.json ] # bats keeps its own there
}

@test "values out of range for their integer dtype -> range (1), nothing written" {
    refused '1, 300' i8 1 range '(300) is out of range for dtype i8 (-128..127)'
    refused '-129' i8 0 range '(-129) is out of range for dtype i8 (-128..127)'
    refused '-1' u8 0 range '(-1) is out of range for dtype u8 (0..255)'
    refused '70000' i16 0 range '(70000) is out of range for dtype i16 (-32768..32767)'
    refused '0, 65536' u16 1 range '(65536) is out of range for dtype u16 (0..65535)'
    refused '2147483648' i32 0 range '(2147483648) is out of range for dtype i32 (-2147483648..2147483647)'
    # checked as written: json-c reads -2^63 - 1 as -2^63
    refused '-9223372036854775809' i64 0 range '(-9223372036854775809) is out of range for dtype i64 (-9223372036854775808..9223372036854775807)'
    refused '18446744073709551616' u64 0 range '(18446744073709551616) is out of range for dtype u64 (0..18446744073709551615)'
}

@test "a fraction or an exponent for an integer dtype -> schema (1), nothing written" {
    refused '2.5' i8 0 schema '(2.5) is not a JSON integer, as dtype i8 needs'
    refused '1, 2.0' i32 1 schema '(2.0) is not a JSON integer, as dtype i32 needs'
    refused '1e2' u8 0 schema '(1e2) is not a JSON integer, as dtype u8 needs'
}

@test "values that round to infinity in their float dtype -> range (1), even with --allow-nonfinite" {
    refused '70000' f16 0 range '(70000) is out of range for dtype f16: it rounds to infinity (the largest finite f16 is 65504)'
    # 65520 is the midpoint above 65504, whose last bit is odd: it rounds up
    refused '1, -65520' f16 1 range '(-65520) is out of range for dtype f16: it rounds to infinity (the largest finite f16 is 65504)'
    refused '3.4e38' bf16 0 range '(3.4e+38) is out of range for dtype bf16: it rounds to infinity (the largest finite bf16 is 3.38953139e+38)'
    refused '3.5e38' f32 0 range '(3.5e+38) is out of range for dtype f32: it rounds to infinity (the largest finite f32 is 3.40282347e+38)'
    # a literal past the double range too (json-c reads it as infinity): no
    # infinity to keep, whatever --allow-nonfinite says
    refused '1, 1e400' f32 1 range '(1e400) is out of range for dtype f32: it rounds to infinity (the largest finite f32 is 3.40282347e+38)'
    refused '-1e400' f16 0 range '(-1e400) is out of range for dtype f16: it rounds to infinity (the largest finite f16 is 65504)'
    refused '2e308' f64 0 range '(2e308) is out of range for dtype f64: it rounds to infinity (the largest finite f64 is 1.79769313e+308)'
}

@test "values within their dtype pack as the dtype's elements" {
    # the ends of each integer range; into int32 exactly
    values_manifest m.json 4 int32 '-128, 127, -0, 0' i8
    run -0 ninfer-pack -q -o a.ninfer m.json
    [ "$(ninfer-cat --object w a.ninfer | od -An -td4 | tr -s ' ')" = " -128 127 0 0" ]
    values_manifest m.json 2 fp32 '0, 18446744073709551615' u64
    run -0 ninfer-pack -q --force -o a.ninfer m.json
    [ "$(ninfer-cat --object w a.ninfer | od -An -tx4 | tr -s ' ')" = " 00000000 5f800000" ]
    values_manifest m.json 2 fp32 '-9223372036854775808, 9223372036854775807' i64
    run -0 ninfer-pack -q --force -o a.ninfer m.json
    [ "$(ninfer-cat --object w a.ninfer | od -An -tx4 | tr -s ' ')" = " df000000 5f000000" ]
    # f16: 0.1 is the f16 element 0.0999755859375 (0x2e66), 65519 rounds to
    # 65504, 1e-8 to +0; bf16: 0.1 is 0x3dcd; f32 as it was
    values_manifest m.json 3 fp32 '0.1, 65519, 1e-8' f16
    run -0 ninfer-pack -q --force -o a.ninfer m.json
    [ "$(ninfer-cat --object w a.ninfer | od -An -tx4 | tr -s ' ')" = " 3dccc000 477fe000 00000000" ]
    values_manifest m.json 1 fp32 '0.1' bf16
    run -0 ninfer-pack -q --force -o a.ninfer m.json
    [ "$(ninfer-cat --object w a.ninfer | od -An -tx4 | tr -s ' ')" = " 3dcd0000" ]
    values_manifest m.json 1 fp32 '0.1' f32
    run -0 ninfer-pack -q --force -o a.ninfer m.json
    [ "$(ninfer-cat --object w a.ninfer | od -An -tx4 | tr -s ' ')" = " 3dcccccd" ]
    # an integer literal beyond 64 bits keeps its value (json-c would saturate it)
    values_manifest m.json 1 fp32 '100000000000000000000' f64
    run -0 ninfer-pack -q --force -o a.ninfer m.json
    [ "$(ninfer-cat --object w a.ninfer | od -An -tx4 | tr -s ' ')" = " 60ad78ec" ]
}

@test "a raw file source with a dtype is unaffected: every byte pattern is an element" {
    printf '\200\377\177\000' > raw.bin
    local dt want
    for dt in i8 u8; do
        [ "$dt" = i8 ] && want=' -128 -1 127 0' || want=' 128 255 127 0'
        printf '{"components": {"text": {"config": {}}}, "bindings": {}, "uses": [], "objects": [{"id": "w", "kind": "tensor", "shape": [4], "format": "int32", "layout": "contiguous_le_v1", "source": {"file": "raw.bin", "dtype": "%s"}}]}\n' "$dt" > m.json
        run -0 ninfer-pack -q --force -o a.ninfer m.json
        [ "$(ninfer-cat --object w a.ninfer | od -An -td4 | tr -s ' ')" = "$want" ]
    done
    # f16 0x7c00 (infinity) in a file is a value, refused as before unless allowed
    printf '\000\174' > inf.bin
    printf '{"components": {"text": {"config": {}}}, "bindings": {}, "uses": [], "objects": [{"id": "w", "kind": "tensor", "shape": [1], "format": "fp32", "layout": "contiguous_le_v1", "source": {"file": "inf.bin", "dtype": "f16"}}]}\n' > m.json
    run -1 --separate-stderr ninfer-pack -q --force -o a.ninfer m.json
    expect_code range
    run -0 ninfer-pack -q --force --allow-nonfinite -o a.ninfer m.json
    [ "$(ninfer-cat --object w a.ninfer | od -An -tx4 | tr -s ' ')" = " 7f800000" ]
}

@test "the check holds on both resolve paths: transcoded (q8, bf16 from f16) and inside a concat" {
    local vals
    vals=$(seq -s, -32 31)
    values_manifest m.json 1,64 q8_g32_fp16 "$vals" i8
    sed -i 's/contiguous_le_v1/row_split_k128_v1/' m.json
    run -0 ninfer-pack -q -o a.ninfer m.json
    run -0 ninfer-verify --deep a.ninfer
    sed -i 's/"values": \[-32,/"values": [-129,/' m.json
    run -1 --separate-stderr ninfer-pack -q -o b.ninfer m.json
    [ "$stderr" = 'ninfer-pack: m.json: /objects/0/source/values/0: range: object "w": value 0 (-129) is out of range for dtype i8 (-128..127)' ]
    [ ! -e b.ninfer ]
    values_manifest m.json 2 bf16 '1, 70000' f16
    run -1 --separate-stderr ninfer-pack -q -o b.ninfer m.json
    [[ "$stderr" == *': /objects/0/source/values/1: range: object "w": value 1 (70000) is out of range for dtype f16: '* ]]
    [ ! -e b.ninfer ]
    # inside a concat
    printf '{"components": {"text": {"config": {}}}, "bindings": {}, "uses": [], "objects": [{"id": "w", "kind": "tensor", "shape": [2, 2], "format": "fp32", "layout": "contiguous_le_v1", "source": {"concat": [{"values": [1, 2], "dtype": "u8"}, {"values": [3, 256], "dtype": "u8"}]}}]}\n' > m.json
    run -1 --separate-stderr ninfer-pack -q -o b.ninfer m.json
    [ "$stderr" = 'ninfer-pack: m.json: /objects/0/source/concat/1/values/1: range: object "w": value 1 (256) is out of range for dtype u8 (0..255)' ]
    [ ! -e b.ninfer ]
}
