#!/usr/bin/env bats
# ninfer-run: the engine's load path made observable (DESIGN 11) — component
# selection (only the selected components' parents are read), each parent
# read once, row views of shared parents, every use's projection checked
# against the CPU reference (stories260K quantized to every format at once),
# and the exit statuses of DESIGN 3.
#
# Fixtures (setup_file): the small Llama checkpoint of nf-mkckpt and its
# manifest from nf-st2manifest --logical (bindings text/<tensor name>, one
# A16Only use per matrix), plus two edited by sed:
#   mtp.json    a second component "mtp" (target text) with a private object
#               mtp.fc [256,512] bound as mtp/fc, used at mtp/fc_input, placed
#               so that it lands alone in the last part of the packed set;
#   shared.json q_proj of layer 0 bound three times (whole, and two parts
#               bindings over its row halves) and a binding over the rows of
#               two parents (k_proj and v_proj), each with a use.

load helper

REALDATA="${NF_REALDATA:-$REPO/../shared/realdata}"

Q=model.layers.0.self_attn.q_proj.weight

setup_file() {
    cd "$BATS_FILE_TMPDIR" || return 1
    nf-mkckpt ckpt > /dev/null 2>&1 || return 1
    nf-st2manifest --logical ckpt > logical.json || return 1

    # mtp.fc starts where the entry's payload ends: with the catalog held at
    # --json-bytes 65504 the entry's payload starts at 65536, so a file limit
    # of 65536 + OFF puts mtp.fc, and only it, in part 1.
    local p off
    p=$(ninfer-pack --dry-run logical.json | sed -n 's/.*"payload_bytes": \([0-9]*\).*/\1/p')
    off=$(((p + 4095) / 4096 * 4096))
    echo "$off" > mtp.offset
    sed -z \
        -e 's|"components": {\n|"components": {\n    "mtp": {"config": {"architectures": ["X"]}, "target": "text"},\n|' \
        -e "s|\n  \],\n  \"bindings\": {\n|,\n    {\"id\": \"mtp.fc\", \"kind\": \"tensor\", \"shape\": [256, 512], \"format\": \"bf16\", \"layout\": \"contiguous_le_v1\", \"offset\": $off, \"source\": {\"file\": \"ckpt/model.safetensors\", \"offset\": 4096, \"dtype\": \"bf16\"}}\n  ],\n  \"bindings\": {\n    \"mtp/fc\": {\"object\": \"mtp.fc\"},\n|" \
        -e 's|"uses": \[\n|"uses": [\n    {"parameter": "mtp/fc", "input": "mtp/fc_input", "activation_policy": "A16Only"},\n|' \
        logical.json > mtp.json
    ninfer-pack -q --no-sync --json-bytes 65504 --max-file-bytes $((off + 65536)) \
        -o mtp/m.ninfer mtp.json || return 1

    sed -z \
        -e "s|\"bindings\": {\n|\"bindings\": {\n    \"text/query_a\": {\"parts\": [{\"object\": \"$Q\", \"range\": [0, 32768]}]},\n    \"text/query_b\": {\"parts\": [{\"object\": \"$Q\", \"range\": [32768, 65536]}]},\n    \"text/kv\": {\"parts\": [{\"object\": \"model.layers.0.self_attn.k_proj.weight\", \"range\": [0, 32768]}, {\"object\": \"model.layers.0.self_attn.v_proj.weight\", \"range\": [0, 32768]}]},\n|" \
        -e 's|"uses": \[\n|"uses": [\n    {"parameter": "text/query_a", "input": "text/mixer_input", "activation_policy": "A16Only"},\n    {"parameter": "text/query_b", "input": "text/mixer_input", "activation_policy": "A16Only"},\n    {"parameter": "text/kv", "input": "text/mixer_input", "activation_policy": "A16Only"},\n|' \
        logical.json > shared.json
}

# ---- reading the report --------------------------------------------------------

# jarr NAME — the strings of the array "NAME" in the JSON $output, one a line.
jarr() {
    grep -o "\"$1\":\[[^]]*\]" <<< "$output" | head -n1 |
        sed 's/^[^[]*\[//; s/\]$//' | tr ',' '\n' | sed 's/^"//; s/"$//; /^$/d'
}

# use_rec PARAMETER — the use record of PARAMETER in the JSON $output.
use_rec() {
    local re
    re=$(sed 's/[.[\*^$]/\\&/g' <<< "$1")
    grep -o "{\"parameter\":\"$re\"[^}]*}" <<< "$output"
}

# rec_field RECORD NAME — one scalar of a flat JSON record.
rec_field() {
    grep -o "\"$2\":\(\"[^\"]*\"\|[^,}]*\)" <<< "$1" | head -n1 | sed "s/^\"$2\"://; s/^\"//; s/\"\$//"
}

# tensor_bytes ARTIFACT — the sum of the encoded sizes of its tensors.
tensor_bytes() {
    ninfer-cat --catalog "$1" | grep -o '"kind":"tensor"[^}]*"bytes":[0-9]*' |
        sed 's/.*"bytes"://' | awk '{ s += $1 } END { print s + 0 }'
}

# all_ok N — the $output report has exactly N use records, every one "ok",
# each with max_rel_error below 1e-5 (the kernels decode bit-exactly and
# only sum in another order: the errors are a few f32 ulps).
all_ok() {
    [ "$(grep -o '"status":"[a-z]*"' <<< "$output" | wc -l)" -eq "$1" ]
    [ "$(grep -o '"status":"ok"' <<< "$output" | wc -l)" -eq "$1" ]
    grep -o '"max_rel_error":[^,}]*' <<< "$output" | sed 's/.*://' |
        awk -v n="$1" '{ c++; if (!($1 >= 0 && $1 < 1e-5)) bad++ } END { exit !(c == n && !bad) }'
    [[ "$output" == *'"exit":0,"diagnostics":[]'* ]]
}

# has_gpu — a CUDA build on a machine with a GPU (else --device cuda is 4).
has_gpu() {
    ! grep -qa 'rebuild where nvcc is installed' "$NF_BIN/ninfer-run" &&
        command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1
}

# ---- basics --------------------------------------------------------------------

@test "--help prints the usage (exit 0), --version the version" {
    run -0 --separate-stderr ninfer-run --help
    [ "${lines[0]}" = "usage: ninfer-run [OPTIONS] ARTIFACT|-" ]
    [[ "$output" == *"--component C,..."* ]]
    [ -z "$stderr" ]
    run -0 ninfer-run --version
    [[ "$output" =~ ^ninfer-run\ [0-9] ]]
}

@test "usage errors exit 2; a missing artifact exits 3" {
    run -2 --separate-stderr ninfer-run --device cpu
    [[ "$stderr" == *"no artifact given"* ]]
    run -2 ninfer-run --device cpu a.ninfer b.ninfer
    run -2 ninfer-run --device gpu a.ninfer
    run -2 ninfer-run --iters 0 a.ninfer
    run -2 ninfer-run --iters x a.ninfer
    run -2 ninfer-run --threads 0 a.ninfer
    run -2 ninfer-run --bogus a.ninfer
    run -3 --separate-stderr ninfer-run --device cpu missing.ninfer
    [ -z "$output" ]
    expect_only_codes io
}

# ---- every format at once on a real checkpoint ---------------------------------

@test "stories260K in ten formats at once: every projection passes its check (--device cpu)" {
    local src="$REALDATA/stories260K/hf-f32"
    [ -e "$src/model.safetensors" ] || skip "real data absent: $src"
    nf-st2manifest --logical "$src" > f32.json
    run -0 ninfer-quant -i f32.json -o q.json \
        'text/*layers.0.*=q4_g64_fp16' 'text/*layers.1.*=q5_g64_fp16' \
        'text/*layers.2.*=q6_g64_fp16' 'text/*layers.3.*=q8_g32_fp16' \
        'text/*layers.4.self_attn.[qk]_proj*=q2_g64_fp16' \
        'text/*layers.4.self_attn.v_proj*=t2_g128_fp16' \
        'text/*layers.4.self_attn.o_proj*=bf16' \
        'text/*layers.4.mlp.[gu]*=fp8_e4m3fn_row_bf16' \
        'text/model.embed_tokens.weight=nvfp4,policy=AllowA4'
    run -0 ninfer-pack -q --no-sync -o q.ninfer q.json
    run -0 --separate-stderr ninfer-run --device cpu --iters 3 --json q.ninfer
    [ -z "$stderr" ]
    [ "${#lines[@]}" -eq 1 ]
    all_ok 36  # 5 layers x 7 projections + the (tied) embedding
    [ "$(json_field device)" = cpu ]
    [ "$(jarr components)" = text ]
    # every tensor and the AllowA4 divisor loaded once; only the config unread
    [ "$(json_field parents_loaded)" -eq 48 ]
    [ "$(jarr objects_loaded | wc -l)" -eq 48 ]
    [ "$(jarr objects_unread)" = r.config.json ]
    [ "$(json_field bytes_read)" -eq "$(tensor_bytes q.ninfer)" ]
    jarr objects_loaded | grep -q 'activation_input_divisor$'
    # each use ran with its parent's format
    local p f rec
    while read -r p f; do
        rec=$(use_rec "text/model.$p.weight")
        [ "$(rec_field "$rec" format)" = "$f" ]
        [ "$(rec_field "$rec" status)" = ok ]
    done <<'EOF'
embed_tokens nvfp4
layers.0.mlp.down_proj q4_g64_fp16
layers.1.self_attn.q_proj q5_g64_fp16
layers.2.mlp.up_proj q6_g64_fp16
layers.3.self_attn.o_proj q8_g32_fp16
layers.4.self_attn.k_proj q2_g64_fp16
layers.4.self_attn.v_proj t2_g128_fp16
layers.4.self_attn.o_proj bf16
layers.4.mlp.gate_proj fp8_e4m3fn_row_bf16
layers.4.mlp.down_proj fp32
EOF
    rec=$(use_rec text/model.embed_tokens.weight)
    [ "$(rec_field "$rec" rows)" -eq 512 ]
    [ "$(rec_field "$rec" k)" -eq 64 ]
    rec=$(use_rec text/model.layers.2.mlp.down_proj.weight)
    [ "$(rec_field "$rec" rows)" -eq 64 ]
    [ "$(rec_field "$rec" k)" -eq 172 ]
    # the text report: a summary, a header, one line per use, all ok
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --threads 1 q.ninfer
    [ "${lines[0]}" = "device cpu, components text" ]
    [[ "${lines[1]}" == "loaded 48 parents, "*"; 1 objects left unread" ]]
    [ "${#lines[@]}" -eq 39 ]
    [ "$(printf '%s\n' "${lines[@]:3}" | grep -c ' ok$')" -eq 36 ]
}

# ---- component selection --------------------------------------------------------

@test "the fixture: mtp's object lies alone in the last part" {
    local off
    off=$(cat "$BATS_FILE_TMPDIR/mtp.offset")
    run -0 ninfer-cat --files "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    [ "$(grep -c '"index"' <<< "$output")" -eq 2 ]
    [ "$(json_num_last logical_offset)" -eq "$off" ]
    [ "$(json_num_last payload_bytes)" -eq 262144 ]  # mtp.fc: 256 x 512 bf16
    ninfer-cat --catalog "$BATS_FILE_TMPDIR/mtp/m.ninfer" |
        grep -q "\"id\":\"mtp.fc\",\"kind\":\"tensor\",\"shape\":\[256,512\],\"format\":\"bf16\",\"layout\":\"contiguous_le_v1\",\"offset\":$off,\"bytes\":262144"
}

# json_num_last NAME — the last number value of "NAME" in $output.
json_num_last() {
    grep -o "\"$1\": *[0-9]*" <<< "$output" | tail -n1 | sed 's/.*: *//'
}

@test "running text reads only text's parents: mtp's object stays unread" {
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    all_ok 16
    [ "$(jarr components)" = text ]
    [ "$(json_field parents_loaded)" -eq 21 ]
    jarr objects_unread | grep -qx mtp.fc
    [ "$(jarr objects_loaded | grep -cx mtp.fc)" -eq 0 ]
    [ -z "$(use_rec mtp/fc)" ]
    # the resources are never loaded
    [ "$(jarr objects_unread | grep -c '^r\.')" -eq 4 ]
}

@test "--component mtp brings its target: text's parents and mtp's, mtp/fc checked" {
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json --component mtp \
        "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    all_ok 17
    [ "$(jarr components | tr '\n' ' ')" = "mtp text " ]
    [ "$(json_field parents_loaded)" -eq 22 ]
    jarr objects_loaded | grep -qx mtp.fc
    local rec
    rec=$(use_rec mtp/fc)
    [ "$(rec_field "$rec" input)" = mtp/fc_input ]
    [ "$(rec_field "$rec" rows)" -eq 256 ]
    [ "$(rec_field "$rec" k)" -eq 512 ]
    [ "$(rec_field "$rec" status)" = ok ]
}

@test "without the part that holds only mtp's object, text still passes and mtp is part-missing (exit 3)" {
    cp -r "$BATS_FILE_TMPDIR/mtp" .
    rm mtp/m.ninfer.part-0001
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json mtp/m.ninfer
    all_ok 16
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --component text mtp/m.ninfer
    [ "${lines[0]}" = "device cpu, components text" ]
    run -3 --separate-stderr ninfer-run --device cpu --component mtp mtp/m.ninfer
    [ -z "$output" ]
    [ "$stderr" = "ninfer-run: mtp/m.ninfer.part-0001: /files/1: part-missing: part 1 is missing" ]
    run -3 --separate-stderr ninfer-run --device cpu --component text,mtp mtp/m.ninfer
    expect_only_codes part-missing
    # the set as a whole is incomplete
    run -3 --separate-stderr ninfer-verify mtp/m.ninfer
    expect_only_codes part-missing
}

@test "--component nope: component-missing (exit 1)" {
    run -1 --separate-stderr ninfer-run --device cpu --component nope "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    [ -z "$output" ]
    [ "$stderr" = "ninfer-run: $BATS_FILE_TMPDIR/mtp/m.ninfer: /components: component-missing: component \"nope\" was selected but the artifact does not provide it" ]
    run -1 --separate-stderr ninfer-run --device cpu --component text,nope "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    expect_only_codes component-missing
}

@test "--json reports a failed run too: one line with file, exit and diagnostics (DESIGN 3)" {
    cp "$BATS_FILE_TMPDIR/mtp/m.ninfer" m.ninfer
    run -1 --separate-stderr ninfer-run --device cpu --json --component nope m.ninfer
    expect_only_codes component-missing
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == *'"file":"m.ninfer"'* ]]
    [[ "$output" == *'"exit":1'* ]]
    [[ "$output" == *'"code":"component-missing","pointer":"/components"'* ]]
}

# ---- parents shared by several parameters ----------------------------------------

@test "a parent bound whole and as two row halves is loaded once; every view checked (5 formats)" {
    local f rec n
    n=$(grep -c '"kind": "tensor"' "$BATS_FILE_TMPDIR/shared.json")
    [ "$n" -eq 21 ]
    for f in bf16 q4_g64_fp16 q6_g64_fp16 nvfp4 fp8_e4m3fn_row_bf16; do
        # q_proj's three bindings (whole, query_a, query_b) ask for the same
        # format; text/kv spans k_proj and v_proj, both q5
        run -0 ninfer-quant --force -i "$BATS_FILE_TMPDIR/shared.json" -o s.json \
            "text/*q_proj*=$f" "text/query_?=$f" 'text/*[kv]_proj*=q5_g64_fp16' 'text/kv=q5_g64_fp16'
        run -0 ninfer-pack -q --no-sync --force -o s.ninfer s.json
        run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json s.ninfer
        all_ok 19
        [ "$(json_field parents_loaded)" -eq "$n" ]
        [ "$(jarr objects_loaded | grep -cx "$Q")" -eq 1 ]
        [ "$(jarr objects_loaded | sort -u | wc -l)" -eq "$n" ]
        [ "$(json_field bytes_read)" -eq "$(tensor_bytes s.ninfer)" ]
        for rec in "$(use_rec text/query_a)" "$(use_rec text/query_b)"; do
            [ "$(rec_field "$rec" format)" = "$f" ]
            [ "$(rec_field "$rec" rows)" -eq 128 ]
            [ "$(rec_field "$rec" k)" -eq 256 ]
            [ "$(rec_field "$rec" parents)" -eq 1 ]
            [ "$(rec_field "$rec" view)" = rows ]
        done
        rec=$(use_rec "text/$Q")
        [ "$(rec_field "$rec" rows)" -eq 256 ]
        rec=$(use_rec text/kv)
        [ "$(rec_field "$rec" format)" = q5_g64_fp16 ]
        [ "$(rec_field "$rec" rows)" -eq 256 ]
        [ "$(rec_field "$rec" parents)" -eq 2 ]
    done
}

@test "ninfer-import --fuse: each fused parent read once, every projection checked on its rows" {
    ninfer-import --fuse "$BATS_FILE_TMPDIR/ckpt" |
        ninfer-quant 'text/layers/0/attention/*=nvfp4' 'text/layers/1/attention/*=q4_g64_fp16' \
            'text/layers/*/mlp/*=q6_g64_fp16' 'text/head=fp8_e4m3fn_row_bf16' > f.json
    run -0 ninfer-pack -q --no-sync -o f.ninfer f.json
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json f.ninfer
    [ "$(grep -o '"status":"ok"' <<< "$output" | wc -l)" -eq 15 ]
    [ "$(use_rec text/embedding)" = '{"parameter":"text/embedding","input":"text/token_ids","status":"lookup"}' ]
    # 15 tensors: per layer qkv, output, gate_up, down and two norms; the
    # embedding, the final norm and the head
    [ "$(json_field parents_loaded)" -eq 15 ]
    [ "$(jarr objects_loaded | sort -u | wc -l)" -eq 15 ]
    [ "$(jarr objects_loaded | grep -c 'text/layers/[01]/attention/qkv')" -eq 2 ]
    [ "$(json_field bytes_read)" -eq "$(tensor_bytes f.ninfer)" ]
    local p rows f rec
    while read -r p rows f; do
        rec=$(use_rec "text/layers/$p")
        [ "$(rec_field "$rec" rows)" -eq "$rows" ]
        [ "$(rec_field "$rec" format)" = "$f" ]
        [ "$(rec_field "$rec" parents)" -eq 1 ]
        [ "$(rec_field "$rec" status)" = ok ]
    done <<'EOF'
0/attention/query 256 nvfp4
0/attention/key 128 nvfp4
0/attention/value 128 nvfp4
1/attention/key 128 q4_g64_fp16
1/mlp/gate 688 q6_g64_fp16
1/mlp/up 688 q6_g64_fp16
EOF
}

# ---- devices ---------------------------------------------------------------------

@test "--device cuda without a CUDA build or device: unsupported (exit 4)" {
    has_gpu && skip "a CUDA build with a GPU: see the next test"
    run -4 --separate-stderr ninfer-run --device cuda "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    [ -z "$output" ]
    expect_only_codes unsupported
    [[ "$stderr" == *"built without CUDA"* || "$stderr" == *"no CUDA device"* ]]
    run -4 --separate-stderr ninfer-run --device cuda --json "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    expect_only_codes unsupported
}

@test "--device cuda on a GPU: every projection checked against the CPU reference" {
    has_gpu || skip "no CUDA build with a GPU here (stub backend or no device)"
    run -0 ninfer-quant -i "$BATS_FILE_TMPDIR/shared.json" -o s.json \
        'text/*layers.0.*=q4_g64_fp16' 'text/*layers.1.*=fp8_e4m3fn_row_bf16' \
        'text/query_?=q4_g64_fp16' 'text/kv=q4_g64_fp16' 'text/lm_head.weight=nvfp4'
    run -0 ninfer-pack -q --no-sync -o s.ninfer s.json
    run -0 --separate-stderr ninfer-run --device cuda --iters 3 --json s.ninfer
    all_ok 19
    [ "$(json_field device)" = cuda ]
}

@test "without --device the choice is said on stderr" {
    run -0 --separate-stderr ninfer-run --iters 1 "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    if has_gpu; then
        [ "$stderr" = "ninfer-run: running on the CUDA device" ]
    else
        [[ "$stderr" == "ninfer-run: running on the CPU ("*")" ]]
        [ "${lines[0]}" = "device cpu, components text" ]
    fi
}

# ---- inputs ----------------------------------------------------------------------

@test "--input: zero activations give exactly zero error; ones pass the check" {
    head -c $((688 * 2)) /dev/zero > zero.bin
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --input zero.bin --json \
        "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    all_ok 16
    [ "$(grep -o '"max_rel_error":0.0[,}]' <<< "$output" | wc -l)" -eq 16 ]
    # 688 bf16 ones (0x3f80, little-endian)
    for ((i = 0; i < 688; i++)); do printf '\x80\x3f'; done > ones.bin
    [ "$(stat -c %s ones.bin)" -eq 1376 ]
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --input ones.bin --json \
        "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    all_ok 16
    run -3 --separate-stderr ninfer-run --device cpu --input missing.bin "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    expect_only_codes io
}

@test "--input shorter than the largest K is refused, not silently replaced (exit 2)" {
    head -c 10 /dev/zero > short.bin
    run -2 --separate-stderr ninfer-run --device cpu --iters 1 --input short.bin \
        "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    [ -z "$output" ]
    [[ "$stderr" == *"--input"* || "$stderr" == *"short.bin"* ]]
}

# ---- hand-made artifacts -----------------------------------------------------------

@test "any valid segmentation: a parent split across three files runs" {
    nf_make e.ninfer 8 4 988
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json e.ninfer
    all_ok 1
    local rec
    rec=$(use_rec text/a)
    [ "$(rec_field "$rec" rows)" -eq 2 ]
    [ "$(rec_field "$rec" k)" -eq 4 ]
    [ "$(jarr objects_loaded)" = w.a ]
    [ "$(jarr objects_unread)" = r.tok ]
    [ "$(json_field bytes_read)" -eq 16 ]
}

@test "a use without a policy (a token lookup) is listed, not run" {
    NF_USES='[{"parameter": "text/a", "input": "text/token_ids"}]' nf_make e.ninfer
    run -0 --separate-stderr ninfer-run --device cpu --json e.ninfer
    [ "$(use_rec text/a)" = '{"parameter":"text/a","input":"text/token_ids","status":"lookup"}' ]
}

@test "a parent in a format this build has no kernel for: unsupported (exit 4)" {
    NF_OBJECTS="[$(nf_tensor w.a "[2, 4]" 0 16 mystery_v1 mystery_layout_v1), $(nf_resource r.tok 16 984)]" \
        nf_make e.ninfer
    run -4 --separate-stderr ninfer-run --device cpu --json e.ninfer
    expect_only_codes unsupported
    [[ "$stderr" == *"mystery_v1"* ]]
    [[ "$output" == *'"exit":4'* ]]
    [ "$(rec_field "$(use_rec text/a)" status)" = failed ]
}

@test "diagnostics point into the catalog with a JSON Pointer (DESIGN 3)" {
    NF_OBJECTS="[$(nf_tensor w.a "[2, 4]" 0 16 mystery_v1 mystery_layout_v1), $(nf_resource r.tok 16 984)]" \
        nf_make e.ninfer
    run -4 --separate-stderr ninfer-run --device cpu e.ninfer
    # e.g. /uses/0 or /objects/0, not the parameter's name
    [[ "$stderr" =~ ^ninfer-run:\ e\.ninfer:\ /[a-z]+/0:\ unsupported:\  ]]
}

@test "a stream on standard input runs like the file (DESIGN 3, 4)" {
    run -0 ninfer-quant -i "$BATS_FILE_TMPDIR/shared.json" -o s.json 'text/*=q4_g64_fp16'
    run -0 ninfer-pack -q --no-sync -o s.ninfer s.json
    run -0 --separate-stderr bash -c 'ninfer-cat s.ninfer | ninfer-run --device cpu --iters 1 --json -'
    all_ok 19
    [ "$(json_field parents_loaded)" -eq 21 ]
    run -0 --separate-stderr bash -c 'ninfer-cat --zstd s.ninfer | ninfer-run --device cpu --iters 1 --json -'
    all_ok 19
}
