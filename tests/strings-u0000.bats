#!/usr/bin/env bats
# String values are compared with their full length, and no member name
# holds U+0000 (ninfer(5), JSON rules): "q8_g32_fp16\u0000junk" names no
# format, "LlamaForCausalLM\u0000Qwen" no architecture, "A16Only\u0000" no
# policy, in every reader of JSON: pack sources, quant recipes, the binder's
# config, the catalog's names and policies, a safetensors header. Each case:
# exit 1, code `schema` at the value's own JSON Pointer, nothing written.

load helper

# values_manifest SOURCE_MEMBERS [FORMAT] — m.json: one fp32 [2] tensor whose
# source is {"values": [1, 2], SOURCE_MEMBERS}.
values_manifest() {
    printf '{"components": {"text": {"config": {}}}, "bindings": {}, "uses": [], "objects": [{"id": "w", "kind": "tensor", "shape": [2], "format": "%s", "layout": "contiguous_le_v1", "source": {"values": [1, 2]%s}}]}\n' \
        "${2:-fp32}" "$1" > m.json
}

# refused FILE POINTER MESSAGE CMD... — CMD exits 1 with exactly one
# diagnostic, `FILE: POINTER: schema: MESSAGE`
refused() {
    local file=$1 ptr=$2 msg=$3
    shift 3
    run -1 --separate-stderr "$@"
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == *": $file: $ptr: schema: $msg" ]]
}

@test "pack: a source's dtype, map, unpermute scheme and axis compare in full; nothing written" {
    values_manifest ', "dtype": "f32\u0000x"'
    refused m.json /objects/0/source/dtype "dtype must be one of bf16 f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64" \
        ninfer-pack -q -o out/a.ninfer m.json
    values_manifest ', "dtype": "f32", "map": "minus-one\u0000"'
    refused m.json /objects/0/source/map 'map must be "minus-one" or "log-neg"' \
        ninfer-pack -q -o out/a.ninfer m.json
    values_manifest ', "unpermute": {"scheme": "llama-rope\u0000", "heads": 1}'
    refused m.json /objects/0/source/unpermute/scheme 'unpermute scheme must be "llama-rope" or "v-heads-tiled"' \
        ninfer-pack -q -o out/a.ninfer m.json
    values_manifest ', "unpermute": {"scheme": "v-heads-tiled", "axis": "rows\u0000", "k_heads": 1, "v_heads": 2, "head_dim": 1}'
    refused m.json /objects/0/source/unpermute/axis 'axis must be "rows" or "columns"' \
        ninfer-pack -q -o out/a.ninfer m.json
    # the object's own format and a raw file source's dtype
    values_manifest '' 'fp32\u0000x'
    refused m.json /objects/0/format "format must not contain U+0000" \
        ninfer-pack -q -o out/a.ninfer m.json
    head -c 8 /dev/zero > raw.bin
    printf '{"components": {"text": {"config": {}}}, "bindings": {}, "uses": [], "objects": [{"id": "w", "kind": "tensor", "shape": [2], "format": "fp32", "layout": "contiguous_le_v1", "source": {"file": "raw.bin", "dtype": "i32\\u0000"}}]}\n' > m.json
    refused m.json /objects/0/source/dtype "dtype must be one of bf16 f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64" \
        ninfer-pack -q -o out/a.ninfer m.json
    [ ! -e out ]
    # the same without U+0000 packs
    sed -i 's/\\u0000//' m.json
    run -0 ninfer-pack -q -o out/a.ninfer m.json
}

@test "quant: a recipe's match, format, layout and activation_policy compare in full; nothing written" {
    values_manifest ', "dtype": "f32"'
    local case
    for case in \
        'match|{"match": "text/*\u0000x", "format": "q8_g32_fp16"}' \
        'format|{"match": "text/*", "format": "q8_g32_fp16\u0000junk"}' \
        'layout|{"match": "text/*", "format": "q8_g32_fp16", "layout": "row_split_k128_v1\u0000"}' \
        'activation_policy|{"match": "text/*", "format": "q8_g32_fp16", "activation_policy": "AllowA8\u0000"}'; do
        printf '{"rules": [%s]}\n' "${case#*|}" > r.json
        refused r.json "/rules/0/${case%%|*}" "${case%%|*} must be a string without U+0000" \
            ninfer-quant --recipe r.json -o q.json -i m.json
        [ ! -e q.json ]
    done
    # a member name with U+0000 (json-c would read "format\u0000x" as format)
    echo '{"rules": [{"match": "text/*", "format\u0000x": "nvfp4", "format": "q8_g32_fp16"}]}' > r.json
    run -1 --separate-stderr ninfer-quant --recipe r.json -o q.json -i m.json
    [[ "$stderr" == *": r.json: /rules/0/format?x: schema: member name \"format\\u0000x\" at byte "*" holds U+0000, which no member name may hold" ]]
    [ ! -e q.json ]
}

@test "catalog: format, layout, encoding and activation_policy compare in full (verify, cat, bind)" {
    local case
    for case in \
        '/objects/0/format|format must not contain U+0000|s/"format": "bf16"/"format": "bf16\\u0000x"/' \
        '/objects/0/layout|layout must not contain U+0000|s/"layout": "contiguous_le_v1"/"layout": "contiguous_le_v1\\u0000"/' \
        '/objects/1/encoding|encoding must not contain U+0000|s/"encoding": "raw_bytes_v1"/"encoding": "raw_bytes_v1\\u0000"/' \
        '/uses/0/activation_policy|activation_policy must be "A16Only", "AllowA8" or "AllowA4"|s/"A16Only"/"A16Only\\u0000"/'; do
        rm -f a.ninfer*
        nf_make_sed a.ninfer "${case##*|}"
        local rest=${case#*|}
        run -1 --separate-stderr ninfer-verify a.ninfer
        [[ "$stderr" == *": a.ninfer: ${case%%|*}: schema: ${rest%%|*}"* ]]
        run -1 --separate-stderr ninfer-cat --catalog a.ninfer
        [[ "$stderr" == *": ${case%%|*}: schema: "* ]]
        run -1 --separate-stderr ninfer-bind --check a.ninfer
        [[ "$stderr" == *": ${case%%|*}: schema: "* ]]
    done
}

@test "binder: \"LlamaForCausalLM\\u0000Qwen\" is no Llama (bind --check, run)" {
    NF_COMPONENTS='{"text": {"config": {"architectures": ["LlamaForCausalLM\u0000Qwen"], "hidden_size": 4, "vocab_size": 4, "num_hidden_layers": 1, "num_attention_heads": 1, "intermediate_size": 4}, "resources": {"tokenizer.json": "r.tok"}}}' \
        nf_make a.ninfer
    # verify reads no config: the catalog is valid
    run -0 ninfer-verify a.ninfer
    refused a.ninfer /components/text/config/architectures/0 "an architecture name must not contain U+0000" \
        ninfer-bind --check a.ninfer
    run -1 --separate-stderr ninfer-run --device cpu a.ninfer
    [[ "$stderr" == *": /components/text/config/architectures/0: schema: "* ]]
}

@test "import: a config's architecture and a safetensors dtype compare in full; nothing written" {
    nf-mkckpt ckpt > /dev/null
    sed -i 's/"LlamaForCausalLM"/"LlamaForCausalLM\\u0000Qwen"/' ckpt/config.json
    grep -qF 'LlamaForCausalLM\u0000Qwen' ckpt/config.json
    run -1 --separate-stderr ninfer-import -o out/m.json ckpt
    [[ "$stderr" == *": /components/text/config/architectures/0: schema: an architecture name must not contain U+0000" ]]
    [ ! -e out ]
    # "F32\u0000x" is no F32 (the reader compared it as a C string)
    local h='{"x":{"dtype":"F32\u0000x","shape":[4],"data_offsets":[0,16]}}' n
    n=${#h}
    printf "$(printf '\\x%02x' $((n & 255)) 0 0 0 0 0 0 0)%s" "$h" > t.safetensors
    head -c 16 /dev/zero >> t.safetensors
    printf '{"components": {"text": {"config": {}}}, "bindings": {}, "uses": [], "objects": [{"id": "w", "kind": "tensor", "shape": [4], "format": "fp32", "layout": "contiguous_le_v1", "source": {"safetensors": "t.safetensors", "tensor": "x"}}]}\n' > m.json
    run -1 --separate-stderr ninfer-pack -q -o out/a.ninfer m.json
    [[ "$stderr" == *"t.safetensors: /x: schema: dtype \"F32\\u0000...\" holds U+0000" ]]
    [ ! -e out ]
}
