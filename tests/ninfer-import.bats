#!/usr/bin/env bats
# ninfer-import: checkpoints (Hugging Face directories, single safetensors,
# GGUF) to manifests that ninfer-pack packs unedited; every parameter's
# extracted values equal the source tensor's (compared as f32), with and
# without --fuse; the real checkpoints of ../shared/realdata (skipped with a
# message where absent) and tiny generated ones of every family (nf-mkarch).

load helper

REALDATA="${NF_REALDATA:-$REPO/../shared/realdata}"

need() {
    [ -e "$REALDATA/$1" ] || skip "real data absent: $REALDATA/$1 (see the project's shared/realdata)"
}

# import_pack SRC NAME [IMPORT OPTIONS] — import to NAME.json, pack NAME.ninfer,
# verify it and pass the binder's checks.
import_pack() {
    local src=$1 name=$2
    shift 2
    run -0 --separate-stderr ninfer-import "$@" -o "$name.json" "$src"
    run -0 --separate-stderr ninfer-pack -q -o "$name.ninfer" "$name.json"
    run -0 --separate-stderr ninfer-verify "$name.ninfer"
    run -0 --separate-stderr ninfer-bind --check "$name.ninfer"
}

# extract_equals_source ART FILE [QHEADS KHEADS] — every parameter of the
# unfused artifact ART binds one whole source tensor (its parent object is
# named after it): --extract equals nf-srcdump of that tensor in FILE, with
# llama.cpp's q/k permutation undone for GGUF attn_q/attn_k.
extract_equals_source() {
    local art=$1 file=$2 qh=${3:-} kh=${4:-} name shape el fl parent vg n=0 opt
    while IFS=$'\t' read -r name shape el fl parent vg; do
        opt=()
        case "$parent" in
            *attn_q.weight) [ -n "$qh" ] && opt=(--unpermute "$qh") ;;
            *attn_k.weight) [ -n "$kh" ] && opt=(--unpermute "$kh") ;;
        esac
        ninfer-bind --extract "$name" "$art" > got.bin
        nf-srcdump "${opt[@]}" "$file" "$parent" > want.bin
        cmp got.bin want.bin || { echo "$name differs from $parent" >&2; return 1; }
        [ "$(nf_size got.bin)" -eq $((el * 4)) ]
        n=$((n + 1))
    done < <(ninfer-bind "$art")
    echo "$n parameters equal their source tensors"
    [ "$n" -gt 0 ]
}

# same_params A B — every parameter of A extracts to the same values from B.
same_params() {
    local name rest n=0
    while IFS=$'\t' read -r name rest; do
        cmp <(ninfer-bind --extract "$name" "$1") <(ninfer-bind --extract "$name" "$2") ||
            { echo "$name differs between $1 and $2" >&2; return 1; }
        n=$((n + 1))
    done < <(ninfer-bind "$1")
    [ "$n" -eq "$(ninfer-bind "$2" | wc -l)" ]
    echo "$n parameters identical"
}

@test "--help, --version and usage errors" {
    run -0 ninfer-import --help
    [[ "$output" == usage:* ]]
    run -0 ninfer-import --version
    [[ "$output" == *"0."* ]]
    run -2 ninfer-import
    run -2 ninfer-import --f16-as fp16 x.gguf
    run -2 ninfer-import a b
    run -2 ninfer-import --bogus x
}

@test "realdata: stories260K hf-f32 and hf-bf16 import, pack, verify, check; values equal the source, fused too" {
    need stories260K/hf-f32/model.safetensors
    need stories260K/hf-bf16/model.safetensors
    local d
    for d in hf-f32 hf-bf16; do
        import_pack "$REALDATA/stories260K/$d" "$d"
        extract_equals_source "$d.ninfer" "$REALDATA/stories260K/$d/model.safetensors"
        import_pack "$REALDATA/stories260K/$d" "$d-fused" --fuse
        same_params "$d.ninfer" "$d-fused.ninfer"
    done
    # bf16 objects keep their words exactly
    ninfer-bind --extract text/layers/2/mlp/up --dtype bf16 hf-bf16.ninfer > got.bin
    ninfer-cat --object model.layers.2.mlp.up_proj.weight hf-bf16.ninfer | cmp - got.bin
    # the tied head binds the embedding's object (spec 12.4)
    run -0 ninfer-bind hf-f32.ninfer
    [[ "$output" == *$'text/head\t512x64\t32768\tfp32/contiguous_le_v1\tmodel.embed_tokens.weight\tview'* ]]
    # fused parents: Q/K/V [128,64] and MLP gate/up [344,64], bound by parts
    run -0 ninfer-bind hf-f32-fused.ninfer
    [[ "$output" == *$'text/layers/0/attention/key\t32x64\t2048\tfp32/contiguous_le_v1\ttext/layers/0/attention/qkv\tview'* ]]
    ninfer-cat --catalog hf-f32-fused.ninfer | grep -qF '"id":"text/layers/4/mlp/gate_up","kind":"tensor","shape":[344,64]'
}

@test "realdata: the manifest's config, uses and provenance" {
    need stories260K/hf-f32/model.safetensors
    local d="$REALDATA/stories260K/hf-f32"
    run -0 ninfer-import "$d"
    printf '%s\n' "$output" > m.json
    # the config's own text (1e-05, 10000.0) travels unchanged
    grep -qF '"rms_norm_eps": 1e-05' m.json
    grep -qF '"rope_theta": 10000.0' m.json
    # 5 layers x 7 projections + head use A16Only; the embedding's use has no policy
    [ "$(grep -c '"activation_policy": "A16Only"' m.json)" -eq 36 ]
    grep -qF '"input": "text/token_ids"' m.json
    # provenance: tool, version and every source file's SHA-256
    grep -qF '"tool": "ninfer-import"' m.json
    grep -qF "\"sha256\": \"$(nf_sha256 "$d/model.safetensors")\"" m.json
    grep -qF "\"sha256\": \"$(nf_sha256 "$d/config.json")\"" m.json
    grep -qF "\"safetensors\": \"$(cd "$d" && pwd -P)/model.safetensors\"" m.json
}

@test "realdata: stories260K-F32.gguf equals hf-f32 parameter by parameter (q/k unpermuted)" {
    need stories260K-gguf/stories260K-F32.gguf
    need stories260K/hf-f32/model.safetensors
    import_pack "$REALDATA/stories260K-gguf/stories260K-F32.gguf" gguf
    extract_equals_source gguf.ninfer "$REALDATA/stories260K-gguf/stories260K-F32.gguf" 8 4
    import_pack "$REALDATA/stories260K/hf-f32" hf
    same_params gguf.ninfer hf.ninfer
    import_pack "$REALDATA/stories260K-gguf/stories260K-F32.gguf" gguf-fused --fuse
    same_params gguf.ninfer gguf-fused.ninfer
    grep -qF '"unpermute": {' gguf.json
    grep -qF '"name": "stories260K F32"' gguf.json
    grep -qF '"tie_word_embeddings":true' gguf.json
    grep -qF '"rms_norm_eps":1e-05,"rope_theta":10000.0' gguf.json
}

@test "realdata: the ollama tiny GGUF (F16 and F32) imports; F16 becomes fp32, or bf16 on request" {
    need ollama-llama-2-tiny-random-gguf/llama-2-tiny-random.gguf
    local g="$REALDATA/ollama-llama-2-tiny-random-gguf/llama-2-tiny-random.gguf"
    import_pack "$g" oll
    extract_equals_source oll.ninfer "$g" 2 2
    run -0 ninfer-bind oll.ninfer
    # F16 matrices keep their bytes (gguf_f16); vectors widen to fp32
    [[ "$output" == *$'text/head\t32000x8\t256000\tgguf_f16/gguf_rows_v1\toutput.weight\tview'* ]]
    import_pack "$g" oll-fp32 --f16-as fp32
    run -0 ninfer-bind oll-fp32.ninfer
    [[ "$output" == *$'text/head\t32000x8\t256000\tfp32/contiguous_le_v1\toutput.weight\tview'* ]]
    same_params oll.ninfer oll-fp32.ninfer
    # the tokenizer key/values travel in the GGUF's own bytes [0, data offset):
    # a byte range of the file, no side file beside the manifest (DESIGN 3)
    local n
    n=$(tensor_data_start "$g")
    [ "$(ninfer-cat --resource gguf.prefix oll.ninfer | wc -c)" -eq "$n" ]
    cmp <(ninfer-cat --resource gguf.prefix oll.ninfer) <(head -c "$n" "$g")
    ninfer-cat --resource gguf.prefix oll.ninfer > prefix.gguf
    [ "$(nf-gguf --prefix kv prefix.gguf tokenizer.ggml.model)" = '"llama"' ]
    [[ "$(nf-gguf --prefix kv prefix.gguf tokenizer.ggml.tokens)" == '["<unk>","<s>","</s>",'* ]]
    [ ! -e llama-2-tiny-random.gguf_tokenizer.json ]
    [ -z "$(find . -name '*tokenizer*')" ]
    import_pack "$g" oll-fused --fuse
    same_params oll.ninfer oll-fused.ninfer
    import_pack "$g" oll-bf16 --f16-as bf16 --fuse
    run -0 ninfer-bind oll-bf16.ninfer
    [[ "$output" == *$'text/embedding\t32000x8\t256000\tbf16/contiguous_le_v1'* ]]
    # the packer's F16 -> bf16 rounds as the decoder rounds fp32 to bf16
    ninfer-bind --extract text/layers/0/mlp/down --dtype bf16 oll-bf16.ninfer > a.bin
    ninfer-bind --extract text/layers/0/mlp/down --dtype bf16 oll.ninfer > b.bin
    cmp a.bin b.bin
}

@test "GGUF tensor types import cannot take exit 4 naming the type once (reserved ones by their format)" {
    nf-mkarch --arch llama ck
    # Q4_0 bytes labelled NVFP4 (ggml type 40: 36 bytes per 64, as Q4_0's two blocks)
    nf-mkgguf --type q4_0 --only attn_v --type-id 40 ck nv.gguf
    run -4 --separate-stderr ninfer-import nv.gguf
    expect_only_codes unsupported
    [ "$(grep -c unsupported <<< "$stderr")" -eq 1 ]
    [[ "$stderr" == *'GGUF tensor type NVFP4 ("blk.0.attn_v.weight"; format gguf_nvfp4) is a later-wave format'* ]]
    [ -z "$output" ]
}

# tensor_data_start GGUF — where its data section starts: the length of the
# resource gguf.prefix its import keeps.
tensor_data_start() {
    nf-gguf data "$1"
}

# kv_value_at GGUF KEY — the offset of KEY's value (after its 8-byte length,
# the key and the 4-byte type).
kv_value_at() {
    local at
    at=$(grep -abo -- "$2" "$1" | head -n1 | cut -d: -f1)
    [ -n "$at" ] || return 1
    echo $((at + ${#2} + 4))
}

@test "GGUF floats that are NaN or infinite are range errors naming the key, never a null in the config" {
    nf-mkarch --arch llama ck
    nf-mkgguf ck g.gguf
    local at
    # the epsilon (F32) as a quiet NaN, 0x7fc00000
    cp g.gguf nan.gguf
    at=$(kv_value_at nan.gguf llama.attention.layer_norm_rms_epsilon)
    nf_poke nan.gguf "$at" 00; nf_poke nan.gguf $((at + 1)) 00
    nf_poke nan.gguf $((at + 2)) c0; nf_poke nan.gguf $((at + 3)) 7f
    run -1 --separate-stderr ninfer-import -o m.json nan.gguf
    expect_only_codes range
    [ "$stderr" = 'ninfer-import: nan.gguf: /kv/llama.attention.layer_norm_rms_epsilon: range: key/value "llama.attention.layer_norm_rms_epsilon" is NaN: a finite number is needed' ]
    [ ! -e m.json ]
    [ ! -e nan.gguf_tokenizer.json ]
    # rope_theta as +Inf, 0x7f800000
    cp g.gguf inf.gguf
    at=$(kv_value_at inf.gguf llama.rope.freq_base)
    nf_poke inf.gguf "$at" 00; nf_poke inf.gguf $((at + 1)) 00
    nf_poke inf.gguf $((at + 2)) 80; nf_poke inf.gguf $((at + 3)) 7f
    run -1 --separate-stderr ninfer-import inf.gguf
    [ "$stderr" = 'ninfer-import: inf.gguf: /kv/llama.rope.freq_base: range: key/value "llama.rope.freq_base" is infinite: a finite number is needed' ]
    [ -z "$output" ]
    # the untouched file imports with the finite values
    run -0 --separate-stderr ninfer-import g.gguf
    [[ "$output" == *'"rms_norm_eps":1e-05'* || "$output" == *'"rms_norm_eps":1e-06'* ]]
    [[ "$output" != *':null'* ]]
}

@test "GGUF strings that are not UTF-8 are utf8 errors (GGUF strings are UTF-8), never U+FFFD" {
    nf-mkarch --arch llama ck
    nf-mkgguf ck g.gguf
    local at
    # the token "t100" becomes "\xff100": the vocabulary would lose it to U+FFFD
    cp g.gguf tok.gguf
    at=$(grep -abo t100 tok.gguf | head -n1 | cut -d: -f1)
    nf_poke tok.gguf "$at" ff
    run -1 --separate-stderr ninfer-import -o m.json tok.gguf
    expect_only_codes utf8
    [ "$stderr" = 'ninfer-import: tok.gguf: /kv/tokenizer.ggml.tokens: utf8: key/value "tokenizer.ggml.tokens" (element 100) is a string that is not UTF-8 (GGUF strings are UTF-8)' ]
    [ ! -e m.json ]
    [ ! -e tok.gguf_tokenizer.json ]
    # the architecture name "llama" -> "\xfelama"
    cp g.gguf arch.gguf
    at=$(grep -abo llama arch.gguf | head -n1 | cut -d: -f1)
    [ "$(dd if=arch.gguf bs=1 skip="$at" count=5 status=none)" = llama ]
    nf_poke arch.gguf "$at" fe
    run -1 --separate-stderr ninfer-import arch.gguf
    [ "$stderr" = 'ninfer-import: arch.gguf: /kv/general.architecture: utf8: general.architecture is not a UTF-8 string (GGUF strings are UTF-8)' ]
    # a key that is not UTF-8: the reader refuses the file
    cp g.gguf key.gguf
    at=$(grep -abo general.name key.gguf | head -n1 | cut -d: -f1)
    nf_poke key.gguf "$at" ff
    run -1 --separate-stderr ninfer-import key.gguf
    expect_only_codes utf8
    [[ "$stderr" == *": utf8: key is not valid UTF-8 (byte 0)" ]]
}

@test "a GGUF whose blk.N tensors go past block_count is coverage (1), not a smaller model" {
    nf-mkarch --arch llama ck
    nf-mkgguf ck g.gguf
    # llama.block_count 2 -> 1 (a u32: the low byte after the key and its type)
    local at
    at=$(kv_value_at g.gguf llama.block_count)
    [ "$(od -An -tu4 -j "$at" -N4 g.gguf | tr -d ' ')" = 2 ]
    cp g.gguf bc.gguf
    nf_poke bc.gguf "$at" 01
    run -1 --separate-stderr ninfer-import -o m.json bc.gguf
    expect_only_codes coverage
    [[ "$stderr" == *'bc.gguf: /tensors/'*': coverage: tensor "blk.1.attn_norm.weight" is of layer 1, but llama.block_count is 1 (9 tensors past it): the GGUF'"'"'s metadata and tensors disagree' ]]
    [ ! -e m.json ]
    run -0 --separate-stderr ninfer-import -q g.gguf
}

@test "--config '' (an unset variable) is a usage error; a GGUF import writes no side file (no --resource-dir)" {
    nf-mkarch --arch llama ck
    nf-mkgguf ck g.gguf
    run -2 --separate-stderr ninfer-import --config '' ck
    [ "$stderr" = "ninfer-import: usage: --config '': give the config.json to use (see 'ninfer-import --help')" ]
    run -2 --separate-stderr ninfer-import --resource-dir . -o m.json g.gguf
    [ "$stderr" = "ninfer-import: usage: unrecognized option '--resource-dir' (see 'ninfer-import --help')" ]
    [ ! -e m.json ]
    # to standard output: nothing in the working directory; -o /dev/null: nothing anywhere
    corrupt_template g.gguf > /dev/null
    mkdir out && cd out
    ninfer-import -q ../g.gguf > ../m.json
    [ -s ../m.json ]
    [ -z "$(ls -A)" ]
    ninfer-import -q -o /dev/null ../g.gguf
    [ -z "$(ls -A)" ]
    [ ! -e /dev/g.gguf_tokenizer.json ]
    # a failure leaves nothing behind either (the output's directories included)
    run -1 --separate-stderr ninfer-import -q -o new/dir/m.json ../bad-template.gguf
    expect_only_codes utf8
    [ -z "$(ls -A)" ]
}

# corrupt_template GGUF — a copy (bad-template.gguf) whose chat template holds
# the byte 0xff (not UTF-8); prints its name.
corrupt_template() {
    cp "$1" bad-template.gguf
    local at
    at=$(grep -abo '{% for m in messages' bad-template.gguf | head -n1 | cut -d: -f1)
    nf_poke bad-template.gguf $((at + 3)) ff
    echo bad-template.gguf
}

@test "GGUF chat template and tokenizer.huggingface.json: not UTF-8 is utf8 naming the key; not a string or empty is dropped with a warning" {
    nf-mkarch --arch llama ck
    nf-mkgguf ck g.gguf
    run -1 --separate-stderr ninfer-import -o m.json "$(corrupt_template g.gguf)"
    [ "$stderr" = 'ninfer-import: bad-template.gguf: /kv/tokenizer.chat_template: utf8: tokenizer.chat_template is not a UTF-8 string at byte 3 (GGUF strings are UTF-8)' ]
    [ ! -e m.json ]
    cp g.gguf bad-json.gguf
    local at
    at=$(grep -abo '{"version": "1.0"}' bad-json.gguf | head -n1 | cut -d: -f1)
    nf_poke bad-json.gguf $((at + 1)) c3
    run -1 --separate-stderr ninfer-import -o m.json bad-json.gguf
    [ "$stderr" = 'ninfer-import: bad-json.gguf: /kv/tokenizer.huggingface.json: utf8: tokenizer.huggingface.json is not a UTF-8 string at byte 1 (GGUF strings are UTF-8)' ]
    [ ! -e m.json ]
    # a u32 template, an empty one: dropped, and said
    nf-mkgguf --no-tokenizer --kv-u32 tokenizer.chat_template=5 ck u32.gguf
    run -0 --separate-stderr ninfer-import -o m1.json u32.gguf
    [ "$stderr" = "ninfer-import: warning: u32.gguf: tokenizer.chat_template is u32; dropped (resource chat_template.jinja needs a non-empty string)" ]
    run -1 grep -qF chat_template.jinja m1.json
    nf-mkgguf --no-tokenizer --kv-str tokenizer.chat_template= --kv-str tokenizer.huggingface.json= ck empty.gguf
    run -0 --separate-stderr ninfer-import -o m2.json empty.gguf
    [[ "$stderr" == *"warning: empty.gguf: tokenizer.chat_template is an empty string; dropped (resource chat_template.jinja needs a non-empty string)"* ]]
    [[ "$stderr" == *"warning: empty.gguf: tokenizer.huggingface.json is an empty string; dropped (resource tokenizer.json needs a non-empty string)"* ]]
    run -0 ninfer-pack -q -o e.ninfer m2.json
    run -1 ninfer-cat --resource chat_template.jinja e.ninfer
}

@test "a split GGUF (gguf-split's split.count) is one unsupported line (4), not a coverage line per tensor; trailing 1 dimensions are the same tensor" {
    nf-mkarch --arch llama ck
    nf-mkgguf --kv-u32 split.no=0 --kv-u32 split.count=3 ck sp-00001-of-00003.gguf
    run -4 --separate-stderr ninfer-import -o m.json sp-00001-of-00003.gguf
    [ "$stderr" = "ninfer-import: sp-00001-of-00003.gguf: /kv/split.count: unsupported: a split GGUF (file 1 of split.count 3, llama.cpp's gguf-split): this build imports single-file GGUFs (join them with llama-gguf-split --merge)" ]
    [ ! -e m.json ]
    # split.count 1 is a whole model
    nf-mkgguf --kv-u32 split.no=0 --kv-u32 split.count=1 ck one.gguf
    run -0 --separate-stderr ninfer-import -q -o one.json one.gguf
    # every matrix written as ne = [K, N, 1]: imports as the plain file does
    nf-mkgguf ck plain.gguf
    nf-mkgguf --trailing-one attn_ ck t1.gguf
    import_pack plain.gguf plain
    import_pack t1.gguf t1
    same_params plain.ninfer t1.ninfer
}

@test "a Git LFS pointer in place of the weights says so (io, 3), not a nonsense header length" {
    nf-mkarch --arch llama ck
    printf 'version https://git-lfs.github.com/spec/v1\noid sha256:%064d\nsize 5367324112\n' 0 > ck/model.safetensors
    run -3 --separate-stderr ninfer-import ck
    [ "$stderr" = "ninfer-import: ck/model.safetensors: io: this is a Git LFS pointer, not the safetensors file (fetch the weights: git lfs pull)" ]
    # an artifact that is a pointer: the magic diagnostic says it
    cp ck/model.safetensors m.ninfer
    run -1 --separate-stderr ninfer-verify m.ninfer
    [ "$stderr" = "ninfer-verify: m.ninfer: magic: not an NInfer v3 artifact (bad magic): this is a Git LFS pointer, not the file (fetch it: git lfs pull)" ]
}

@test "realdata: qwen3.5-moe-frontend's LFS pointers as the index's shards: io naming the first as a pointer" {
    need qwen3.5-moe-frontend/lfs-pointers/model-00001-of-00007.safetensors.lfs-pointer
    local f src="$REALDATA/qwen3.5-moe-frontend"
    mkdir ck
    cp "$src/config.json" "$src/model.safetensors.index.json" ck/
    for f in "$src"/lfs-pointers/model-*.lfs-pointer; do
        ln -s "$f" "ck/$(basename "$f" .lfs-pointer)"
    done
    run -3 --separate-stderr ninfer-import ck
    [[ "$stderr" == *"ck/model-00001-of-00007.safetensors: io: this is a Git LFS pointer, not the safetensors file (fetch the weights: git lfs pull)" ]]
    [ -z "$output" ]
}

@test "realdata: vocabulary-only GGUFs give resource-only artifacts" {
    need llamacpp-vocab-gguf/ggml-vocab-phi-3.gguf
    local v
    for v in llama-spm phi-3 gpt-2 deepseek-coder; do
        run -0 --separate-stderr ninfer-import -o "$v.json" "$REALDATA/llamacpp-vocab-gguf/ggml-vocab-$v.gguf"
        run -0 ninfer-pack -q -o "$v.ninfer" "$v.json"
        run -0 ninfer-verify "$v.ninfer"
        run -0 ninfer-bind "$v.ninfer"
        [ -z "$output" ]
        ninfer-cat --catalog "$v.ninfer" | grep -qF '"bindings":{},"uses":[]'
        # a vocabulary-only GGUF is all prefix: the resource is the whole file
        cmp <(ninfer-cat --resource gguf.prefix "$v.ninfer") "$REALDATA/llamacpp-vocab-gguf/ggml-vocab-$v.gguf"
        ninfer-cat --resource gguf.prefix "$v.ninfer" > "$v.prefix"
        [[ "$(nf-gguf --prefix kv "$v.prefix" tokenizer.ggml.tokens)" == '["'* ]]
    done
    # phi-3 carries a chat template: its own resource, byte for byte the GGUF's string
    run -0 ninfer-cat --resource chat_template.jinja phi-3.ninfer
    [[ "$output" == "{{ bos_token }}{% for message in messages %}"* ]]
    ninfer-cat --catalog gpt-2.ninfer | grep -qF '"architectures":["GPT2LMHeadModel"]'
}

@test "realdata: qwen2.5-14b-frontend (an index without its shards) fails with exit 3 naming the first shard" {
    need qwen2.5-14b-frontend/model.safetensors.index.json
    run -3 --separate-stderr ninfer-import "$REALDATA/qwen2.5-14b-frontend"
    expect_only_codes io
    [[ "$stderr" == *'shard "model-00001-of-00006.safetensors" of model.safetensors.index.json is missing'* ]]
    [ -z "$output" ]
}

@test "realdata: frontend files of a sharded checkpoint travel as resources under their names" {
    need qwen2.5-14b-frontend/config.json
    # a tiny Qwen2 checkpoint with Qwen2.5's real frontend files beside it
    nf-mkarch --arch qwen2 ck
    rm ck/tokenizer.json ck/chat_template.jinja
    local f
    for f in tokenizer_config.json generation_config.json special_tokens_map.json added_tokens.json vocab.json merges.txt; do
        cp "$REALDATA/qwen2.5-14b-frontend/$f" ck/
    done
    import_pack ck q
    for f in tokenizer_config.json generation_config.json special_tokens_map.json added_tokens.json vocab.json merges.txt; do
        ninfer-cat --resource "$f" q.ninfer | cmp - "ck/$f"
    done
}

@test "a sharded checkpoint: the index's shards are read and hashed; a name the shard lacks is refused" {
    nf-mkarch --arch qwen3 ck
    local names
    names=$(nf-st2manifest --list ck | cut -f1)
    mv ck/model.safetensors ck/model-00001-of-00001.safetensors
    {
        echo '{"metadata": {"total_size": 1}, "weight_map": {'
        sed 's/.*/"&": "model-00001-of-00001.safetensors"/' <<< "$names" | paste -sd, -
        echo '}}'
    } > ck/model.safetensors.index.json
    import_pack ck s
    grep -qF "\"sha256\": \"$(nf_sha256 ck/model-00001-of-00001.safetensors)\"" s.json
    grep -qF '"path": "model.safetensors.index.json"' s.json
    sed -i 's/"weight_map": {/"weight_map": {"model.extra.weight": "model-00001-of-00001.safetensors", /' ck/model.safetensors.index.json
    run -1 --separate-stderr ninfer-import ck
    expect_only_codes reference
}

@test "a sharded checkpoint in the Hugging Face cache layout: shards are symlinks to blobs named by their hash" {
    nf-mkarch --arch qwen3 ck
    local names blob
    names=$(nf-st2manifest --list ck | cut -f1)
    mkdir -p hub/blobs hub/snap
    blob=$(nf_sha256 ck/model.safetensors)
    mv ck/model.safetensors "hub/blobs/$blob"
    ln -s "../blobs/$blob" hub/snap/model-00001-of-00001.safetensors
    cp ck/config.json hub/snap/
    {
        echo '{"weight_map": {'
        sed 's/.*/"&": "model-00001-of-00001.safetensors"/' <<< "$names" | paste -sd, -
        echo '}}'
    } > hub/snap/model.safetensors.index.json
    import_pack hub/snap s
    # the bytes are the blob's: one tensor read back equals its source
    extract_equals_source s.ninfer "hub/blobs/$blob"
}

@test "a frontend file that is a FIFO, a directory or a dangling symlink is io (3), never left out" {
    nf-mkckpt ck
    rm ck/tokenizer.json
    mkfifo ck/tokenizer.json
    run -3 --separate-stderr ninfer-import ck
    expect_only_codes io
    [[ "$stderr" == *"ck/tokenizer.json: io: frontend file is not a regular file"* ]]
    rm ck/tokenizer.json && mkdir ck/tokenizer.json
    run -3 --separate-stderr ninfer-import ck
    [[ "$stderr" == *"io: frontend file is a directory"* ]]
    rmdir ck/tokenizer.json && ln -s absent ck/tokenizer.json
    run -3 --separate-stderr ninfer-import ck
    [[ "$stderr" == *"io: frontend file cannot be read"* ]]
}

# sharded CK SHARD — move CK's weights aside (CK/weights.bin) and write an
# index mapping every tensor to SHARD.
sharded() {
    local names
    names=$(nf-st2manifest --list "$1" | cut -f1)
    mv "$1/model.safetensors" "$1/weights.bin"
    {
        echo '{"weight_map": {'
        sed "s/.*/\"&\": \"$2\"/" <<< "$names" | paste -sd, -
        echo '}}'
    } > "$1/model.safetensors.index.json"
}

@test "a shard that is a FIFO, a link to /dev/zero, a directory or a dangling link is io (3) saying what it is, not 'missing'" {
    nf-mkarch --arch qwen3 ck
    sharded ck s1.safetensors
    local pre="ninfer-import: $PWD/ck/s1.safetensors: io: shard \"s1.safetensors\" of model.safetensors.index.json"
    mkfifo ck/s1.safetensors
    run -3 --separate-stderr ninfer-import ck
    [ "$stderr" = "$pre is not a regular file (a FIFO, socket or device)" ]
    rm ck/s1.safetensors && ln -s /dev/zero ck/s1.safetensors
    run -3 --separate-stderr ninfer-import ck
    [ "$stderr" = "$pre is not a regular file (a FIFO, socket or device)" ]
    rm ck/s1.safetensors && mkdir ck/s1.safetensors
    run -3 --separate-stderr ninfer-import ck
    [ "$stderr" = "$pre is a directory" ]
    rmdir ck/s1.safetensors && ln -s ../blobs/gone ck/s1.safetensors
    run -3 --separate-stderr ninfer-import ck
    [ "$stderr" = "$pre is missing (a dangling symbolic link)" ]
    rm ck/s1.safetensors
    run -3 --separate-stderr ninfer-import ck
    [ "$stderr" = "$pre is missing" ]
    # model.safetensors itself as a link to /dev/zero: io, not "no model.safetensors"
    ln -s /dev/zero ck/model.safetensors
    run -3 --separate-stderr ninfer-import ck
    [ "$stderr" = "ninfer-import: ck/model.safetensors: io: model.safetensors is not a regular file (a FIFO, socket or device)" ]
    [ -z "$output" ]
}

@test "model.safetensors beside an index: the single file is imported (as transformers does); the index is read, never ignored silently" {
    nf-mkarch --arch qwen3 ck
    import_pack ck want
    sharded ck model-00001-of-00002.safetensors
    mv ck/weights.bin ck/model.safetensors
    # an index naming other shards: a warning, the single file imported
    run -0 --separate-stderr ninfer-import -o a.json ck
    [ "$stderr" = 'ninfer-import: warning: ck/model.safetensors.index.json names other shards ("model-00001-of-00002.safetensors"); model.safetensors beside it is imported, as transformers loads it' ]
    cmp <(grep -v '"sha256"\|"path"' a.json) <(grep -v '"sha256"\|"path"' want.json)
    # an index that maps everything to model.safetensors: no word; one that names a tensor the file lacks: reference
    sed -i 's/model-00001-of-00002.safetensors/model.safetensors/g' ck/model.safetensors.index.json
    run -0 --separate-stderr ninfer-import -o b.json ck
    [ -z "$stderr" ]
    sed -i 's/"weight_map": {/"weight_map": {"model.extra.weight": "model.safetensors", /' ck/model.safetensors.index.json
    run -1 --separate-stderr ninfer-import ck
    [ "$stderr" = 'ninfer-import: ck/model.safetensors.index.json: /weight_map/model.extra.weight: reference: tensor "model.extra.weight" is not in model.safetensors' ]
    # malformed: schema or json (1), not ignored
    echo '{"weight_map": {"a": 5}}' > ck/model.safetensors.index.json
    run -1 --separate-stderr ninfer-import ck
    [ "$stderr" = "ninfer-import: ck/model.safetensors.index.json: /weight_map/a: schema: a shard must be a file name in the checkpoint's directory" ]
    echo '{"weight_map":' > ck/model.safetensors.index.json
    run -1 --separate-stderr ninfer-import ck
    expect_only_codes json
    echo '{"metadata": {}}' > ck/model.safetensors.index.json
    run -1 --separate-stderr ninfer-import ck
    expect_only_codes schema
    rm ck/model.safetensors.index.json && mkfifo ck/model.safetensors.index.json
    run -3 --separate-stderr ninfer-import ck
    [ "$stderr" = 'ninfer-import: ck/model.safetensors.index.json: io: model.safetensors.index.json beside model.safetensors is not a regular file (a FIFO, socket or device)' ]
    [ -z "$output" ]
}

@test "a single .safetensors file with --config; without a config it is a usage error" {
    nf-mkarch --arch llama ck
    mkdir other
    mv ck/model.safetensors other/w.safetensors
    import_pack other/w.safetensors w --config ck/config.json
    extract_equals_source w.ninfer other/w.safetensors
    run -2 --separate-stderr ninfer-import other/w.safetensors
    expect_only_codes usage
}

@test "generated families import and pass --check with and without --fuse; fused equals unfused" {
    local a d
    for a in llama "llama --tied" qwen2 qwen3 qwen3moe "qwen3next --mtp" qwen3next "qwen3_5 --mtp" "qwen3_5 --tied"; do
        d=$(tr -d ' -' <<< "$a")
        nf-mkarch --arch $a "$d"
        import_pack "$d" "$d"
        import_pack "$d" "$d-fused" --fuse
        same_params "$d.ninfer" "$d-fused.ninfer"
    done
    # dense families: every parameter is its source tensor
    extract_equals_source llama.ninfer llama/model.safetensors
    extract_equals_source qwen2.ninfer qwen2/model.safetensors
    extract_equals_source qwen3moe.ninfer qwen3moe/model.safetensors
    # MTP: a component with target text whose embedding and head are the text's objects
    grep -qF '"architectures":["Qwen3NextMTP"]' qwen3nextmtp.json
    run -0 ninfer-bind qwen3nextmtp.ninfer
    [[ "$output" == *$'mtp/embedding\t96x64\t6144\tbf16/contiguous_le_v1\tmodel.embed_tokens.weight\tview'* ]]
    [[ "$output" == *$'mtp/head\t96x64\t6144\tbf16/contiguous_le_v1\tlm_head.weight\tview'* ]]
    run -1 grep -qF '"mtp"' qwen3next.json
}

@test "hybrid layers bind their rows of the shared projections (DESIGN 10)" {
    nf-mkarch --arch qwen3next --mtp n
    import_pack n n
    local q=model.layers.1.self_attn.q_proj.weight s=n/model.safetensors
    # q_proj [2 heads x (32 query + 32 gate), 64]
    cat <(nf-srcdump --rows 0:32 $s $q) <(nf-srcdump --rows 64:96 $s $q) | cmp - <(ninfer-bind --extract text/layers/1/attention/query n.ninfer)
    cat <(nf-srcdump --rows 32:64 $s $q) <(nf-srcdump --rows 96:128 $s $q) | cmp - <(ninfer-bind --extract text/layers/1/attention/gate n.ninfer)
    # in_proj_qkvz per key-head group (2 groups of 16 q, 16 k, 16 v, 16 z rows)
    local z=model.layers.0.linear_attn.in_proj_qkvz.weight ba=model.layers.0.linear_attn.in_proj_ba.weight
    cat <(nf-srcdump --rows 16:32 $s $z) <(nf-srcdump --rows 80:96 $s $z) | cmp - <(ninfer-bind --extract text/layers/0/linear_attention/key n.ninfer)
    cat <(nf-srcdump --rows 48:64 $s $z) <(nf-srcdump --rows 112:128 $s $z) | cmp - <(ninfer-bind --extract text/layers/0/linear_attention/z n.ninfer)
    # in_proj_ba per group: 2 b rows then 2 a rows
    cat <(nf-srcdump --rows 2:4 $s $ba) <(nf-srcdump --rows 6:8 $s $ba) | cmp - <(ninfer-bind --extract text/layers/0/linear_attention/a n.ninfer)
    # conv1d [96,1,4] is the parameter [96,4]
    nf-srcdump $s model.layers.0.linear_attn.conv1d.weight | cmp - <(ninfer-bind --extract text/layers/0/linear_attention/conv1d n.ninfer)
    run -0 ninfer-bind n.ninfer
    [[ "$output" == *$'text/layers/0/linear_attention/conv1d\t96x4\t384\tbf16/contiguous_le_v1\tmodel.layers.0.linear_attn.conv1d.weight\tview'* ]]
    [[ "$output" == *$'text/layers/1/attention/query\t64x64\t4096\tbf16/contiguous_le_v1\tmodel.layers.1.self_attn.q_proj.weight\tgather'* ]]
    # Qwen3.5: in_proj_qkv holds all q rows, then all k, then all v
    nf-mkarch --arch qwen3_5 --language-model f
    import_pack f f
    grep -qF '"architectures":["Qwen3_5ForCausalLM"]' f.json
    s=f/model.safetensors
    nf-srcdump --rows 32:64 $s model.language_model.layers.0.linear_attn.in_proj_qkv.weight |
        cmp - <(ninfer-bind --extract text/layers/0/linear_attention/key f.ninfer)
}

@test "--fuse never puts text and MTP-private parameters in one parent (spec 5.3)" {
    nf-mkarch --arch qwen3next --mtp n
    import_pack n n --fuse
    local text_parents mtp_parents p
    text_parents=$(ninfer-bind --component text n.ninfer | grep -v '^mtp/' | cut -f5 | tr , '\n' | sort -u)
    mtp_parents=$(ninfer-bind n.ninfer | grep '^mtp/' | grep -v -e '^mtp/embedding' -e '^mtp/head' | cut -f5 | tr , '\n' | sort -u)
    [ -n "$mtp_parents" ]
    for p in $mtp_parents; do
        run -1 grep -qxF "$p" <<< "$text_parents"
    done
    grep -qF '"id": "mtp/layers/0/attention/qkgv"' n.json
}

@test "the spec 12.1 Text example: Q/K/gate/V and gate/up parents of [512,128], four resources" {
    nf-mkarch --arch spec121 ck
    import_pack ck plain
    run -0 ninfer-bind plain.ninfer
    [[ "$output" == *$'text/layers/0/attention/gate\t128x128\t16384\tbf16/contiguous_le_v1\tmodel.layers.0.self_attn.q_proj.weight\tview'* ]]
    import_pack ck ex --fuse
    same_params plain.ninfer ex.ninfer
    run -0 ninfer-bind ex.ninfer
    [ "${#lines[@]}" -eq 15 ]
    [[ "$output" == *$'text/layers/0/attention/gate\t128x128\t16384\tbf16/contiguous_le_v1\ttext/layers/0/attention/qkgv\tview'* ]]
    [[ "$output" == *$'text/head\t248320x128\t31784960\tbf16/contiguous_le_v1\tlm_head.weight\tview'* ]]
    ninfer-cat --catalog ex.ninfer | grep -qF '"id":"text/layers/0/attention/qkgv","kind":"tensor","shape":[512,128]'
    ninfer-cat --catalog ex.ninfer | grep -qF '"id":"text/layers/0/mlp/gate_up","kind":"tensor","shape":[512,128]'
    # spec 12.3's order in one parent: query, key, gate, value
    ninfer-cat --catalog ex.ninfer | grep -qF '"text/layers/0/attention/gate":{"parts":[{"object":"text/layers/0/attention/qkgv","range":[32768,49152]}]}'
    local r
    for r in tokenizer.json tokenizer_config.json chat_template.jinja generation_config.json; do
        ninfer-cat --resource "$r" ex.ninfer | cmp - "ck/$r"
    done
    [ "$(ninfer-cat --catalog ex.ninfer | grep -o '"activation_policy":"A16Only"' | wc -l)" -eq 9 ]
}

@test "checkpoint faults: a missing tensor or a wrong shape (1), an unknown architecture or dtype (4)" {
    nf-mkarch --arch llama ck
    # rename one tensor in the safetensors header (same length keeps offsets)
    sed -i '0,/model.layers.1.mlp.up_proj.weight/s//model.layers.1.mlp.up_proj.weighz/' ck/model.safetensors
    run -1 --separate-stderr ninfer-import ck
    expect_only_codes coverage
    [[ "$stderr" == *'no tensor "model.layers.1.mlp.up_proj.weight" for parameter "text/layers/1/mlp/up"'* ]]
    nf-mkarch --arch llama ck
    sed -i 's/"intermediate_size": 96/"intermediate_size": 48/' ck/config.json
    run -1 --separate-stderr ninfer-import ck
    expect_code coverage
    [[ "$stderr" == *'tensor "model.layers.0.mlp.gate_proj.weight" is [96x64]; the config implies [48x64]'* ]]
    nf-mkarch --arch llama ck
    sed -i 's/LlamaForCausalLM/MambaForCausalLM/' ck/config.json
    run -4 --separate-stderr ninfer-import ck
    expect_only_codes unsupported
    [[ "$stderr" == *'unknown architecture "MambaForCausalLM"'* ]]
    nf-mkarch --arch llama ck
    sed -i 's/"hidden_size": 64,/"hidden_size": "64",/' ck/config.json
    run -1 --separate-stderr ninfer-import ck
    expect_only_codes schema
    run -3 --separate-stderr ninfer-import no-such-dir
    run -3 --separate-stderr ninfer-import "$BATS_TEST_TMPDIR"
    expect_only_codes io
}

@test "a checkpoint's unused tensors are one warning; -q silences it" {
    nf-mkarch --arch llama --tied ck
    nf-mkarch --arch llama ck2
    cp ck2/model.safetensors ck/model.safetensors  # has lm_head.weight; config says tied
    run -0 --separate-stderr ninfer-import -o m.json ck
    [[ "$stderr" == *'warning: 1 checkpoint tensor no parameter uses ("lm_head.weight") left out'* ]]
    run -0 --separate-stderr ninfer-import -q --force -o m.json ck
    [ -z "$stderr" ]
}

# man_cmd PAGE N — the Nth "$ " command of man/PAGE's EXAMPLES (mdoc escapes undone).
man_cmd() {
    sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$REPO/man/$1" | sed -e 's/\\e/\\/g' -e 's/\\-/-/g' |
        sed -n 's/^\$ //p' | sed -n "$2p"
}

@test "ninfer-import(1): every EXAMPLES command runs and prints what the page shows" {
    [ "$(sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$REPO/man/ninfer-import.1" | grep -c '^\$ ')" -eq 8 ]
    nf-mkarch --arch llama ckpt
    run -0 bash -o pipefail -c "$(man_cmd ninfer-import.1 1)"
    run -0 bash -o pipefail -c "$(man_cmd ninfer-import.1 2)"
    run -0 bash -o pipefail -c "$(man_cmd ninfer-import.1 3)"
    [ "$output" = "m.ninfer: OK (21 parameters, 16 uses)" ]
    run -0 bash -o pipefail -c "$(man_cmd ninfer-import.1 4)"
    run -0 bash -o pipefail -c "$(man_cmd ninfer-import.1 5)"
    [ "$output" = $'text/layers/0/attention/key\t32x64\t2048\tbf16/contiguous_le_v1\ttext/layers/0/attention/qkv\tview' ]
    need ollama-llama-2-tiny-random-gguf/llama-2-tiny-random.gguf
    need stories260K-gguf/stories260K-Q4_0.gguf
    ln -s "$REALDATA/ollama-llama-2-tiny-random-gguf/llama-2-tiny-random.gguf" tiny.gguf
    ln -s "$REALDATA/stories260K-gguf/stories260K-Q4_0.gguf" stories260K-Q4_0.gguf
    run -0 bash -o pipefail -c "$(man_cmd ninfer-import.1 6)"
    grep -qF '"format": "bf16"' tiny.json
    run -0 bash -o pipefail -c "$(man_cmd ninfer-import.1 7)"
    run -0 bash -o pipefail -c "$(man_cmd ninfer-import.1 8)"
    [ "$output" = $'text/layers/0/attention/value\t32x64\t2048\tgguf_q4_0/gguf_rows_v1\tblk.0.attn_v.weight\tview' ]
}

@test "GGUF of each family (nf-mkgguf: llama.cpp names, q/k order, expert banks; BF16/F16/F32) equals the Hugging Face import" {
    local a dt
    for a in "llama bf16" "llama f16" "qwen2 bf16" "qwen3 f32" "qwen3moe bf16" "qwen3moe f16"; do
        set -- $a
        nf-mkarch --arch "$1" --dtype "$2" "ck-$1-$2"
        nf-mkgguf --alignment 64 "ck-$1-$2" "$1-$2.gguf"
        import_pack "$1-$2.gguf" "g-$1-$2"
        import_pack "ck-$1-$2" "h-$1-$2"
        same_params "g-$1-$2.ninfer" "h-$1-$2.ninfer"
    done
    import_pack qwen3moe-bf16.gguf fused --fuse
    same_params fused.ninfer g-qwen3moe-bf16.ninfer
    # experts bind their slices of the [E, Im, H] banks; layer 1 stays dense
    run -0 ninfer-bind g-qwen3moe-bf16.ninfer
    [[ "$output" == *$'text/layers/0/mlp/experts/2/up\t32x64\t2048\tbf16/contiguous_le_v1\tblk.0.ffn_up_exps.weight\tview'* ]]
    [[ "$output" == *$'text/layers/1/mlp/up\t96x64\t6144\tbf16/contiguous_le_v1\tblk.1.ffn_up.weight\tview'* ]]
    grep -qF '"mlp_only_layers":[1]' g-qwen3moe-bf16.json
    # the tokenizer: template and embedded tokenizer.json are byte ranges of the GGUF,
    # every key/value in its prefix, read back by our GGUF reader (a tab and a
    # quote escaped, negative ints and -0.0 kept)
    run -0 ninfer-cat --resource chat_template.jinja g-llama-bf16.ninfer
    [ "$output" = '{% for m in messages %}{{ m.content }}{% endfor %}' ]
    run -0 ninfer-cat --resource tokenizer.json g-llama-bf16.ninfer
    [ "$output" = '{"version": "1.0"}' ]
    ninfer-cat --resource gguf.prefix g-llama-bf16.ninfer > p.gguf
    cmp p.gguf <(head -c "$(wc -c < p.gguf)" llama-bf16.gguf)
    [ "$(wc -c < p.gguf)" -eq "$(tensor_data_start llama-bf16.gguf)" ]
    [[ "$(nf-gguf --prefix kv p.gguf tokenizer.ggml.tokens)" == *'"tab\t\"7\""'* ]]
    [ "$(nf-gguf --prefix kv p.gguf tokenizer.ggml.scores)" = '[-0.0,-1.5,-3.0]' ]  # -1.5 x 0 keeps its sign
    [ "$(nf-gguf --prefix kv p.gguf tokenizer.ggml.token_type)" = '[1,-1]' ]
    [ "$(nf-gguf --prefix kv p.gguf tokenizer.ggml.add_bos_token)" = true ]
    # F16 GGUF matrices keep their bytes as gguf_f16 objects by default
    run -0 ninfer-bind g-llama-f16.ninfer
    [[ "$output" == *$'text/layers/0/mlp/gate\t96x64\t6144\tgguf_f16/gguf_rows_v1'* ]]
}
