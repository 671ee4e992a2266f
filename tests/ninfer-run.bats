#!/usr/bin/env bats
# ninfer-run: the engine's load path made observable (DESIGN 11) — binding
# with the architecture checks of ninfer-bind --check (issue 11 item 7),
# component selection (only the selected components' parents are read),
# each parent read once, row views of shared parents, every use's
# projection checked against the CPU reference (stories260K quantized to
# every format at once), and the exit statuses of DESIGN 3.
#
# Fixtures (setup_file), all bound by architecture names (ninfer-import):
#   logical.json the small Llama checkpoint of nf-mkckpt (2 layers, H 256,
#                I 688), one A16Only use per matrix;
#   mtp/m.ninfer a tiny Qwen3-Next with its mtp component (nf-mkarch --mtp),
#                packed so that every mtp-private object (and the resources
#                after them) lies in the last part: the mtp objects start
#                at an offset pinned to a page (mtp.offset) that is the
#                entry's payload end;
#   shared.json  logical.json with layer 0's query bound as two row halves
#                of q_proj and its key as the first rows of k_proj and of
#                v_proj (v_proj is the value's parent too).

load helper

REALDATA="${NF_REALDATA:-$REPO/../shared/realdata}"

setup_file() {
    cd "$BATS_FILE_TMPDIR" || return 1
    nf-mkckpt ckpt > /dev/null 2>&1 || return 1
    ninfer-import -q ckpt > logical.json || return 1

    # the mtp fixture: pack once to find where the mtp objects start, pin
    # the first of them to the next page, and cut the set there
    nf-mkarch --arch qwen3next --mtp mck > /dev/null 2>&1 || return 1
    ninfer-import -q mck > mtp0.json || return 1
    ninfer-pack -q --no-sync -o mtp0.ninfer mtp0.json || return 1
    local nat off
    nat=$(ninfer-cat --catalog mtp0.ninfer | grep -o '"id":"mtp\.pre_fc_norm_embedding\.weight"[^}]*"offset":[0-9]*' |
        sed 's/.*"offset"://')
    [ -n "$nat" ] || return 1
    off=$(((nat + 4095) / 4096 * 4096))
    echo "$off" > mtp.offset
    sed "s|^\(      \"id\": \"mtp.pre_fc_norm_embedding.weight\",\)\$|\1\n      \"offset\": $off,|" \
        mtp0.json > mtp.json
    grep -q "\"offset\": $off," mtp.json || return 1
    # the catalog held at --json-bytes 69600: the entry's payload starts at
    # 69632, so a file limit of 69632 + OFF ends the entry at OFF
    ninfer-pack -q --no-sync --json-bytes 69600 --max-file-bytes $((69632 + off)) \
        -o mtp/m.ninfer mtp.json || return 1

    local q=model.layers.0.self_attn.q_proj.weight k=model.layers.0.self_attn.k_proj.weight
    local v=model.layers.0.self_attn.v_proj.weight
    sed -z \
        -e "s|\"text/layers/0/attention/query\": {\n      \"object\": \"$q\"\n    }|\"text/layers/0/attention/query\": {\"parts\": [{\"object\": \"$q\", \"range\": [0, 32768]}, {\"object\": \"$q\", \"range\": [32768, 65536]}]}|" \
        -e "s|\"text/layers/0/attention/key\": {\n      \"object\": \"$k\"\n    }|\"text/layers/0/attention/key\": {\"parts\": [{\"object\": \"$k\", \"range\": [0, 16384]}, {\"object\": \"$v\", \"range\": [0, 16384]}]}|" \
        logical.json > shared.json
    [ "$(grep -c '"parts"' shared.json)" -eq 2 ] || return 1
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

# all_ok N — the $output report has exactly N use records that ran (token
# lookups, listed with status "lookup", aside), every one "ok", each with
# max_rel_error below 1e-5 (the kernels decode bit-exactly and only sum in
# another order: the errors are a few f32 ulps).
all_ok() {
    [ "$(grep -o '"status":"[a-z]*"' <<< "$output" | grep -vc '"lookup"')" -eq "$1" ]
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
    ninfer-import -q "$src" > f32.json
    run -0 ninfer-quant -i f32.json -o q.json \
        'text/layers/0/*=q4_g64_fp16' 'text/layers/1/*=q5_g64_fp16' \
        'text/layers/2/*=q6_g64_fp16' 'text/layers/3/*=q8_g32_fp16' \
        'text/layers/4/attention/[qk]*=q2_g64_fp16' \
        'text/layers/4/attention/value=t2_g128_fp16' \
        'text/layers/4/attention/output=bf16' \
        'text/layers/4/mlp/[gu]*=fp8_e4m3fn_row_bf16' \
        'text/head=nvfp4,policy=AllowA4'
    run -0 ninfer-pack -q --no-sync -o q.ninfer q.json
    run -0 --separate-stderr ninfer-run --device cpu --iters 3 --json q.ninfer
    [ -z "$stderr" ]
    [ "${#lines[@]}" -eq 1 ]
    all_ok 36  # 5 layers x 7 projections + the head (tied to the embedding)
    [ "$(json_field device)" = cpu ]
    [ "$(jarr components)" = text ]
    # every tensor and the AllowA4 divisor loaded once
    [ "$(json_field parents_loaded)" -eq 48 ]
    [ "$(jarr objects_loaded | wc -l)" -eq 48 ]
    [ -z "$(jarr objects_unread)" ]
    [ "$(json_field bytes_read)" -eq "$(tensor_bytes q.ninfer)" ]
    jarr objects_loaded | grep -q 'activation_input_divisor$'
    # each use ran with its parent's format
    local p f rec
    while read -r p f; do
        rec=$(use_rec "text/$p")
        [ "$(rec_field "$rec" format)" = "$f" ]
        [ "$(rec_field "$rec" status)" = ok ]
    done <<'EOF'
head nvfp4
layers/0/mlp/down q4_g64_fp16
layers/1/attention/query q5_g64_fp16
layers/2/mlp/up q6_g64_fp16
layers/3/attention/output q8_g32_fp16
layers/4/attention/key q2_g64_fp16
layers/4/attention/value t2_g128_fp16
layers/4/attention/output bf16
layers/4/mlp/gate fp8_e4m3fn_row_bf16
layers/4/mlp/down fp32
EOF
    [ "$(use_rec text/embedding)" = '{"parameter":"text/embedding","input":"text/token_ids","status":"lookup"}' ]
    rec=$(use_rec text/head)
    [ "$(rec_field "$rec" rows)" -eq 512 ]
    [ "$(rec_field "$rec" k)" -eq 64 ]
    rec=$(use_rec text/layers/2/mlp/down)
    [ "$(rec_field "$rec" rows)" -eq 64 ]
    [ "$(rec_field "$rec" k)" -eq 172 ]
    # the text report: a summary, a header, one line per use, all ok
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --threads 1 q.ninfer
    [ "${lines[0]}" = "device cpu, components text" ]
    [[ "${lines[1]}" == "loaded 48 parents, "* ]]
    [ "$(printf '%s\n' "${lines[@]:3}" | grep -c ' ok$')" -eq 36 ]
}

# ---- binding: the architecture checks of ninfer-bind --check ----------------------

# rebind SED — logical.json edited by SED (sed -z: the whole file), packed
# to b.ninfer; the edit must change something.
rebind() {
    sed -z "$1" "$BATS_FILE_TMPDIR/logical.json" > b.json
    if cmp -s b.json "$BATS_FILE_TMPDIR/logical.json"; then
        echo "rebind: '$1' changed nothing" >&2
        return 1
    fi
    ninfer-pack -q --no-sync -o b.ninfer b.json
}

# same_as_bind STATUS CODE — ninfer-run and ninfer-bind --check on b.ninfer
# exit STATUS with the same diagnostics, of CODE; nothing is run.
same_as_bind() {
    run -"$1" --separate-stderr ninfer-bind --check b.ninfer
    local want=${stderr//ninfer-bind/ninfer-run}
    expect_only_codes "$2"
    run -"$1" --separate-stderr ninfer-run --device cpu --iters 1 b.ninfer
    [ "$stderr" = "$want" ]
    [ -z "$output" ]
}

@test "a parameter bound to an object of the wrong shape: the binder's coverage error, not a run" {
    # the query bound to the key's parent: [128, 256], not [256, 256]
    rebind 's|"text/layers/0/attention/query": {\n      "object": "model.layers.0.self_attn.q_proj.weight"|"text/layers/0/attention/query": {\n      "object": "model.layers.0.self_attn.k_proj.weight"|'
    same_as_bind 1 coverage
}

@test "hidden_size 0 in the config: the binder's diagnostics, not a run" {
    rebind 's|"hidden_size": 256|"hidden_size": 0|'
    run -1 --separate-stderr ninfer-bind --check b.ninfer
    local want=${stderr//ninfer-bind/ninfer-run}
    run -1 --separate-stderr ninfer-run --device cpu b.ninfer
    [ "$stderr" = "$want" ]
    grep -qF '/components/text/config/hidden_size' <<< "$stderr"
    [ -z "$output" ]
}

@test "an unknown architecture: unsupported (4), as ninfer-bind --check says; a stream the same" {
    rebind 's|"LlamaForCausalLM"|"MysteryForCausalLM"|'
    same_as_bind 4 unsupported
    run -4 --separate-stderr bash -c 'ninfer-cat b.ninfer | ninfer-run --device cpu -'
    expect_only_codes unsupported
}

@test "a use on another input than the architecture's: unknown-parameter (1), like bind --check" {
    rebind 's|"parameter": "text/layers/1/mlp/gate",\n      "input": "text/layers/1/mlp_input"|"parameter": "text/layers/1/mlp/gate",\n      "input": "text/layers/1/mixer_input"|'
    run -1 --separate-stderr ninfer-bind --check b.ninfer
    local want=${stderr//ninfer-bind/ninfer-run}
    run -1 --separate-stderr ninfer-run --device cpu --iters 1 b.ninfer
    [ "$stderr" = "$want" ]
    [ -z "$output" ]
}

# ---- component selection --------------------------------------------------------

@test "the fixture: mtp's objects lie in the last part, after the entry's payload" {
    local off
    off=$(cat "$BATS_FILE_TMPDIR/mtp.offset")
    run -0 ninfer-cat --files "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    [ "$(grep -c '"index"' <<< "$output")" -eq 2 ]
    [ "$(json_num_last logical_offset)" -eq "$off" ]
    # every object at or past the part's start is mtp's (or a resource), and
    # no mtp object lies before it
    ninfer-cat --catalog "$BATS_FILE_TMPDIR/mtp/m.ninfer" |
        grep -o '"id":"[^"]*","kind":"[a-z]*"[^}]*"offset":[0-9]*' |
        sed 's/"id":"\([^"]*\)".*"offset":\([0-9]*\)/\2 \1/' > placed
    [ "$(grep -c . placed)" -gt 100 ]
    [ -z "$(awk -v off="$off" '($1 >= off && $2 !~ /^(mtp\.|r\.)/) || ($1 < off && $2 ~ /^mtp\./)' placed)" ]
    grep -qx "$off mtp.pre_fc_norm_embedding.weight" placed
}

# json_num_last NAME — the last number value of "NAME" in $output.
json_num_last() {
    grep -o "\"$1\": *[0-9]*" <<< "$output" | tail -n1 | sed 's/.*: *//'
}

# uses_of PREFIX — the uses with an activation policy of the parameters
# whose names start with PREFIX/, counted in the fixture's catalog.
uses_of() {
    ninfer-cat --catalog "$BATS_FILE_TMPDIR/mtp/m.ninfer" |
        grep -o "{\"parameter\":\"$1/[^\"]*\",\"input\":\"[^\"]*\",\"activation_policy\"" | wc -l
}

@test "running text reads only text's parents: mtp's objects stay unread" {
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    [ "$(uses_of text)" -gt 50 ]
    all_ok "$(uses_of text)"
    [ "$(jarr components)" = text ]
    [ "$(json_field parents_loaded)" -eq 105 ]
    jarr objects_unread | grep -qx mtp.fc.weight
    [ "$(jarr objects_loaded | grep -c '^mtp\.')" -eq 0 ]
    [ -z "$(use_rec mtp/fc)" ]
    # the resources are never loaded
    [ "$(jarr objects_unread | grep -c '^r\.')" -eq 4 ]
}

@test "--component mtp brings its target: text's parents and mtp's, mtp/fc checked" {
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json --component mtp \
        "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    all_ok $(($(uses_of text) + $(uses_of mtp)))
    [ "$(jarr components | tr '\n' ' ')" = "text mtp " ]
    [ "$(json_field parents_loaded)" -eq 134 ]
    jarr objects_loaded | grep -qx mtp.fc.weight
    local rec
    rec=$(use_rec mtp/fc)
    [ "$(rec_field "$rec" input)" = mtp/fc_input ]
    [ "$(rec_field "$rec" rows)" -eq 64 ]
    [ "$(rec_field "$rec" k)" -eq 128 ]
    [ "$(rec_field "$rec" status)" = ok ]
}

@test "without the part that holds mtp's objects, text still passes and mtp is part-missing (exit 3)" {
    cp -r "$BATS_FILE_TMPDIR/mtp" .
    rm mtp/m.ninfer.part-0001
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json mtp/m.ninfer
    all_ok "$(uses_of text)"
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

Q=model.layers.0.self_attn.q_proj.weight

@test "a parent bound as two row halves, and one bound whole and in part, are each loaded once (5 formats)" {
    local f rec n
    n=$(grep -c '"kind": "tensor"' "$BATS_FILE_TMPDIR/shared.json")
    [ "$n" -eq 21 ]
    for f in bf16 q4_g64_fp16 q6_g64_fp16 nvfp4 fp8_e4m3fn_row_bf16; do
        # the query's two halves ask q_proj for one format; the key spans
        # k_proj and v_proj, and the value is v_proj: both q5
        run -0 ninfer-quant --force -i "$BATS_FILE_TMPDIR/shared.json" -o s.json \
            "text/layers/0/attention/query=$f" 'text/layers/0/attention/[kv]*=q5_g64_fp16'
        run -0 ninfer-pack -q --no-sync --force -o s.ninfer s.json
        run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json s.ninfer
        all_ok 15
        [ "$(json_field parents_loaded)" -eq "$n" ]
        [ "$(jarr objects_loaded | grep -cx "$Q")" -eq 1 ]
        [ "$(jarr objects_loaded | sort -u | wc -l)" -eq "$n" ]
        [ "$(json_field bytes_read)" -eq "$(tensor_bytes s.ninfer)" ]
        rec=$(use_rec text/layers/0/attention/query)
        [ "$(rec_field "$rec" format)" = "$f" ]
        [ "$(rec_field "$rec" rows)" -eq 256 ]
        [ "$(rec_field "$rec" k)" -eq 256 ]
        [ "$(rec_field "$rec" parents)" -eq 2 ]
        [ "$(rec_field "$rec" view)" = rows ]
        rec=$(use_rec text/layers/0/attention/key)
        [ "$(rec_field "$rec" format)" = q5_g64_fp16 ]
        [ "$(rec_field "$rec" rows)" -eq 128 ]
        [ "$(rec_field "$rec" parents)" -eq 2 ]
        rec=$(use_rec text/layers/0/attention/value)
        [ "$(rec_field "$rec" rows)" -eq 128 ]
        [ "$(rec_field "$rec" parents)" -eq 1 ]
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
    [[ "$stderr" == *"built without CUDA"* || "$stderr" == *"no CUDA device"* ||
        "$stderr" == *"no NVIDIA driver"* || "$stderr" == *"older than this build's runtime"* ]]
    run -4 --separate-stderr ninfer-run --device cuda --json "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    expect_only_codes unsupported
}

@test "--device cuda on a GPU: every projection checked against the CPU reference" {
    has_gpu || skip "no CUDA build with a GPU here (stub backend or no device)"
    run -0 ninfer-quant -i "$BATS_FILE_TMPDIR/shared.json" -o s.json \
        'text/layers/0/*=q4_g64_fp16' 'text/layers/1/*=fp8_e4m3fn_row_bf16' 'text/head=nvfp4'
    run -0 ninfer-pack -q --no-sync -o s.ninfer s.json
    run -0 --separate-stderr ninfer-run --device cuda --iters 3 --json s.ninfer
    all_ok 15
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

# the largest K of the text component of the mtp fixture (its hidden size)
K=64

@test "--input: zero activations give exactly zero error; ones pass the check" {
    head -c $((K * 2)) /dev/zero > zero.bin
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --input zero.bin --json \
        "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    local n
    n=$(uses_of text)
    all_ok "$n"
    [ "$(grep -o '"max_rel_error":0.0[,}]' <<< "$output" | wc -l)" -eq "$n" ]
    # K bf16 ones (0x3f80, little-endian)
    for ((i = 0; i < K; i++)); do printf '\x80\x3f'; done > ones.bin
    [ "$(stat -c %s ones.bin)" -eq $((K * 2)) ]
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --input ones.bin --json \
        "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    all_ok "$n"
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

@test "--input reads only the K values it needs: /dev/zero and a longer file run, a directory is io" {
    # an endless device: the old reader grew its buffer until memory ran out
    run -0 --separate-stderr timeout 60 ninfer-run --device cpu --iters 1 --input /dev/zero --json \
        "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    local n
    n=$(uses_of text)
    all_ok "$n"
    [ "$(grep -o '"max_rel_error":0.0[,}]' <<< "$output" | wc -l)" -eq "$n" ]
    # K ones, then a NaN past K: never read, so the run passes
    for ((i = 0; i < K; i++)); do printf '\x80\x3f'; done > long.bin
    printf '\xc0\x7f' >> long.bin
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --input long.bin --json \
        "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    all_ok "$n"
    # a read error is not the end of the input: a directory is io, not "holds 0 values"
    mkdir d
    run -3 --separate-stderr ninfer-run --device cpu --input d "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    expect_only_codes io
    [ "$stderr" = "ninfer-run: d: io: cannot read: Is a directory" ]
    [ -z "$output" ]
}

@test "--input holding a NaN or an infinity among its first K values is the user's usage error, not codes" {
    local i
    for ((i = 0; i < K; i++)); do printf '\xc0\x7f'; done > nan.bin
    run -2 --separate-stderr ninfer-run --device cpu --iters 1 --input nan.bin \
        "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    expect_only_codes usage
    [ "$stderr" = "ninfer-run: nan.bin: usage: --input value 0 is NaN (bf16 0x7fc0): activations must be finite" ]
    [ -z "$output" ]
    # ones with -Inf (0xff80) at element 7
    for ((i = 0; i < K; i++)); do
        if [ "$i" -eq 7 ]; then printf '\x80\xff'; else printf '\x80\x3f'; fi
    done > inf.bin
    run -2 --separate-stderr ninfer-run --device cpu --iters 1 --input inf.bin --json \
        "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    [[ "$output" == *'"exit":2'* ]]
    [[ "$output" == *'"code":"usage","pointer":"","file":"inf.bin","message":"--input value 7 is infinite (bf16 0xff80): activations must be finite"'* ]]
}

@test "--device cuda with a stream is a usage error before any device is probed; the default takes the CPU for a stream" {
    run -2 --separate-stderr bash -c 'ninfer-cat "$1" | ninfer-run --device cuda -' _ "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    [ "$stderr" = "ninfer-run: usage: --device cuda reads an artifact file, not a stream (see 'ninfer-run --help')" ]
    [ -z "$output" ]
    run -0 --separate-stderr bash -c 'ninfer-cat "$1" | ninfer-run --iters 1 -' _ "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    [ "$stderr" = "ninfer-run: running on the CPU (a stream)" ]
    [ "${lines[0]}" = "device cpu, components text" ]
}

# ---- odd artifacts -------------------------------------------------------------------

@test "any valid segmentation: a parent split across three files runs" {
    # q_proj (128 KiB) over files of at most 64 KiB
    run -0 ninfer-pack -q --no-sync --max-file-bytes 64K -o e.ninfer "$BATS_FILE_TMPDIR/logical.json"
    [ "$(ninfer-cat --files e.ninfer | grep -c '"index"')" -gt 10 ]
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json e.ninfer
    all_ok 15
    [ "$(json_field bytes_read)" -eq "$(tensor_bytes e.ninfer)" ]
    local rec
    rec=$(use_rec text/layers/0/attention/query)
    [ "$(rec_field "$rec" rows)" -eq 256 ]
    [ "$(rec_field "$rec" k)" -eq 256 ]
    [ "$(rec_field "$rec" status)" = ok ]
}

@test "spec 8: AllowA8 and AllowA4 uses run on the A8 path, A16Only ones never; --activation a16" {
    nf-mkckpt ckpt > /dev/null 2>&1
    ninfer-import ckpt > m.json
    run -0 ninfer-quant -i m.json -o q.json 'text/*=q4_g64_fp16' \
        'text/layers/0/*=q4_g64_fp16,policy=AllowA8' 'text/layers/1/mlp/*=q8_g32_fp16,policy=AllowA4' \
        'text/layers/1/attention/*=q6_g64_fp16,policy=A16Only'
    run -0 ninfer-pack -q --no-sync -o q.ninfer q.json
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json q.ninfer
    [ -z "$stderr" ]
    local p want rec n8=0 n16=0
    for p in $(grep -o '"parameter":"[^"]*"' <<< "$output" | sed 's/.*:"//; s/"$//'); do
        rec=$(use_rec "$p")
        [ "$(rec_field "$rec" status)" = ok ] || [ "$(rec_field "$rec" status)" = lookup ]
        [ "$(rec_field "$rec" status)" = ok ] || continue
        case "$p" in
        text/layers/0/* | text/layers/1/mlp/*) want=a8 n8=$((n8 + 1)) ;;
        *) want=a16 n16=$((n16 + 1)) ;;
        esac
        [ "$(rec_field "$rec" activation)" = "$want" ]
    done
    [ "$n8" -eq 10 ] # layer 0: 7 projections; layer 1: gate, up, down
    [ "$n16" -ge 5 ]
    [[ "$output" == *'"exit":0,"diagnostics":[]'* ]]
    # --activation a16: every use on A16, still within the bound
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --activation a16 --json q.ninfer
    [ "$(grep -c '"activation":"a8"' <<< "$output")" -eq 0 ]
    [ "$(grep -o '"activation":"a16"' <<< "$output" | wc -l)" -eq $((n8 + n16)) ]
    [[ "$output" == *'"exit":0,"diagnostics":[]'* ]]
    run -2 ninfer-run --activation a8 q.ninfer
}

@test "a use without a policy (a token lookup) is listed, not run" {
    run -0 ninfer-pack -q --no-sync -o e.ninfer "$BATS_FILE_TMPDIR/logical.json"
    run -0 --separate-stderr ninfer-run --device cpu --json e.ninfer
    [ "$(use_rec text/embedding)" = '{"parameter":"text/embedding","input":"text/token_ids","status":"lookup"}' ]
}

# mystery — e.ninfer: the Llama fixture with layer 0's query parent in a
# format this build does not know (re-framed from its catalog and payload).
mystery() {
    ninfer-pack -q --no-sync -o l.ninfer "$BATS_FILE_TMPDIR/logical.json"
    local p
    p=$(ninfer-cat --catalog l.ninfer | grep -o '"payload_bytes":[0-9]*' | tail -n1 | sed 's/.*://')
    ninfer-cat --catalog l.ninfer |
        sed 's/"id":"model.layers.0.self_attn.q_proj.weight","kind":"tensor","shape":\[256,256\],"format":"bf16","layout":"contiguous_le_v1"/"id":"model.layers.0.self_attn.q_proj.weight","kind":"tensor","shape":[256,256],"format":"mystery_v1","layout":"mystery_layout_v1"/' > e.json
    grep -q mystery_v1 e.json
    ninfer-cat --range "0:$p" l.ninfer > e.pay
    nf-mkartifact --catalog e.json --payload e.pay -o e.ninfer
}

@test "a parent in a format this build has no kernel for: unsupported (exit 4)" {
    mystery
    run -4 --separate-stderr ninfer-run --device cpu --json e.ninfer
    expect_only_codes unsupported
    [[ "$stderr" == *"mystery_v1"* ]]
    [[ "$output" == *'"exit":4'* ]]
}

@test "diagnostics point into the catalog with a JSON Pointer (DESIGN 3)" {
    mystery
    run -4 --separate-stderr ninfer-run --device cpu e.ninfer
    # e.g. /objects/2, not the parameter's name
    [[ "$stderr" =~ ^ninfer-run:\ e\.ninfer:\ /[a-z]+/[0-9]+:\ unsupported:\  ]]
}

@test "a stream on standard input runs like the file (DESIGN 3, 4)" {
    run -0 ninfer-quant -i "$BATS_FILE_TMPDIR/shared.json" -o s.json 'text/*=q4_g64_fp16'
    run -0 ninfer-pack -q --no-sync -o s.ninfer s.json
    run -0 --separate-stderr bash -c 'ninfer-cat s.ninfer | ninfer-run --device cpu --iters 1 --json -'
    all_ok 15
    [ "$(json_field parents_loaded)" -eq 21 ]
    run -0 --separate-stderr bash -c 'ninfer-cat --zstd s.ninfer | ninfer-run --device cpu --iters 1 --json -'
    all_ok 15
}

# ---- trust: digests and non-finite weights -----------------------------------------

# obj_file_offset ARTIFACT ID — the file offset of object ID's first byte in
# a single-file artifact (its payload runs to the end of the file).
obj_file_offset() {
    local off pay
    off=$(ninfer-cat --catalog "$1" | grep -o "\"id\":\"$2\"[^}]*\"offset\":[0-9]*" | sed 's/.*"offset"://')
    pay=$(ninfer-cat --catalog "$1" | grep -o '"payload_bytes":[0-9]*' | head -n1 | sed 's/.*://')
    echo $(($(nf_size "$1") - pay + off))
}

# st_offset FILE TENSOR — the file offset of a safetensors tensor's data.
st_offset() {
    local hlen off
    hlen=$(od -An -tu8 -N8 "$1" | tr -d ' ')
    off=$(head -c $((8 + hlen)) "$1" | grep -ao "\"$2\":{[^}]*}" | sed 's/.*"data_offsets":\[\([0-9]*\),.*/\1/')
    echo $((8 + hlen + off))
}

Q=model.layers.0.self_attn.q_proj.weight

@test "every parent's digest is checked as it is read; a flipped weight byte is digest (exit 1), not ok; --no-digests skips" {
    run -0 ninfer-pack -q --no-sync -o d.ninfer "$BATS_FILE_TMPDIR/logical.json"
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json d.ninfer
    [ "$(json_field digests)" = checked ]
    [ "$(json_field digests_checked)" -eq "$(json_field parents_loaded)" ]
    [ "$(json_field digests_absent)" -eq 0 ]
    run -0 ninfer-run --device cpu --iters 1 d.ninfer
    [[ "${lines[1]}" == "loaded 21 parents, "*" GB/s), 21 digests checked; 3 objects left unread" ]]
    # one byte of q_proj's 300th weight
    nf_flip d.ninfer $(($(obj_file_offset d.ninfer $Q) + 600))
    local t
    for t in 1 2 4; do
        run -1 --separate-stderr ninfer-run --device cpu --threads $t --iters 1 d.ninfer
        [ -z "$output" ]
        expect_only_codes digest
        [ "${#stderr_lines[@]}" -eq 1 ]
        [[ "$stderr" == "ninfer-run: d.ninfer: /objects/2: digest: object \"$Q\": sha256 "*", metadata.integrity says "* ]]
    done
    run -1 --separate-stderr ninfer-run --device cpu --iters 1 --json d.ninfer
    [[ "$output" == *'"exit":1,"diagnostics":[{"code":"digest"'* ]]
    [[ "$output" != *'"status":"ok"'* ]]
    # a stream of it: hashed as it passes
    run -1 --separate-stderr bash -c 'ninfer-cat d.ninfer | ninfer-run --device cpu --iters 1 -'
    expect_only_codes digest
    # --no-digests: read as it is, and the kernel agrees with the reference on those bytes
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --no-digests --json d.ninfer
    [ "$(json_field digests)" = skipped ]
    [ "$(json_field digests_checked)" -eq 0 ]
    all_ok 15
    run -0 ninfer-run --device cpu --iters 1 --no-digests d.ninfer
    [[ "${lines[1]}" == *"GB/s), digests not checked (--no-digests); 3 objects left unread" ]]
}

@test "a stream from pack carries no digests: nothing to check, said as such" {
    run -0 bash -c 'ninfer-pack -q -o - "$BATS_FILE_TMPDIR/logical.json" | ninfer-run --device cpu --iters 1 --json -'
    [ "$(json_field digests_checked)" -eq 0 ]
    [ "$(json_field digests_absent)" -eq 21 ]
    all_ok 15
}

@test "Inf and NaN weights in a valid artifact compare by class (same infinity, both NaN): every row passes" {
    cp -r "$BATS_FILE_TMPDIR/ckpt" ck
    local at
    at=$(st_offset ck/model.safetensors $Q)
    # row 0: +Inf at column 5; row 1: NaN at column 3; row 2: +Inf and -Inf; row 3: -Inf
    nf_poke ck/model.safetensors $((at + 10)) 80
    nf_poke ck/model.safetensors $((at + 11)) 7f
    nf_poke ck/model.safetensors $((at + 512 + 6)) c0
    nf_poke ck/model.safetensors $((at + 512 + 7)) 7f
    nf_poke ck/model.safetensors $((at + 1024)) 80
    nf_poke ck/model.safetensors $((at + 1025)) 7f
    nf_poke ck/model.safetensors $((at + 1026)) 80
    nf_poke ck/model.safetensors $((at + 1027)) ff
    nf_poke ck/model.safetensors $((at + 1536 + 100)) 80
    nf_poke ck/model.safetensors $((at + 1536 + 101)) ff
    ninfer-import -q ck > m.json
    run -1 --separate-stderr ninfer-pack -q --no-sync -o n.ninfer m.json
    expect_only_codes range
    run -0 ninfer-pack -q --no-sync --allow-nonfinite -o n.ninfer m.json
    run -0 --separate-stderr ninfer-run --device cpu --iters 1 --json n.ninfer
    [ -z "$stderr" ]
    all_ok 15
    local rec
    rec=$(use_rec text/layers/0/attention/query)
    [ "$(rec_field "$rec" rows_failed)" = 0 ]
    [ "$(rec_field "$rec" status)" = ok ]
    run -0 ninfer-run --device cpu --iters 1 --activation a16 n.ninfer
}

@test "a failed row says what failed: f32 overflow in the kernel (inf or nan) against a finite reference" {
    cp -r "$BATS_FILE_TMPDIR/ckpt" ck
    local at
    at=$(st_offset ck/model.safetensors $Q)
    # row 0, columns 0 and 1: bf16's largest finite values +-3.39e38; times 2 each
    # overflows f32 in the kernel's sums, while the reference (double) cancels them
    nf_poke ck/model.safetensors $at 7f
    nf_poke ck/model.safetensors $((at + 1)) 7f
    nf_poke ck/model.safetensors $((at + 2)) 7f
    nf_poke ck/model.safetensors $((at + 3)) ff
    ninfer-import -q ck > m.json
    run -0 ninfer-pack -q --no-sync -o o.ninfer m.json
    # x = 2.0 everywhere (bf16 0x4000)
    printf '\x00\x40%.0s' $(seq 1 1024) > two.bin
    [ "$(od -An -tx2 -N4 two.bin | tr -d ' ')" = 40004000 ]
    run -1 --separate-stderr ninfer-run --device cpu --iters 1 --input two.bin --activation a16 --json o.ninfer
    expect_only_codes codes
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" =~ ^ninfer-run:\ o\.ninfer:\ /uses/1:\ codes:\ text/layers/0/attention/query:\ row\ 0:\ kernel\ gives\ -?(nan|inf),\ the\ reference\ [0-9.e+-]+\ \(bound\ [0-9.e+-]+\)$ ]]
    local rec
    rec=$(use_rec text/layers/0/attention/query)
    [ "$(rec_field "$rec" status)" = failed ]
    [ "$(rec_field "$rec" rows_failed)" = 1 ]
    [ "$(rec_field "$rec" max_rel_error)" = null ]
    [ "$(rec_field "$rec" max_err_over_bound)" = null ]
    # the other uses pass
    [ "$(grep -o '"status":"ok"' <<< "$output" | wc -l)" -eq 14 ]
    # the table: act a16, max_rel nan, err/bound inf, failed (1 rows)
    run -1 ninfer-run --device cpu --iters 1 --input two.bin --activation a16 o.ninfer
    local line
    line=$(grep '^text/layers/0/attention/query ' <<< "$output")
    [[ "$line" =~ \ a16\ .*\ nan\ +inf\ +failed\ \(1\ rows\)$ ]]
}

@test "the table has an activation column; --iters 1 times a warm run" {
    run -0 ninfer-run --device cpu --iters 1 "$BATS_FILE_TMPDIR/mtp/m.ninfer"
    [[ "${lines[2]}" =~ ^parameter\ +format\ +act\ +rows\ +K\ +time_ms\ +GB/s\ +max_rel\ +err/bound\ +status$ ]]
    grep -qE '^text/layers/0/.* a16 .* ok$' <<< "$output"
}
