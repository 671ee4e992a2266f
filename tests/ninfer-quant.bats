#!/usr/bin/env bats
# ninfer-quant: rules GLOB=FORMAT[:LAYOUT][,divisors=N][,policy=P] and
# recipes over logical parameter names (DESIGN 5), applied to the objects the
# parameters are bound to and to the policies of their uses; parent
# conflicts, shapes a format cannot hold, AllowA4's activation divisor, the
# provenance record, and usage errors.
#
# The fixture is the small Llama checkpoint of nf-mkckpt (hidden 256,
# intermediate 688, 2 layers, vocab 2048, untied head), turned into a manifest
# by nf-st2manifest --logical and renamed to the logical names of DESIGN 10
# (text/embedding, text/layers/0/mlp/gate, ...) with sed.

load helper

# logical_names — stdin → stdout: nf-st2manifest --logical's text/<tensor>
# names → DESIGN 10 logical names (bindings and uses alike).
logical_names() {
    sed -e 's|text/model\.embed_tokens\.weight|text/embedding|g' \
        -e 's|text/lm_head\.weight|text/head|g' \
        -e 's|text/model\.norm\.weight|text/final_norm|g' \
        -e 's|text/model\.layers\.\([0-9]*\)\.self_attn\.q_proj\.weight|text/layers/\1/attention/query|g' \
        -e 's|text/model\.layers\.\([0-9]*\)\.self_attn\.k_proj\.weight|text/layers/\1/attention/key|g' \
        -e 's|text/model\.layers\.\([0-9]*\)\.self_attn\.v_proj\.weight|text/layers/\1/attention/value|g' \
        -e 's|text/model\.layers\.\([0-9]*\)\.self_attn\.o_proj\.weight|text/layers/\1/attention/output|g' \
        -e 's|text/model\.layers\.\([0-9]*\)\.mlp\.\([a-z]*\)_proj\.weight|text/layers/\1/mlp/\2|g' \
        -e 's|text/model\.layers\.\([0-9]*\)\.input_layernorm\.weight|text/layers/\1/input_norm|g' \
        -e 's|text/model\.layers\.\([0-9]*\)\.post_attention_layernorm\.weight|text/layers/\1/post_attention_norm|g'
}

setup_file() {
    cd "$BATS_FILE_TMPDIR" || return 1
    nf-mkckpt ckpt > /dev/null 2>&1 &&
        nf-st2manifest --logical ckpt | logical_names > logical.json
}

# formats FILE — "ID FORMAT" per object of a (pretty) manifest, in order.
formats() {
    awk '/^ *"id": "/ { id = $2; gsub(/[",]/, "", id) }
         /^ *"format": "/ { f = $2; gsub(/[",]/, "", f); print id, f }' "$1"
}

# format_of FILE ID — the format of object ID; layout_of likewise.
format_of() {
    formats "$1" | awk -v id="$2" '$1 == id { print $2 }'
}
layout_of() {
    awk -v id="$2" '/^ *"id": "/ { cur = $2; gsub(/[",]/, "", cur) }
        /^ *"layout": "/ && cur == id { l = $2; gsub(/[",]/, "", l); print l }' "$1"
}

# count_format FILE FORMAT — how many objects have FORMAT.
count_format() {
    formats "$1" | awk -v f="$2" '$2 == f { n++ } END { print n + 0 }'
}

# policies FILE — "PARAMETER POLICY" per use (POLICY "-" when absent).
policies() {
    awk '/^ *"parameter": "/ { if (p != "") print p, pol; p = $2; gsub(/[",]/, "", p); pol = "-" }
         /^ *"activation_policy": "/ { pol = $2; gsub(/[",]/, "", pol) }
         /^ *"uses": \[/ { inuses = 1 }
         END { if (p != "") print p, pol }' "$1"
}

M() { echo "$BATS_FILE_TMPDIR/logical.json"; }

# tie_head FILE — the manifest with text/head bound to the embedding's object.
tie_head() {
    sed '/"text\/head": {/{n;s/lm_head\.weight/model.embed_tokens.weight/}' "$1"
}

# ---- basics --------------------------------------------------------------------

@test "--help prints the usage (exit 0), --version the version" {
    run -0 --separate-stderr ninfer-quant --help
    [ "${lines[0]}" = "usage: ninfer-quant [OPTIONS] [RULE...] < MANIFEST > MANIFEST" ]
    [[ "$output" == *"-r, --recipe FILE"* ]]
    [ -z "$stderr" ]
    run -0 ninfer-quant --version
    [[ "$output" =~ ^ninfer-quant\ [0-9] ]]
}

@test "the fixture: 16 matrices, 5 vectors, every use A16Only" {
    [ "$(formats "$(M)" | wc -l)" -eq 21 ]  # tensors (resources have no format)
    [ "$(count_format "$(M)" bf16)" -eq 16 ]
    [ "$(count_format "$(M)" fp32)" -eq 5 ]
    [ "$(policies "$(M)" | wc -l)" -eq 16 ]
    [ "$(policies "$(M)" | grep -vc ' A16Only$')" -eq 0 ]
    grep -q '"text/layers/1/mlp/down"' "$(M)"
}

@test "a rule sets the format and the layout its format allows; nothing else changes" {
    run -0 --separate-stderr ninfer-quant -i "$(M)" 'text/layers/0/mlp/gate=q4_g64_fp16'
    [ -z "$stderr" ]
    printf '%s\n' "$output" > q.json
    [ "$(format_of q.json model.layers.0.mlp.gate_proj.weight)" = q4_g64_fp16 ]
    [ "$(layout_of q.json model.layers.0.mlp.gate_proj.weight)" = row_split_k128_v1 ]
    diff <(formats "$(M)" | grep -v '^model.layers.0.mlp.gate_proj.weight ') \
        <(formats q.json | grep -v '^model.layers.0.mlp.gate_proj.weight ')
    # the source stays: the packer transcodes from it
    grep -A12 '"id": "model.layers.0.mlp.gate_proj.weight"' q.json |
        grep -q '"tensor":"model.layers.0.mlp.gate_proj.weight"'
    # and each format's own layout, without naming it
    run -0 ninfer-quant -i "$(M)" 'text/head=nvfp4' 'text/embedding=fp8_e4m3fn_row_bf16' \
        'text/layers/1/mlp/up=q8_g32_fp16:row_split_k128_v1'
    printf '%s\n' "$output" > q2.json
    [ "$(layout_of q2.json lm_head.weight)" = block_scale_k16_m128x4_v1 ]
    [ "$(layout_of q2.json model.embed_tokens.weight)" = row_scale_v1 ]
    [ "$(layout_of q2.json model.layers.1.mlp.up_proj.weight)" = row_split_k128_v1 ]
}

@test "globs: '*' crosses '/' (fnmatch without FNM_PATHNAME), '?' and brackets work" {
    run -0 ninfer-quant -i "$(M)" 'text/*/down=q8_g32_fp16'
    printf '%s\n' "$output" > a.json
    [ "$(format_of a.json model.layers.0.mlp.down_proj.weight)" = q8_g32_fp16 ]
    [ "$(format_of a.json model.layers.1.mlp.down_proj.weight)" = q8_g32_fp16 ]
    [ "$(count_format a.json q8_g32_fp16)" -eq 2 ]
    run -0 ninfer-quant -i "$(M)" 't*e=q6_g64_fp16'  # text/.../value and text/layers/N/mlp/gate
    printf '%s\n' "$output" > b.json
    [ "$(count_format b.json q6_g64_fp16)" -eq 4 ]
    [ "$(format_of b.json model.layers.1.self_attn.v_proj.weight)" = q6_g64_fp16 ]
    [ "$(format_of b.json model.layers.0.mlp.gate_proj.weight)" = q6_g64_fp16 ]
    run -0 ninfer-quant -i "$(M)" 'text/layers/?/attention/[qk]*=q5_g64_fp16'
    printf '%s\n' "$output" > c.json
    [ "$(count_format c.json q5_g64_fp16)" -eq 4 ]
    [ "$(format_of c.json model.layers.1.self_attn.k_proj.weight)" = q5_g64_fp16 ]
    [ "$(format_of c.json model.layers.1.self_attn.v_proj.weight)" = bf16 ]
    # a glob that matches nothing is a usage error naming it (a typo would
    # ship an unquantized manifest); --allow-unmatched lets it change nothing
    run -2 --separate-stderr ninfer-quant -i "$(M)" 'text/*=q8_g32_fp16' 'text/layers/0/mlp=q4_g64_fp16'
    expect_only_codes usage
    grep -qF "rule 2 ('text/layers/0/mlp=q4_g64_fp16') matches no parameter" <<< "$stderr"
    [ -z "$output" ]
    run -0 ninfer-quant --allow-unmatched -i "$(M)" 'text/layers/0/mlp=q4_g64_fp16'
    printf '%s\n' "$output" > d.json
    diff <(formats "$(M)") <(formats d.json)
}

@test "the last matching rule wins" {
    run -0 ninfer-quant -i "$(M)" 'text/*=q8_g32_fp16' 'text/layers/*/mlp/*=q4_g64_fp16' \
        'text/layers/1/mlp/down=q6_g64_fp16'
    printf '%s\n' "$output" > a.json
    [ "$(count_format a.json q8_g32_fp16)" -eq 10 ]  # embedding, head, 2 x 4 attention
    [ "$(count_format a.json q4_g64_fp16)" -eq 5 ]
    [ "$(count_format a.json q6_g64_fp16)" -eq 1 ]
    [ "$(format_of a.json model.layers.1.mlp.down_proj.weight)" = q6_g64_fp16 ]
    [ "$(format_of a.json model.layers.0.mlp.down_proj.weight)" = q4_g64_fp16 ]
    [ "$(format_of a.json lm_head.weight)" = q8_g32_fp16 ]
    # the same rules in the other order: the catch-all, last, wins everywhere
    run -0 ninfer-quant -i "$(M)" 'text/layers/1/mlp/down=q6_g64_fp16' \
        'text/layers/*/mlp/*=q4_g64_fp16' 'text/*=q8_g32_fp16'
    printf '%s\n' "$output" > b.json
    [ "$(count_format b.json q8_g32_fp16)" -eq 16 ]
}

@test "vectors a glob also matches keep their encoding; the matrices all change" {
    run -0 ninfer-quant -i "$(M)" '*=q4_g64_fp16'
    printf '%s\n' "$output" > a.json
    [ "$(count_format a.json q4_g64_fp16)" -eq 16 ]
    [ "$(count_format a.json fp32)" -eq 5 ]
    [ "$(format_of a.json model.norm.weight)" = fp32 ]
    [ "$(layout_of a.json model.norm.weight)" = contiguous_le_v1 ]
    [ "$(format_of a.json model.layers.1.post_attention_layernorm.weight)" = fp32 ]
    # resources are not touched either
    [ "$(grep -c '"encoding": "raw_bytes_v1"' a.json)" -eq 4 ]
}

@test "a policy goes to every use of the parameter; other uses keep theirs" {
    run -0 ninfer-quant -i "$(M)" 'text/layers/0/mlp/*=q8_g32_fp16,policy=AllowA8'
    printf '%s\n' "$output" > a.json
    run -0 policies a.json
    [ "$(grep -c ' AllowA8$' <<< "$output")" -eq 3 ]
    [ "$(grep -c ' A16Only$' <<< "$output")" -eq 13 ]
    grep -qx 'text/layers/0/mlp/down AllowA8' <<< "$output"
    # a rule without a policy leaves the uses' policies as they are
    run -0 ninfer-quant -i a.json 'text/layers/0/mlp/*=q6_g64_fp16'
    printf '%s\n' "$output" > b.json
    [ "$(policies b.json | grep -c ' AllowA8$')" -eq 3 ]
    [ "$(format_of b.json model.layers.0.mlp.up_proj.weight)" = q6_g64_fp16 ]
}

# ---- parents shared by several parameters --------------------------------------

@test "two parameters on one parent: one encoding is fine, two are an error naming both (exit 1)" {
    tie_head "$(M)" > tied.json
    grep -A1 '"text/head": {' tied.json | grep -q '"object": "model.embed_tokens.weight"'
    run -0 ninfer-quant -i tied.json 'text/embedding=q8_g32_fp16' 'text/head=q8_g32_fp16'
    printf '%s\n' "$output" > ok.json
    [ "$(format_of ok.json model.embed_tokens.weight)" = q8_g32_fp16 ]
    [ "$(format_of ok.json lm_head.weight)" = bf16 ]  # no longer bound: untouched
    run -1 --separate-stderr ninfer-quant -i tied.json -o out.json \
        'text/embedding=q8_g32_fp16' 'text/head=nvfp4'
    [ -z "$output" ]
    [ ! -e out.json ]
    expect_only_codes encoding
    [[ "$stderr" == *'"text/embedding"'* ]]
    [[ "$stderr" == *'"text/head"'* ]]
    [[ "$stderr" == *'"model.embed_tokens.weight"'* ]]
    # different divisors are different encodings too
    run -1 --separate-stderr ninfer-quant -i tied.json \
        'text/embedding=nvfp4,divisors=2' 'text/head=nvfp4,divisors=4'
    expect_only_codes encoding
    [[ "$stderr" == *'"text/embedding"'*'"text/head"'* ]]
}

@test "parts bindings over row halves of one parent: the parent takes their common encoding" {
    local q=model.layers.0.self_attn.q_proj.weight
    sed -z "s|\"bindings\": {\n|\"bindings\": {\n    \"text/layers/0/attention/query_a\": {\"parts\": [{\"object\": \"$q\", \"range\": [0, 32768]}]},\n    \"text/layers/0/attention/query_b\": {\"parts\": [{\"object\": \"$q\", \"range\": [32768, 65536]}]},\n|" \
        "$(M)" > halves.json
    grep -q query_b halves.json
    run -0 ninfer-quant -i halves.json 'text/layers/0/attention/query*=nvfp4'
    printf '%s\n' "$output" > a.json
    [ "$(format_of a.json "$q")" = nvfp4 ]
    [ "$(count_format a.json nvfp4)" -eq 1 ]
    run -1 --separate-stderr ninfer-quant -i halves.json \
        'text/layers/0/attention/query_a=q4_g64_fp16' 'text/layers/0/attention/query_b=q8_g32_fp16'
    [ -z "$output" ]
    expect_only_codes encoding
    [[ "$stderr" == *'"text/layers/0/attention/query_a"'* ]]
    [[ "$stderr" == *'"text/layers/0/attention/query_b"'* ]]
}

@test "ninfer-import --fuse: fused parameters share their parent's encoding; two encodings conflict" {
    ninfer-import --fuse "$BATS_FILE_TMPDIR/ckpt" > fused.json
    grep -q '"id": "text/layers/0/attention/qkv"' fused.json
    run -0 ninfer-quant -i fused.json 'text/layers/*/attention/*=nvfp4' 'text/layers/*/mlp/*=q6_g64_fp16'
    printf '%s\n' "$output" > a.json
    [ "$(format_of a.json text/layers/0/attention/qkv)" = nvfp4 ]
    [ "$(format_of a.json text/layers/1/mlp/gate_up)" = q6_g64_fp16 ]
    [ "$(count_format a.json nvfp4)" -eq 4 ]  # qkv and output of two layers
    # the import's lookup use has no policy, and a rule without one adds none
    grep -qx 'text/embedding -' <(policies a.json)
    run -1 --separate-stderr ninfer-quant -i fused.json 'text/layers/*/mlp/*=q6_g64_fp16' \
        'text/layers/1/mlp/up=q8_g32_fp16'
    [ -z "$output" ]
    [ "$stderr" = 'ninfer-quant: fused.json: encoding: object "text/layers/1/mlp/gate_up" is asked for q6_g64_fp16 by "text/layers/1/mlp/gate" and for q8_g32_fp16 by "text/layers/1/mlp/up"' ]
}

# ---- shapes a format cannot hold -----------------------------------------------

@test "nvfp4 on a shape it cannot hold: exit 1, encoding, the parameter named" {
    # mlp/gate is [688,256]: 688 % 128 != 0
    run -1 --separate-stderr ninfer-quant -i "$(M)" -o out.json 'text/layers/0/mlp/gate=nvfp4'
    [ -z "$output" ]
    [ ! -e out.json ]
    expect_only_codes encoding
    [[ "$stderr" == *'"text/layers/0/mlp/gate"'* ]]
    [[ "$stderr" == *"688"* ]]
    # mlp/down is [256,688]: 688 % 64 != 0
    run -1 --separate-stderr ninfer-quant -i "$(M)" 'text/layers/1/mlp/down=nvfp4'
    expect_only_codes encoding
    [[ "$stderr" == *'"text/layers/1/mlp/down"'* ]]
    # divisors that do not divide N
    run -1 --separate-stderr ninfer-quant -i "$(M)" 'text/head=nvfp4,divisors=3'
    expect_only_codes encoding
    [[ "$stderr" == *'"text/head"'* ]]
    # every offending parameter is named, not only the first
    run -1 --separate-stderr ninfer-quant -i "$(M)" 'text/layers/*/mlp/*=nvfp4'
    [ "$(grep -c ': encoding: ' <<< "$stderr")" -eq 6 ]
}

@test "nvfp4 where the shape allows it, with divisors: recorded on the object" {
    run -0 ninfer-quant -i "$(M)" 'text/head=nvfp4,divisors=4' 'text/layers/*/attention/*=nvfp4'
    printf '%s\n' "$output" > a.json
    [ "$(count_format a.json nvfp4)" -eq 9 ]
    grep -A12 '"id": "lm_head.weight"' a.json | grep -q '"divisors": 4,'
}

# ---- AllowA4 and the activation divisor ----------------------------------------

@test "AllowA4 on nvfp4 adds an fp32 scalar activation_input_divisor of 1.0 to each use" {
    # text/head gets a second use: each of its uses gets its own divisor
    sed -z 's|"uses": \[\n|"uses": [\n    {"parameter": "text/head", "input": "text/second_head_input", "activation_policy": "A16Only"},\n|' \
        "$(M)" > two.json
    run -0 ninfer-quant -i two.json -o a4.json \
        'text/head=nvfp4,policy=AllowA4' 'text/layers/0/attention/*=nvfp4,policy=AllowA4'
    [ -z "$output" ]
    # 4 attention uses + 2 head uses, each with its divisor
    [ "$(grep -c '"activation_input_divisor": {' a4.json)" -eq 6 ]
    [ "$(policies a4.json | grep -c ' AllowA4$')" -eq 6 ]
    local ids id n=0
    ids=$(sed -n '/"activation_input_divisor": {/{n;s/^ *"object": "\(.*\)"$/\1/p}' a4.json)
    [ "$(sort -u <<< "$ids" | wc -l)" -eq 6 ]
    # each is a new object: fp32, contiguous_le_v1, shape [] (a scalar)
    while IFS= read -r id; do
        [ "$(format_of a4.json "$id")" = fp32 ]
        [ "$(layout_of a4.json "$id")" = contiguous_le_v1 ]
        grep -A4 "\"id\": \"$id\"" a4.json | tr -d ' \n' | grep -q '"shape":\[\]'
    done <<< "$ids"
    # packed, each holds 1.0f
    run -0 ninfer-pack -q --no-sync -o a4.ninfer a4.json
    while IFS= read -r id; do
        run -0 bash -c "ninfer-cat --object '$id' a4.ninfer | od -An -tx1"
        [ "$output" = " 00 00 80 3f" ]
        n=$((n + 1))
    done <<< "$ids"
    [ "$n" -eq 6 ]
    run -0 ninfer-verify --deep a4.ninfer
    [[ "$output" == "a4.ninfer: OK ("* ]]
}

@test "AllowA4: the divisor an earlier run made is reused; another object under its ID is duplicate-id (red-team E26)" {
    run -0 ninfer-quant -i "$(M)" -o a4.json 'text/head=nvfp4,policy=AllowA4'
    # run again on its own output: the same divisor, not a second one
    run -0 ninfer-quant -i a4.json -o again.json 'text/head=nvfp4,policy=AllowA4'
    [ "$(grep -c '"activation_input_divisor": {' again.json)" -eq 1 ]
    local id
    id=$(sed -n '/"activation_input_divisor": {/{n;s/^ *"object": "\(.*\)"$/\1/p}' a4.json)
    [[ "$id" == a.text/head@*.activation_input_divisor ]]
    [ "$(grep -c "\"id\": \"$id\"" again.json)" -eq 1 ]
    [ "$(grep -c '"id": ' again.json)" -eq "$(grep -c '"id": ' a4.json)" ]
    # a resource that holds the divisor's ID: refused, naming it; nothing written
    sed -z "s|\"objects\": \\[\\n|\"objects\": [\\n    {\"id\": \"$id\", \"kind\": \"resource\", \"encoding\": \"raw_bytes_v1\", \"source\": {\"values\": [1], \"dtype\": \"u8\"}},\\n|" \
        "$(M)" > dup.json
    grep -q '"kind": "resource", "encoding"' dup.json
    run -1 --separate-stderr ninfer-quant -i dup.json -o dq.json 'text/head=nvfp4,policy=AllowA4'
    expect_only_codes duplicate-id
    [[ "$stderr" == *"/objects/0: duplicate-id: object \"$id\" exists and is not the fp32 scalar that the activation divisor of \"text/head\" (AllowA4, spec 8) must be: rename it" ]]
    [ ! -e dq.json ]
}

@test "AllowA4 on a format other than nvfp4 sets the policy and adds no divisor" {
    run -0 ninfer-quant -i "$(M)" 'text/head=q4_g64_fp16,policy=AllowA4'
    printf '%s\n' "$output" > a.json
    grep -qx 'text/head AllowA4' <(policies a.json)
    [ "$(grep -c activation_input_divisor a.json)" -eq 0 ]
    # nvfp4 without a policy: no divisor either
    run -0 ninfer-quant -i "$(M)" 'text/head=nvfp4'
    [ "$(grep -c activation_input_divisor <<< "$output")" -eq 0 ]
}

# ---- recipes, provenance, I/O ---------------------------------------------------

@test "--recipe holds the same rules as JSON; command-line rules come after it" {
    cat > recipe.json <<'EOF'
{"rules": [
  {"match": "text/*", "format": "q8_g32_fp16"},
  {"match": "text/layers/*/mlp/*", "format": "q4_g64_fp16", "layout": "row_split_k128_v1"},
  {"match": "text/head", "format": "nvfp4", "divisors": 2, "activation_policy": "AllowA4"}
]}
EOF
    run -0 ninfer-quant --recipe recipe.json -i "$(M)" -o from-recipe.json
    run -0 ninfer-quant -i "$(M)" -o from-args.json 'text/*=q8_g32_fp16' \
        'text/layers/*/mlp/*=q4_g64_fp16:row_split_k128_v1' 'text/head=nvfp4,divisors=2,policy=AllowA4'
    cmp from-recipe.json from-args.json
    [ "$(count_format from-recipe.json q4_g64_fp16)" -eq 6 ]
    [ "$(format_of from-recipe.json lm_head.weight)" = nvfp4 ]
    [ "$(grep -c '"activation_input_divisor": {' from-recipe.json)" -eq 1 ]
    # a rule on the command line is the last rule
    run -0 ninfer-quant -r recipe.json -i "$(M)" 'text/layers/1/*=q6_g64_fp16'
    printf '%s\n' "$output" > both.json
    [ "$(format_of both.json model.layers.1.mlp.down_proj.weight)" = q6_g64_fp16 ]
    [ "$(format_of both.json model.layers.1.self_attn.q_proj.weight)" = q6_g64_fp16 ]
    [ "$(format_of both.json model.layers.0.mlp.down_proj.weight)" = q4_g64_fp16 ]
}

@test "provenance.quantization records the rules; config numbers and other provenance keep their text" {
    sed 's|^  "uses": \[|  "provenance": {"converter": {"tool": "x", "scale": 1.50}},\n  "uses": [|' "$(M)" > p.json
    grep -q '"scale": 1.50' p.json
    run -0 ninfer-quant -i p.json 'text/*=q8_g32_fp16' 'text/head=nvfp4,divisors=2,policy=AllowA4'
    printf '%s\n' "$output" > q.json
    local prov
    prov=$(grep '"provenance"' q.json)
    [[ "$prov" == *'"converter":{"tool": "x", "scale": 1.50}'* ]]
    [[ "$prov" == *'"quantization":{"tool":"ninfer-quant '* ]]
    [[ "$prov" == *'"rules":[{"match":"text/*","format":"q8_g32_fp16","layout":"row_split_k128_v1"},{"match":"text/head","format":"nvfp4","layout":"block_scale_k16_m128x4_v1","divisors":2,"activation_policy":"AllowA4"}]'* ]]
    # the config travels verbatim, number text included
    grep -q '"rope_theta": 10000.0,' q.json
    grep -q '"rms_norm_eps": 1e-05,' q.json
    # and the result packs; the record reaches the artifact's catalog
    run -0 ninfer-pack -q --no-sync -o q.ninfer q.json
    ninfer-cat --catalog q.ninfer | grep -q '"quantization":{"tool":"ninfer-quant '
}

@test "stdin/stdout and -i/-o give the same manifest; the output packs and verifies --deep" {
    ninfer-quant 'text/layers/*=q5_g64_fp16' 'text/embedding=fp8_e4m3fn_row_bf16' < "$(M)" > a.json
    run -0 ninfer-quant -i "$(M)" -o b.json 'text/layers/*=q5_g64_fp16' 'text/embedding=fp8_e4m3fn_row_bf16'
    [ -z "$output" ]
    cmp a.json b.json
    # and it is a manifest again: quantize it a second time
    run -0 ninfer-quant -i a.json 'text/head=q8_g32_fp16'
    printf '%s\n' "$output" > c.json
    [ "$(count_format c.json q5_g64_fp16)" -eq 14 ]
    [ "$(format_of c.json lm_head.weight)" = q8_g32_fp16 ]
    run -0 ninfer-pack -q --no-sync -o c.ninfer c.json
    run -0 ninfer-verify --deep c.ninfer
    [ "$output" = "c.ninfer: OK (25 digests checked)" ]
    # q5 [688,256] (DESIGN 8): 688*256/2 + 688*256/8 + 688*4*2 = 115584
    ninfer-cat --catalog c.ninfer | grep -q '"id":"model.layers.0.mlp.gate_proj.weight","kind":"tensor","shape":\[688,256\],"format":"q5_g64_fp16","layout":"row_split_k128_v1","offset":[0-9]*,"bytes":115584'
}

# ---- errors ---------------------------------------------------------------------

@test "bad rules are usage errors (exit 2) and write nothing" {
    local r
    for r in 'x' '=q4_g64_fp16' 'a=' 'a=nope' 'a=q4_g64_fp16:contiguous_le_v1' \
        'a=q4_g64_fp16,divisors=2' 'a=nvfp4,divisors=0' 'a=nvfp4,divisors=x' \
        'a=nvfp4,policy=A2' 'a=nvfp4,bogus=1'; do
        run -2 --separate-stderr ninfer-quant -i "$(M)" -o out.json "$r"
        [ -z "$output" ]
        [ ! -e out.json ]
        expect_only_codes usage
    done
    run -2 --separate-stderr ninfer-quant -i "$(M)"
    [[ "$stderr" == *"no rules given"* ]]
    run -2 --separate-stderr ninfer-quant --bogus 'a=bf16'
    [ -z "$output" ]
}

@test "bad recipes: a bad value is usage (2), a bad shape schema (1), bad JSON json (1), no file io (3)" {
    printf '{"rules": [{"match": "a", "format": "nope"}]}' > r1.json
    run -2 --separate-stderr ninfer-quant -r r1.json -i "$(M)"
    [ -z "$output" ]
    [[ "$stderr" == "ninfer-quant: r1.json: /rules/0: usage: "* ]]
    printf '{"rules": [{"match": "a"}]}' > r2.json
    run -1 --separate-stderr ninfer-quant -r r2.json -i "$(M)"
    [[ "$stderr" == "ninfer-quant: r2.json: /rules/0: schema: "* ]]
    printf '{"rules": [{"match": "a", "format": "bf16", "extra": 1}]}' > r3.json
    run -1 --separate-stderr ninfer-quant -r r3.json -i "$(M)"
    expect_only_codes schema
    [[ "$stderr" == *'"extra"'* ]]
    printf '{"rulez": []}' > r4.json
    run -1 --separate-stderr ninfer-quant -r r4.json -i "$(M)"
    expect_only_codes schema
    printf '{"rules": [{"match": "a", "format": "nvfp4", "divisors": 0}]}' > r5.json
    run -1 --separate-stderr ninfer-quant -r r5.json -i "$(M)"
    expect_only_codes schema
    printf '{"rules": [' > r6.json
    run -1 --separate-stderr ninfer-quant -r r6.json -i "$(M)"
    expect_only_codes json
    run -3 --separate-stderr ninfer-quant -r missing.json -i "$(M)"
    expect_only_codes io
    [ -z "$output" ]
}

@test "a manifest that breaks a rule is exit 1; one that cannot be read exit 3" {
    run -3 --separate-stderr ninfer-quant -i missing.json 'a=bf16'
    expect_only_codes io
    [ -z "$output" ]
    printf '{"components": ' > broken.json
    run -1 --separate-stderr ninfer-quant -i broken.json 'a=bf16'
    expect_only_codes json
    [ -z "$output" ]
    # a binding to an object that does not exist
    sed '/"text\/head": {/{n;s/lm_head\.weight/no.such.object/}' "$(M)" > ref.json
    run -1 --separate-stderr ninfer-quant -i ref.json 'text/head=q8_g32_fp16'
    [ "$stderr" = 'ninfer-quant: ref.json: /bindings/text~1head/object: reference: no object "no.such.object"' ]
    [ -z "$output" ]
}
