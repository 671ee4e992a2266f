#!/usr/bin/env bats
# ninfer-bind: listing, the binder checks of spec 11.3 (every row of spec
# 12.6 with its code), --plan and --extract, on artifacts made from
# generated checkpoints (nf-mkarch → ninfer-import → ninfer-pack) and on
# hand-framed catalogs (helper.bash) for the generic rows.

load helper

# base FAMILY [nf-mkarch OPTIONS] — m.json / m.ninfer from a tiny checkpoint.
base() {
    nf-mkarch --arch "$@" ck
    ninfer-import -q --force -o m.json ck
    ninfer-pack -q --force -o m.ninfer m.json
}

# edit NAME PERL — pack NAME.ninfer from m.json edited by `perl -0pe PERL`;
# fails when the edit changed nothing.
edit() {
    perl -0pe "$2" m.json > "$1.json"
    if cmp -s m.json "$1.json"; then
        echo "edit '$2' changed nothing" >&2
        return 1
    fi
    ninfer-pack -q -o "$1.ninfer" "$1.json"
}

# check_fails STATUS ARTIFACT CODE... — --check exits STATUS with exactly these codes.
check_fails() {
    local want=$1 art=$2
    shift 2
    run -"$want" --separate-stderr ninfer-bind --check "$art"
    expect_code "$1"
    expect_only_codes "$@"
}

@test "--help, --version and usage errors" {
    run -0 ninfer-bind --help
    [[ "$output" == usage:* ]]
    run -0 ninfer-bind --version
    run -2 ninfer-bind
    run -2 ninfer-bind --check --plan x
    run -2 ninfer-bind --dtype f32 x
    run -2 ninfer-bind --extract a --dtype f64 x
    run -2 ninfer-bind a b
    run -2 ninfer-bind --bogus x
}

@test "list: name, shape, elements, format/layout, parents, view|gather; --json" {
    base llama
    run -0 ninfer-bind m.ninfer
    [ "${#lines[@]}" -eq 21 ]
    [ "${lines[0]}" = $'text/embedding\t128x64\t8192\tbf16/contiguous_le_v1\tmodel.embed_tokens.weight\tview' ]
    [[ "$output" == *$'text/layers/1/input_norm\t64\t64\tfp32/contiguous_le_v1\tmodel.layers.1.input_layernorm.weight\tview'* ]]
    local l
    for l in "${lines[@]}"; do
        [ "$(awk -F'\t' '{print NF}' <<< "$l")" -eq 6 ]
    done
    run -0 ninfer-bind --json m.ninfer
    [[ "$output" == *'"name": "text/layers/0/mlp/down"'* ]]
    [[ "$output" == *'"shape": ['* ]]
    [[ "$output" == *'"view": true'* ]]
    # parts of one parent: view when one whole-row range, gather when several
    base qwen3next
    run -0 ninfer-bind m.ninfer
    [[ "$output" == *$'text/layers/1/attention/gate\t64x64\t4096\tbf16/contiguous_le_v1\tmodel.layers.1.self_attn.q_proj.weight\tgather'* ]]
    ninfer-import -q --fuse -o f.json ck
    ninfer-pack -q -o f.ninfer f.json
    run -0 ninfer-bind f.ninfer
    [[ "$output" == *$'text/layers/1/attention/gate\t64x64\t4096\tbf16/contiguous_le_v1\ttext/layers/1/attention/qkgv\tview'* ]]
}

@test "--check passes on every imported family and prints one OK line; --json and -q" {
    base qwen3moe
    run -0 ninfer-bind --check m.ninfer
    [ "$output" = "m.ninfer: OK (56 parameters, 43 uses)" ]
    run -0 ninfer-bind --check -q m.ninfer
    [ -z "$output" ]
    run -0 ninfer-bind --check --json m.ninfer
    [[ "$output" == '{"file":"m.ninfer","exit":0,'* ]]
    # several operands: the worst status wins
    cp m.ninfer n.ninfer
    run -0 ninfer-bind --check -q m.ninfer n.ninfer
    # a stream checks too; plan and extract need files
    ninfer-cat m.ninfer | ninfer-bind --check -q -
    run -2 --separate-stderr ninfer-bind --plan - < m.ninfer
}

@test "spec 12.6: parts whose total differs from the parameter -> coverage (1)" {
    base llama
    edit short 's|("text/layers/0/mlp/down": \{)\s*"object": "([^"]+)"\s*\}|$1"parts": [{"object": "$2", "range": [0, 100]}]}|'
    check_fails 1 short.ninfer coverage
    [[ "$stderr" == *'parameter "text/layers/0/mlp/down" needs 6144 elements ([64x96]); its binding covers 100'* ]]
    # a whole object of the right size but the wrong shape needs parts (a reshape)
    edit swapped 's|("text/layers/0/mlp/gate": \{\s*"object": ")[^"]+|${1}model.layers.0.mlp.down_proj.weight|'
    check_fails 1 swapped.ninfer coverage
    [[ "$stderr" == *'whole-object binding of "text/layers/0/mlp/gate" needs shape [96x64]; object "model.layers.0.mlp.down_proj.weight" is [64x96]'* ]]
}

@test "parts whose element count passes 2^64-1 -> range (1), never a wrapped sum that fits (red-team A7)" {
    base llama
    # a stream (only its catalog is read): final_norm bound to 4 x 2^62 + 64
    # elements of a huge object, which wrapped to the 64 it needs
    ninfer-cat --catalog m.ninfer > c.json
    local p='{"object":"huge","range":[0,4611686018427387904]}' pb
    pb=$(grep -o '"payload_bytes":[0-9]*' c.json | head -n 1 | cut -d: -f2)
    [ "$pb" -lt 1048576 ]
    perl -pe 's|\],"bindings":|,{"id":"huge","kind":"tensor","shape":[2305843009213693952,2],"format":"bf16","layout":"contiguous_le_v1","offset":1048576,"bytes":9223372036854775808}],"bindings":|;
              s|"payload_bytes":'"$pb"'|"payload_bytes":9223372036855824384|;
              s|"text/final_norm":\{"object":"model.norm.weight"\}|"text/final_norm":{"parts":['"$p,$p,$p,$p"',{"object":"huge","range":[0,64]}]}|' c.json > o.json
    nf-mkartifact --catalog o.json -o o.ninfer
    run -1 --separate-stderr bash -c 'ninfer-bind --check - < o.ninfer'
    expect_only_codes range
    [ "$stderr" = "ninfer-bind: -: /bindings/text~1final_norm/parts: range: the parts cover more than 2^64-1 elements (spec 1: sums stay within U64)" ]
    # 4 x (2^62 - 1) + 1 = 2^64 - 3 fits: the binder counts it
    sed 's/4611686018427387904/4611686018427387903/g; s/"range":\[0,64\]/"range":[0,1]/' o.json > f.json
    nf-mkartifact --catalog f.json -o f.ninfer
    run -1 --separate-stderr bash -c 'ninfer-bind --check - < f.ninfer'
    expect_only_codes coverage
    [[ "$stderr" == *'/bindings/text~1final_norm: coverage: parameter "text/final_norm" needs 64 elements ([64]); its binding covers 18446744073709551613' ]]
}

@test "a parameter missing -> coverage; one the architecture lacks -> unknown-parameter" {
    base llama
    edit renamed 's|text/layers/1/mlp/up"|text/layers/1/mlp/upp"|g'
    check_fails 1 renamed.ninfer coverage unknown-parameter
    [[ "$stderr" == *'parameter "text/layers/1/mlp/up" [96x64] of LlamaForCausalLM is not bound'* ]]
    [[ "$stderr" == *'LlamaForCausalLM has no parameter "text/layers/1/mlp/upp"'* ]]
    edit extra 's|"bindings": \{|"bindings": {"vision/patch": {"object": "model.norm.weight"},|'
    check_fails 1 extra.ninfer unknown-parameter
    [[ "$stderr" == *'"vision/patch" belongs to no declared component'* ]]
}

@test "uses: a projection without its use -> coverage; a use on another input -> unknown-parameter; no policy -> schema" {
    base llama
    edit nouse 's|"parameter": "text/head"|"parameter": "text/final_norm"|'
    check_fails 1 nouse.ninfer coverage unknown-parameter
    [[ "$stderr" == *'projection "text/head" has no use on input "text/head_input"'* ]]
    [[ "$stderr" == *'parameter "text/final_norm" takes no input'* ]]
    edit input 's|"input": "text/head_input"|"input": "text/layers/1/mlp_input"|'
    check_fails 1 input.ninfer unknown-parameter coverage
    [[ "$stderr" == *'"text/layers/1/mlp_input" is not an input of "text/head"'* ]]
    edit nopolicy 's|("input": "text/layers/0/mixer_input"),\s*"activation_policy": "A16Only"|$1|'
    check_fails 1 nopolicy.ninfer schema
    [[ "$stderr" == *'the use of projection "text/layers/0/attention/query" needs an activation_policy'* ]]
}

@test "spec 12.6: a non-scalar activation divisor -> auxiliary; one element of an fp32 vector is fine" {
    base llama
    local obj='{"id": "a.div", "kind": "tensor", "shape": SHAPE, "format": "fp32", "layout": "contiguous_le_v1", "source": {"values": VALUES, "dtype": "f32"}}'
    local use='"activation_policy": "AllowA4", "auxiliaries": {"activation_input_divisor": BINDING}'
    mk() { # NAME SHAPE VALUES BINDING
        local o=${obj/SHAPE/$2} u=${use/BINDING/$4}
        o=${o/VALUES/$3}
        edit "$1" "s|\"objects\": \\[|\"objects\": [$o,|; s|\"activation_policy\": \"A16Only\"|$u|"
    }
    mk vec '[2]' '[1.0, 2.0]' '{"object": "a.div"}'
    check_fails 1 vec.ninfer auxiliary
    [[ "$stderr" == *'activation_input_divisor must be an fp32 scalar'* ]]
    mk zero '[]' '[0.0]' '{"object": "a.div"}'
    check_fails 1 zero.ninfer auxiliary
    [[ "$stderr" == *'activation_input_divisor is 0; it must be finite and > 0'* ]]
    mk one '[]' '[1.0]' '{"object": "a.div"}'
    run -0 ninfer-bind --check -q one.ninfer
    mk elem '[2]' '[-1.0, 2.0]' '{"parts": [{"object": "a.div", "range": [1, 2]}]}'
    run -0 ninfer-bind --check -q elem.ninfer
    mk neg '[2]' '[-1.0, 2.0]' '{"parts": [{"object": "a.div", "range": [0, 1]}]}'
    check_fails 1 neg.ninfer auxiliary
}

@test "auxiliaries: hadamard_signs of the wrong width -> auxiliary; input_columns off gguf_* -> auxiliary; unknown role -> auxiliary" {
    base llama
    local hs='{"id": "a.signs", "kind": "tensor", "shape": [64], "format": "bf16", "layout": "contiguous_le_v1", "source": {"file": "m.json", "offset": 0, "dtype": "u8"}}'
    edit signs "s|\"objects\": \\[|\"objects\": [$hs,|; s|\"activation_policy\": \"A16Only\"|\"activation_policy\": \"A16Only\", \"auxiliaries\": {\"hadamard_signs\": {\"object\": \"a.signs\"}}|"
    check_fails 1 signs.ninfer auxiliary
    [[ "$stderr" == *'hadamard_signs has 64 elements; "text/layers/0/attention/query" needs K = 64, a multiple of 1024'* ]]
    local ic='{"id": "a.cols", "kind": "tensor", "shape": [64], "format": "int32", "layout": "contiguous_le_v1", "source": {"file": "m.json", "offset": 0, "dtype": "u8"}}'
    edit cols "s|\"objects\": \\[|\"objects\": [$ic,|; s|\"activation_policy\": \"A16Only\"|\"activation_policy\": \"A16Only\", \"auxiliaries\": {\"input_columns\": {\"object\": \"a.cols\"}}|"
    check_fails 1 cols.ninfer auxiliary
    [[ "$stderr" == *'input_columns is accepted only on parameters whose parts are all gguf_* formats'* ]]
    edit role "s|\"objects\": \\[|\"objects\": [$ic,|; s|\"activation_policy\": \"A16Only\"|\"activation_policy\": \"A16Only\", \"auxiliaries\": {\"row_scales\": {\"object\": \"a.cols\"}}|"
    check_fails 1 role.ninfer auxiliary
    [[ "$stderr" == *'unknown auxiliary role "row_scales"'* ]]
}

@test "an unknown architecture -> unsupported (4), generic checks still run" {
    base llama
    edit mystery 's|LlamaForCausalLM|MysteryForCausalLM|'
    check_fails 4 mystery.ninfer unsupported
    [[ "$stderr" == *'unknown architecture "MysteryForCausalLM"'* ]]
    # listing still works, with the objects' shapes
    run -0 ninfer-bind mystery.ninfer
    [ "${#lines[@]}" -eq 21 ]
    # a broken config is a rule (1)
    edit broken 's|"num_attention_heads": 4,|"num_attention_heads": 0,|'
    check_fails 1 broken.ninfer range
}

@test "spec 12.6: a selected component the artifact lacks -> component-missing; mtp selects text" {
    base qwen3next --mtp
    run -0 ninfer-bind --check -q --component text m.ninfer
    run -0 ninfer-bind --check -q --component mtp m.ninfer
    run -1 --separate-stderr ninfer-bind --check --component text,vision m.ninfer
    expect_only_codes component-missing
    [[ "$stderr" == *'component "vision" was selected but the artifact does not provide it'* ]]
    # a text fault shows when mtp alone is selected (it loads text)
    edit textfault 's|("text/final_norm": \{)\s*"object": "([^"]+)"\s*\}|$1"parts": [{"object": "$2", "range": [0, 10]}]}|'
    run -1 --separate-stderr ninfer-bind --check --component mtp textfault.ninfer
    expect_only_codes coverage
    # listing one component
    run -0 ninfer-bind --component text m.ninfer
    [[ "$output" != *mtp/* ]]
    run -1 --separate-stderr ninfer-bind --component vision m.ninfer
    expect_only_codes component-missing
}

@test "targets: the mtp component's target must be its family; shared data binds the text's objects" {
    base qwen3next --mtp
    edit wrongfam 's|"Qwen3NextMTP"|"Qwen3_5MTP"|'
    check_fails 1 wrongfam.ninfer target
    [[ "$stderr" == *'needs a target of architecture Qwen3_5ForCausalLM or Qwen3_5MoeForCausalLM; "text" is Qwen3NextForCausalLM'* ]]
    edit notarget 's|,\s*"target": "text"||'
    check_fails 1 notarget.ninfer target
    edit unshared 's|("mtp/head": \{\s*"object": ")[^"]+|${1}model.embed_tokens.weight|'
    check_fails 1 unshared.ninfer target
    [[ "$stderr" == *'parameter "mtp/head" must bind the same objects as "text/head" (shared data, spec 5.3)'* ]]
    edit geometry 's|\{"architectures":\["Qwen3NextMTP"\]\}|{"architectures":["Qwen3NextMTP"],"hidden_size":32}|'
    check_fails 1 geometry.ninfer target
    [[ "$stderr" == *'hidden_size is 32 here but 64 in the target "text"'* ]]
    # a tied head must bind the embedding's object
    base llama --tied
    edit untied 's|("text/head": \{\s*"object": ")[^"]+|${1}model.norm.weight|'
    run -1 --separate-stderr ninfer-bind --check untied.ninfer
    expect_code coverage
    [[ "$stderr" == *'must bind the same objects as "text/embedding" (tied, spec 12.4)'* ]]
}

@test "spec 12.6 generic rows: duplicate object ID, overlap, part end past the object" {
    nf_make_sed dup.ninfer 's/"id": "r.tok"/"id": "w.a"/'
    run -1 --separate-stderr ninfer-bind --check dup.ninfer
    expect_code duplicate-id
    nf_make_sed ovl.ninfer 's/"offset": 16, "bytes": 984/"offset": 8, "bytes": 992/'
    run -1 --separate-stderr ninfer-bind --check ovl.ninfer
    expect_code overlap
    NF_BINDINGS='{"text/a": {"parts": [{"object": "w.a", "range": [0, 9]}]}}' nf_make pr.ninfer
    run -1 --separate-stderr ninfer-bind --check pr.ninfer
    expect_code part-range
}

@test "spec 12.6: an unimplemented format fails when interpreted -> unsupported (4)" {
    nf_make_sed fmt.ninfer 's/"format": "bf16"/"format": "bf17"/'
    run -4 --separate-stderr ninfer-bind --extract text/a fmt.ninfer
    expect_only_codes unsupported
    run -4 --separate-stderr ninfer-bind --plan fmt.ninfer
    expect_only_codes unsupported
}

@test "spec 12.6: a needed part file missing -> part-missing (3); another artifact's part -> artifact-id (1)" {
    base llama
    ninfer-split -q --max-file-bytes 16K -o s/m.ninfer m.ninfer
    ninfer-split -q --max-file-bytes 16K -o t/m.ninfer m.ninfer
    [ -f s/m.ninfer.part-0003 ]
    # which parameter lives in part 3?
    local name
    name=$(ninfer-bind --plan s/m.ninfer | grep -B30 '"file": "s/m.ninfer.part-0003"' | sed -n 's/.*"name": "\(.*\)",/\1/p' | tail -1)
    [ -n "$name" ]
    cp t/m.ninfer.part-0003 s/m.ninfer.part-0003
    run -1 --separate-stderr ninfer-bind --extract "$name" s/m.ninfer > /dev/null
    expect_code artifact-id
    rm s/m.ninfer.part-0003
    run -3 --separate-stderr ninfer-bind --extract "$name" s/m.ninfer > /dev/null
    expect_only_codes part-missing
    run -3 --separate-stderr ninfer-bind --plan s/m.ninfer > /dev/null
    expect_only_codes part-missing
    # the check reads no weights: it still passes
    run -0 ninfer-bind --check -q s/m.ninfer
}

@test "--plan is written one parameter at a time, in json-c's pretty text: the exact frame, nested indentation, an empty plan" {
    base llama
    run -0 ninfer-bind --plan m.ninfer
    # the head of the first record and the seam to the second, as one tree printed them
    [ "$(sed -n '1,8p' <<< "$output")" = '{
  "parameters": [
    {
      "name": "text/embedding",
      "shape": [
        128,
        64
      ],' ]
    [[ "$output" == *'
          ]
        }
      ]
    },
    {
      "name": "text/layers/0/input_norm",
      "shape": [
        64
      ],'* ]]
    [ "$(tail -n 5 <<< "$output")" = '        }
      ]
    }
  ]
}' ]
    [ "$(grep -c '^    {$' <<< "$output")" -eq "$(ninfer-bind m.ninfer | wc -l)" ]
    # no parameter at all: json-c's empty array
    NF_BINDINGS='{}' NF_USES='[]' nf_make e.ninfer
    run -0 ninfer-bind --plan e.ninfer
    [ "$output" = '{
  "parameters": [
  ]
}' ]
}

@test "--plan: parts, planes and the file segments a loader reads" {
    base qwen3next
    ninfer-split -q --max-file-bytes 64K -o s/m.ninfer m.ninfer
    run -0 ninfer-bind --plan s/m.ninfer
    [[ "$output" == '{'*'"parameters": ['* ]]
    [[ "$output" == *'"name": "text/layers/1/attention/gate"'* ]]
    [[ "$output" == *'"plane": "data"'* ]]
    [[ "$output" == *'"file": "s/m.ninfer.part-0001"'* ]]
    [[ "$output" == *'"file_offset": 4096'* ]]
    # every segment's bytes sum to the parameter's bytes (bf16: 2 per element)
    run -0 ninfer-bind --plan --component text s/m.ninfer
    local emb
    emb=$(sed -n '/"name": "text\/embedding"/,/"name": "text\/layers/p' <<< "$output" |
        sed -n '/"segments"/,$p' | sed -n 's/.*"bytes": \([0-9]*\).*/\1/p' | paste -sd+ - | bc)
    [ "$emb" -eq $((96 * 64 * 2)) ]
    # a row_split object: base and scales planes, whole rows one interval each
    base qwen3moe
    ninfer-quant 'text/layers/*/mlp/experts/0/gate=q4_g64_fp16' 'text/head=nvfp4,policy=AllowA4' < m.json > q.json
    ninfer-pack -q -o q.ninfer q.json
    run -0 ninfer-bind --plan q.ninfer
    [[ "$output" == *'"plane": "base"'*'"plane": "scales"'* ]]
    [[ "$output" == *'"plane": "block_scales"'* ]]
    run -0 ninfer-bind --check -q q.ninfer
    # decoded values come back through the codecs
    ninfer-bind --extract text/layers/0/mlp/experts/0/gate q.ninfer > g.bin
    [ "$(nf_size g.bin)" -eq $((32 * 64 * 4)) ]
}

@test "--extract: f32 by default, bf16 words, i32 only for int32; an unknown name -> reference (1)" {
    base qwen3
    ninfer-bind --extract text/layers/1/attention/key_norm m.ninfer > n.bin
    nf-srcdump ck/model.safetensors model.layers.1.self_attn.k_norm.weight | cmp - n.bin
    ninfer-bind --extract text/layers/0/mlp/up --dtype bf16 m.ninfer > u.bin
    ninfer-cat --object model.layers.0.mlp.up_proj.weight m.ninfer | cmp - u.bin
    run -4 --separate-stderr ninfer-bind --extract text/layers/0/mlp/up --dtype i32 m.ninfer
    expect_only_codes unsupported
    run -1 --separate-stderr ninfer-bind --extract text/nothing m.ninfer
    expect_only_codes reference
}

# man_cmd PAGE N — the Nth "$ " command of man/PAGE's EXAMPLES (mdoc escapes undone).
man_cmd() {
    sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$REPO/man/$1" | sed -e 's/\\e/\\/g' -e 's/\\-/-/g' |
        sed -n 's/^\$ //p' | sed -n "$2p"
}

@test "ninfer-bind(1): every EXAMPLES command runs and prints what the page shows" {
    [ "$(sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$REPO/man/ninfer-bind.1" | grep -c '^\$ ')" -eq 5 ]
    base llama
    ninfer-split -q --max-file-bytes 64K -o shards/m.ninfer m.ninfer
    run -0 bash -o pipefail -c "$(man_cmd ninfer-bind.1 1)"
    [ "${lines[0]}" = $'text/embedding\t128x64\t8192\tbf16/contiguous_le_v1\tmodel.embed_tokens.weight\tview' ]
    [ "${lines[1]}" = $'text/layers/0/input_norm\t64\t64\tfp32/contiguous_le_v1\tmodel.layers.0.input_layernorm.weight\tview' ]
    run -0 bash -o pipefail -c "$(man_cmd ninfer-bind.1 2)"
    [ "$output" = "m.ninfer: OK (21 parameters, 16 uses)" ]
    run -0 bash -o pipefail -c "$(man_cmd ninfer-bind.1 3)"
    grep -qF '"file": "shards/m.ninfer.part-0001"' plan.json
    run -0 bash -o pipefail -c "$(man_cmd ninfer-bind.1 4)"
    nf-srcdump ck/model.safetensors model.layers.1.mlp.down_proj.weight | cmp - down.f32
    nf-mkarch --arch qwen3next --mtp nck
    ninfer-import -q nck | ninfer-pack -q -o next.ninfer -
    run -0 bash -o pipefail -c "$(man_cmd ninfer-bind.1 5)"
    [ "$output" = "next.ninfer: OK (147 parameters, 119 uses)" ]
}
