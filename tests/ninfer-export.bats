#!/usr/bin/env bats
# ninfer-export: artifacts back to GGUF and to Hugging Face checkpoints
# (DESIGN 16). Round trips are cmp-exact on the real files of the shared
# data directory (skipped with a message when absent) and on every family
# nf-mkgguf writes; values read back by our own importer are compared bit for
# bit with ninfer-bind --extract.

load helper

REALDATA="${NF_REALDATA:-$REPO/../shared/realdata}"

need() {
    [ -e "$REALDATA/$1" ] || skip "real data absent: $REALDATA/$1 (see the project's shared/realdata)"
}

# import_pack SRC NAME [IMPORT OPTIONS] — import and pack SRC as NAME.ninfer.
import_pack() {
    local src=$1 name=$2
    shift 2
    rm -f "$name.json" "$name.ninfer"
    run -0 --separate-stderr ninfer-import -q "$@" -o "$name.json" "$src"
    run -0 --separate-stderr ninfer-pack -q -o "$name.ninfer" "$name.json"
}

# same_params A B — every parameter of A extracts bit for bit as in B (A_log
# within DESIGN 10's 2^-21 tolerance, as a GGUF round trip of it allows).
same_params() {
    local name rest n=0
    while IFS=$'\t' read -r name rest; do
        ninfer-bind --extract "$name" "$1" > got.bin
        ninfer-bind --extract "$name" "$2" > want.bin
        case "$name" in
            */A_log) nf-f32cmp --alog got.bin want.bin > /dev/null ||
                { echo "$name is outside the A_log tolerance" >&2; return 1; } ;;
            *) cmp -s got.bin want.bin || { echo "$name differs between $1 and $2" >&2; return 1; } ;;
        esac
        n=$((n + 1))
    done < <(ninfer-bind "$1")
    [ "$n" -eq "$(ninfer-bind "$2" | wc -l)" ]
    [ "$n" -gt 0 ]
}

# tensor_table GGUF — name, type, ne of every tensor, sorted.
tensor_table() {
    nf-gguf tensors "$1" | cut -f1-3 | sort
}

# same_tensor_bytes A B — the same tensors (name, type, shape) holding the same bytes.
same_tensor_bytes() {
    diff <(tensor_table "$1") <(tensor_table "$2") || return 1
    local n
    for n in $(nf-gguf tensors "$1" | cut -f1); do
        [ "$(nf-gguf sha "$1" "$n")" = "$(nf-gguf sha "$2" "$n")" ] ||
            { echo "tensor $n differs" >&2; return 1; }
    done
}

# tokenizer_json DIR — a small byte-level BPE tokenizer (GPT-2's pre-tokenizer)
# and its tokenizer_config.json in checkpoint DIR.
tokenizer_json() {
    printf '%s' '{"version": "1.0", "added_tokens": [{"id": 5, "content": "<s>", "special": true}, {"id": 6, "content": "<tool>", "special": false}], "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}, "decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3, "\u0120ab": 4}, "merges": ["a b", ["\u0120", "ab"]]}}' > "$1/tokenizer.json"
    printf '%s' '{"bos_token": "<s>", "eos_token": {"content": "<s>"}, "add_bos_token": true}' > "$1/tokenizer_config.json"
}

# ---- GGUF round trips ------------------------------------------------------------

@test "GGUF of every generated family (F32/F16/BF16, Q8_0/Q4_0, MTP, --fuse): import, pack, export is cmp-identical" {
    local a t
    for a in "llama bf16" "qwen2 f16" "qwen3 f32" "qwen3moe bf16" "qwen3next bf16 --mtp" "qwen3_5 f16 --mtp" "qwen3_5moe f32"; do
        set -- $a
        nf-mkarch --arch "$1" --dtype "$2" $3 "ck-$1" > /dev/null
        for t in "" "--type q8_0" "--type q4_0"; do
            nf-mkgguf $t "ck-$1" g.gguf
            import_pack g.gguf g
            run -0 --separate-stderr ninfer-export --gguf -o e.gguf g.ninfer
            cmp e.gguf g.gguf
            rm e.gguf
        done
    done
    # fused parents cut back into their tensors; F16 matrices widened by --f16-as
    import_pack g.gguf f --fuse --f16-as fp32
    grep -qF '"rows":[[' f.json
    run -0 --separate-stderr ninfer-export --gguf -o e.gguf f.ninfer
    cmp e.gguf g.gguf
}

@test "what a GGUF import keeps for the way back: every tensor, its SHA-256, the originals of log-neg" {
    nf-mkarch --arch qwen3_5 --dtype bf16 ck > /dev/null
    nf-mkgguf ck g.gguf
    import_pack g.gguf g
    # one record per tensor of the file, in its order, with its bytes' digest
    [ "$(grep -c '{"name":"' g.json)" -eq "$(nf-gguf tensors g.gguf | wc -l)" ]
    local n
    n=$(nf-gguf tensors g.gguf | sed -n 3p | cut -f1)
    grep -qF "{\"name\":\"$n\",\"sha256\":\"$(nf-gguf sha g.gguf "$n")\"" g.json
    # ssm_a = -exp(A_log) has no bit-exact inverse: its bytes are kept
    grep -qF '"map":"log-neg","original":"gguf.original/blk.0.ssm_a"' g.json
    cmp <(ninfer-cat --object gguf.original/blk.0.ssm_a g.ninfer) \
        <(dd if=g.gguf bs=1 skip="$(nf-gguf tensors g.gguf | grep -P '^blk.0.ssm_a\t' | cut -f4)" \
              count="$(nf-gguf tensors g.gguf | grep -P '^blk.0.ssm_a\t' | cut -f5)" status=none)
    # a tensor no parameter binds: an object of its own bytes, and back in its place
    nf-mkgguf --extra rope_freqs.weight ck r.gguf
    import_pack r.gguf r
    grep -qF '{"name":"rope_freqs.weight","sha256":"' r.json
    [ "$(ninfer-cat --object rope_freqs.weight r.ninfer | sha256sum | cut -d' ' -f1)" = "$(nf-gguf sha r.gguf rope_freqs.weight)" ]
    run -0 --separate-stderr ninfer-export --gguf -o r2.gguf r.ninfer
    cmp r2.gguf r.gguf
}

@test "realdata: SmolLM2-135M Q4_1 round trip is cmp-identical, also as a stream, through parts and a stream" {
    need smollm2-135m-instruct-gguf/SmolLM2-135M-Instruct.Q4_1.gguf
    local g="$REALDATA/smollm2-135m-instruct-gguf/SmolLM2-135M-Instruct.Q4_1.gguf"
    import_pack "$g" sm
    run -0 ninfer-export --gguf --json -o sm.gguf sm.ninfer
    [[ "$output" == *'"from_gguf":true,"identical":true,"changed":[],"tensors":272,"bytes":98362432'* ]]
    cmp sm.gguf "$g"
    ninfer-export --gguf sm.ninfer | cmp - "$g"
    ninfer-split -q --max-file-bytes 30M -o parts/sm.ninfer sm.ninfer
    ninfer-cat parts/sm.ninfer | ninfer-split -q -o back.ninfer -
    run -0 --separate-stderr ninfer-export --gguf -o back.gguf back.ninfer
    cmp back.gguf "$g"
    run -0 --separate-stderr ninfer-export --gguf -o parts.gguf parts/sm.ninfer
    cmp parts.gguf "$g"
    # --verify hashes every object first: a damaged one is a digest error, nothing written
    local eps
    eps=$(ninfer-cat --header sm.ninfer | sed -n 's/.*"entry_payload_start": *\([0-9]*\).*/\1/p')
    nf_flip sm.ninfer $((eps + 100))
    run -0 --separate-stderr ninfer-export --gguf --verify -o ok.gguf back.ninfer
    cmp ok.gguf "$g"
    run -1 --separate-stderr ninfer-export --gguf --verify -o bad.gguf sm.ninfer
    [[ "$stderr" == *'sm.ninfer: /objects/0: digest: object "token_embd.weight": sha256 '* ]]
    [ ! -e bad.gguf ]
}

@test "realdata: the six stories260K GGUFs and llama-2-tiny round trip cmp-identical" {
    need stories260K-gguf/stories260K-Q8_0.gguf
    need ollama-llama-2-tiny-random-gguf/llama-2-tiny-random.gguf
    local g
    for g in "$REALDATA"/stories260K-gguf/stories260K-{F32,Q8_0,Q4_0,Q5_0,Q4_1,IQ4_NL}.gguf \
        "$REALDATA/ollama-llama-2-tiny-random-gguf/llama-2-tiny-random.gguf"; do
        import_pack "$g" s
        run -0 --separate-stderr ninfer-export --gguf -o s.gguf s.ninfer
        cmp s.gguf "$g"
        rm s.gguf s.json s.ninfer
    done
}

@test "a re-quantized GGUF import is regenerated: the changed tensors named, the others as they were" {
    nf-mkarch --arch llama ck > /dev/null
    nf-mkgguf --type q8_0 ck g.gguf
    import_pack g.gguf g
    run -0 --separate-stderr ninfer-quant -i g.json -o q.json 'text/layers/*/mlp/*=q4_g64_fp16'
    run -0 --separate-stderr ninfer-pack -q -o q.ninfer q.json
    run -0 ninfer-export --gguf --json -o q.gguf q.ninfer
    [[ "$output" == *'"identical":false,"changed":["blk.0.ffn_gate.weight","blk.0.ffn_up.weight","blk.0.ffn_down.weight","blk.1.ffn_gate.weight","blk.1.ffn_up.weight","blk.1.ffn_down.weight"]'* ]]
    run -0 --separate-stderr ninfer-export --gguf --force -o q.gguf q.ninfer
    [ "$stderr" = 'ninfer-export: q.gguf: regenerated: 6 tensors differ from the source GGUF ("blk.0.ffn_gate.weight" and others)' ]
    # q4_g64 -> Q4_0 holds the same values; the source's key/values stay (file_type goes)
    [ "$(nf-gguf tensors q.gguf | grep -c $'\tQ4_0\t')" -eq 6 ]
    [ "$(nf-gguf kv q.gguf tokenizer.ggml.model)" = '"gpt2"' ]
    run -1 nf-gguf kv q.gguf general.file_type
    [ "$(nf-gguf kv g.gguf general.file_type)" = 7 ]
    import_pack q.gguf back
    same_params back.ninfer q.ninfer
    # the untouched artifact still comes back whole
    run -0 --separate-stderr ninfer-export --gguf -o g2.gguf g.ninfer
    cmp g2.gguf g.gguf
}

# ---- Hugging Face -> GGUF ------------------------------------------------------------

@test "HF checkpoints -> GGUF: llama.cpp's names, orders and types, tensor for tensor as nf-mkgguf writes them" {
    local a
    for a in "llama f32" "qwen2 bf16" "qwen3 bf16" "qwen3next bf16 --mtp" "qwen3_5 bf16 --mtp" "qwen3_5moe f32"; do
        set -- $a
        nf-mkarch --arch "$1" --dtype "$2" $3 "ck-$1" > /dev/null
        nf-mkgguf --no-tokenizer "ck-$1" ref.gguf
        import_pack "ck-$1" h
        run -0 --separate-stderr ninfer-export --gguf --no-tokenizer -o e.gguf h.ninfer
        same_tensor_bytes e.gguf ref.gguf
        # and our importer reads it back to the same parameters
        import_pack e.gguf back
        same_params back.ninfer h.ninfer
        rm e.gguf
    done
    # qwen3moe's router is F32 (llama.cpp's converter keeps it so): same values
    nf-mkarch --arch qwen3moe --layers 1 ck-m > /dev/null
    import_pack ck-m m
    run -0 --separate-stderr ninfer-export --gguf --no-tokenizer -o m.gguf m.ninfer
    nf-gguf tensors m.gguf | grep -qP '^blk.0.ffn_gate_inp.weight\tF32\t64x4\t'
    import_pack m.gguf mb
    same_params mb.ninfer m.ninfer
}

@test "formats -> GGUF: q8/q4/q5 as Q8_0/Q4_0/Q5_0 and F32 fallbacks are exact; f16, bf16, q8_0 fallbacks are lossy and said so" {
    nf-mkarch --arch llama ck > /dev/null
    import_pack ck h
    ninfer-quant -i h.json -o q.json 'text/layers/0/*=q8_g32_fp16' 'text/layers/1/attention/*=q4_g64_fp16' \
        'text/layers/1/mlp/*=q5_g64_fp16' 'text/embedding=q6_g64_fp16' 'text/head=fp8_e4m3fn_row_bf16'
    run -0 --separate-stderr ninfer-pack -q -o q.ninfer q.json
    run -0 --separate-stderr ninfer-export --gguf --no-tokenizer -o q.gguf q.ninfer
    [ "$stderr" = "ninfer-export: warning: q.ninfer: the config has no max_position_embeddings; LlamaForCausalLM's default 2048 written" ]
    nf-gguf tensors q.gguf | grep -qP '^blk.0.attn_q.weight\tQ8_0\t'
    nf-gguf tensors q.gguf | grep -qP '^blk.1.attn_k.weight\tQ4_0\t'
    nf-gguf tensors q.gguf | grep -qP '^blk.1.ffn_down.weight\tQ5_0\t'
    nf-gguf tensors q.gguf | grep -qP '^token_embd.weight\tF32\t'
    nf-gguf tensors q.gguf | grep -qP '^output.weight\tF32\t'
    import_pack q.gguf back
    same_params back.ninfer q.ninfer
    # a lossy fallback: each tensor named with its error, which the values keep to
    run -0 --separate-stderr ninfer-export --gguf --no-tokenizer --fallback bf16 -o b.gguf q.ninfer
    [ "$(grep -c 'warning: tensor ".*" .* -> BF16 is lossy: rmse' <<< "$stderr")" -eq 2 ]
    run -0 ninfer-export --gguf --no-tokenizer --fallback q8_0 --json -o q8.gguf q.ninfer
    [[ "$output" == *'"lossy":[{"tensor":"token_embd.weight","from":"q6_g64_fp16","to":"Q8_0","rmse":'* ]]
    local stated
    stated=$(grep -o '"tensor":"token_embd.weight"[^}]*' <<< "$output" | grep -o '"max_abs_error":[0-9.e-]*' | cut -d: -f2)
    import_pack q8.gguf q8b
    ninfer-bind --extract text/embedding q8b.ninfer > got.bin
    ninfer-bind --extract text/embedding q.ninfer > want.bin
    run -1 nf-f32cmp got.bin want.bin
    local got
    got=$(grep -o 'max_abs_diff [^ ]*' <<< "$output" | cut -d' ' -f2)
    awk -v a="$got" -v b="$stated" 'BEGIN { exit !(a <= b * 1.000001 && a > 0) }'
}

@test "realdata: stories260K hf-f32 -> GGUF gives the parameters bit for bit, quantized too" {
    need stories260K/hf-f32/model.safetensors
    import_pack "$REALDATA/stories260K/hf-f32" h
    run -0 --separate-stderr ninfer-export --gguf -o h.gguf h.ninfer
    [ "$(nf-gguf kv h.gguf tokenizer.ggml.model)" = '"none"' ]
    [ "$(nf-gguf kv h.gguf llama.vocab_size)" = 512 ]
    import_pack h.gguf back
    same_params back.ninfer h.ninfer
    ninfer-quant -i h.json -o q.json 'text/*=q8_g32_fp16' 'text/layers/*/mlp/*=q4_g64_fp16'
    run -0 --separate-stderr ninfer-pack -q -o q.ninfer q.json
    run -0 --separate-stderr ninfer-export --gguf -o q.gguf q.ninfer
    import_pack q.gguf qback
    same_params qback.ninfer q.ninfer
}

# ---- the tokenizer --------------------------------------------------------------------

@test "tokenizer.json (byte-level BPE) -> GGUF tokens, types, merges, pre, special ids; the chat template" {
    nf-mkarch --arch llama --vocab 8 ck > /dev/null
    tokenizer_json ck
    import_pack ck h
    run -0 --separate-stderr ninfer-export --gguf -o h.gguf h.ninfer
    [ "$(nf-gguf kv h.gguf tokenizer.ggml.model)" = '"gpt2"' ]
    [ "$(nf-gguf kv h.gguf tokenizer.ggml.pre)" = '"gpt-2"' ]
    [ "$(nf-gguf kv h.gguf tokenizer.ggml.tokens)" = '["a","b","ab","Ġ","Ġab","<s>","<tool>","[PAD7]"]' ]
    [ "$(nf-gguf kv h.gguf tokenizer.ggml.token_type)" = '[1,1,1,1,1,3,4,5]' ]
    [ "$(nf-gguf kv h.gguf tokenizer.ggml.merges)" = '["a b","Ġ ab"]' ]
    [ "$(nf-gguf kv h.gguf tokenizer.ggml.bos_token_id)" = 5 ]
    [ "$(nf-gguf kv h.gguf tokenizer.ggml.eos_token_id)" = 5 ]
    [ "$(nf-gguf kv h.gguf tokenizer.ggml.add_bos_token)" = true ]
    cmp <(nf-gguf str h.gguf tokenizer.chat_template) ck/chat_template.jinja
    # --no-tokenizer: none, and the vocabulary's size
    run -0 --separate-stderr ninfer-export --gguf --no-tokenizer -o n.gguf h.ninfer
    [ "$(nf-gguf kv n.gguf tokenizer.ggml.model)" = '"none"' ]
    [ "$(nf-gguf kv n.gguf llama.vocab_size)" = 8 ]
    run -1 nf-gguf kv n.gguf tokenizer.ggml.tokens
    # another pre-tokenizer, another kind: unsupported (4), nothing written
    sed -i 's/"use_regex": true/"use_regex": false/' ck/tokenizer.json
    import_pack ck p
    run -4 --separate-stderr ninfer-export -q --gguf -o p.gguf p.ninfer
    expect_only_codes unsupported
    [[ "$stderr" == *'the pre-tokenizer ByteLevel(prefix=0,regex=0) is not in this build'* ]]
    sed -i 's/"type": "BPE"/"type": "WordPiece"/' ck/tokenizer.json
    import_pack ck w
    run -4 --separate-stderr ninfer-export --gguf -o w.gguf w.ninfer
    [[ "$stderr" == *'tokenizer kind "WordPiece" is not exported to GGUF'* ]]
    [ ! -e p.gguf ]
    [ ! -e w.gguf ]
}

# ---- hostile artifacts --------------------------------------------------------------

@test "hostile artifacts: a config without a key, a value a GGUF key cannot hold, a name a GGUF cannot hold, unsafe resource roles: exit 1, nothing written" {
    nf-mkarch --arch llama ck > /dev/null
    import_pack ck h
    # the binder needs intermediate_size: schema at its pointer
    sed 's/"intermediate_size": 96,//' h.json > m1.json
    run -0 --separate-stderr ninfer-pack -q -o m1.ninfer m1.json
    run -1 --separate-stderr ninfer-export --gguf -o m1.gguf m1.ninfer
    [[ "$stderr" == *'/components/text/config/intermediate_size: schema: '* ]]
    run -1 --separate-stderr ninfer-export --safetensors -o m1.dir m1.ninfer
    [ ! -e m1.gguf ]
    [ ! -e m1.dir ]
    # a context length beyond GGUF's u32 key
    sed 's/"num_key_value_heads": 2/"num_key_value_heads": 2, "max_position_embeddings": 1099511627776/' h.json > m2.json
    run -0 --separate-stderr ninfer-pack -q -o m2.ninfer m2.json
    run -1 --separate-stderr ninfer-export --gguf -o m2.gguf m2.ninfer
    [[ "$stderr" == *'/components/text/config/max_position_embeddings: schema: max_position_embeddings must be an integer that a u32 holds'* ]]
    [ ! -e m2.gguf ]
    # a GGUF tensor name longer than ggml's 63 bytes
    local long
    long=$(printf 'x%.0s' {1..70})
    nf-mkgguf --extra "$long" ck long.gguf
    run -0 --separate-stderr ninfer-import -q -o l.json long.gguf
    run -0 --separate-stderr ninfer-pack -q -o l.ninfer l.json
    run -1 --separate-stderr ninfer-export --gguf -o l.gguf l.ninfer
    [ "$stderr" = "ninfer-export: l.ninfer: schema: \"$long\" is not a GGUF tensor name (1 to 63 bytes of UTF-8)" ]
    [ ! -e l.gguf ]
    no_temporaries .
    # forged round-trip records (an unpermute that does not fit the rows): not trusted
    nf-mkgguf --no-tokenizer ck g.gguf
    import_pack g.gguf g
    sed 's/"unpermute":{"scheme":"llama-rope","heads":4}/"unpermute":{"scheme":"llama-rope","heads":3}/' g.json > f.json
    run -1 cmp -s g.json f.json
    run -0 --separate-stderr ninfer-pack -q -o f.ninfer f.json
    run -0 --separate-stderr ninfer-export --gguf -o f.gguf f.ninfer
    [[ "$stderr" == *'warning: f.ninfer: its GGUF records do not describe its gguf.prefix; written as a generated GGUF'* ]]
    import_pack f.gguf fb
    same_params fb.ninfer g.ninfer
    # resource roles that are no file name: exit 1, no directory
    local role
    for role in '../evil' 'a/b' '.' '..' 'config.json'; do
        sed "s|\"tokenizer.json\": \"r.tokenizer.json\"|\"$role\": \"r.tokenizer.json\"|" h.json > r.json
        run -0 --separate-stderr ninfer-pack -q --force -o r.ninfer r.json
        run -1 --separate-stderr ninfer-export --safetensors -o out r.ninfer
        expect_only_codes schema
        [[ "$stderr" == *"resource role \"$role\" is not a file name the checkpoint can take"* ]]
        [ ! -e out ]
        [ ! -e evil ]
    done
    no_temporaries .
}

# ---- Hugging Face checkpoints --------------------------------------------------------

@test "realdata: stories260K hf-f32 and hf-bf16 -> safetensors: the same tensors and config, through parts, a stream and shards" {
    need stories260K/hf-bf16/model.safetensors
    local v
    for v in hf-f32 hf-bf16; do
        local ck="$REALDATA/stories260K/$v"
        import_pack "$ck" "$v"
        run -0 --separate-stderr ninfer-export --safetensors -o "out-$v" "$v.ninfer"
        [ "$(ls "out-$v")" = "$(printf '%s\n' config.json model.safetensors)" ]
        cmp "out-$v/config.json" "$ck/config.json"
        diff <(nf-stlist "out-$v/model.safetensors") <(nf-stlist "$ck/model.safetensors")
        # through parts and a stream, sharded: the same tensors, indexed
        ninfer-split -q --max-file-bytes 200K -o "parts-$v/m.ninfer" "$v.ninfer"
        ninfer-cat "parts-$v/m.ninfer" | ninfer-split -q -o "s-$v.ninfer" -
        run -0 --separate-stderr ninfer-export --safetensors --max-shard-size 300K -o "sh-$v" "s-$v.ninfer"
        diff <(nf-stlist "sh-$v"/model-0000*-of-0000*.safetensors) <(nf-stlist "$ck/model.safetensors")
        [ "$(grep -c '"model\.' "sh-$v/model.safetensors.index.json")" -eq 47 ]
        grep -qF '"model.norm.weight": "model-0000' "sh-$v/model.safetensors.index.json"
    done
}

@test "safetensors: frontend resources as their files, formats decoded (bf16 lossy and said, f32 exact), gguf_f16 as F16" {
    nf-mkckpt ck > /dev/null
    import_pack ck h
    run -0 --separate-stderr ninfer-export --safetensors -o out h.ninfer
    cmp out/tokenizer.json ck/tokenizer.json
    cmp out/generation_config.json ck/generation_config.json
    diff <(nf-stlist out/model.safetensors) <(nf-stlist ck/model.safetensors)
    ninfer-quant -i h.json -o q.json 'text/layers/*/mlp/*=q4_g64_fp16'
    run -0 --separate-stderr ninfer-pack -q -o q.ninfer q.json
    run -0 --separate-stderr ninfer-export --safetensors -o qb q.ninfer
    [[ "$stderr" == *'warning: tensor "model.layers.0.mlp.gate_proj.weight" q4_g64_fp16 -> BF16 is lossy: rmse '* ]]
    run -0 --separate-stderr ninfer-export --safetensors --dtype f32 -o qf q.ninfer
    [ -z "$stderr" ]
    nf-stlist qf/model.safetensors | grep -qP '^model.layers.0.mlp.gate_proj.weight\tF32\t'
    import_pack qf qfb
    same_params qfb.ninfer q.ninfer
    # an F16 GGUF: its gguf_f16 matrices as F16
    nf-mkarch --arch llama --dtype f16 cf > /dev/null
    nf-mkgguf cf f.gguf
    import_pack f.gguf g
    run -0 --separate-stderr ninfer-export --safetensors -o fo g.ninfer
    nf-stlist fo/model.safetensors | grep -qP '^model.layers.0.self_attn.q_proj.weight\tF16\t64x64\t'
    import_pack fo fob
    same_params fob.ninfer g.ninfer
}

# ---- outputs ----------------------------------------------------------------------------

@test "GGUF output: kept without --force, replaced with it; an input, a terminal, a stream operand refused; a full disk or a signal leaves nothing" {
    nf-mkarch --arch llama ck > /dev/null
    import_pack ck h
    echo mine > e.gguf
    run -3 --separate-stderr ninfer-export --gguf -o e.gguf h.ninfer
    [ "$stderr" = 'ninfer-export: e.gguf: io: output exists; use --force to replace it' ]
    [ "$(cat e.gguf)" = mine ]
    run -4 --separate-stderr ninfer-export --gguf --force -o e.gguf h.ninfer
    [ "$(cat e.gguf)" = mine ]
    run -0 --separate-stderr ninfer-export --gguf --force --no-tokenizer -o e.gguf h.ninfer
    [ "$(head -c 4 e.gguf)" = GGUF ]
    run -2 --separate-stderr ninfer-export --gguf --force -o h.ninfer h.ninfer
    expect_only_codes usage
    [ "$(head -c 6 h.ninfer)" = NINFER ]
    run -2 --separate-stderr ninfer-export --gguf - < h.ninfer
    [[ "$stderr" == *"give its file, not a stream"* ]]
    run -2 --separate-stderr ninfer-export --gguf --json h.ninfer
    run -3 --separate-stderr ninfer-export -q --gguf --no-tokenizer -o /dev/full h.ninfer
    expect_only_codes io
    mkdir out
    need_shim
    run -3 --separate-stderr nf_failwrite 30000 ENOSPC ninfer-export -q --gguf --no-tokenizer -o out/e.gguf h.ninfer
    expect_only_codes io
    [ -z "$(ls -A out)" ]
    need_sigat
    run nf_sigat write:30000 TERM ninfer-export --gguf --no-tokenizer -o out/e.gguf h.ninfer
    [ "$status" -eq 143 ]
    [ -z "$(ls -A out)" ]
    run nf_sigat write:100 INT ninfer-export --gguf --no-tokenizer -o out/e.gguf h.ninfer
    [ "$status" -eq 130 ]
    [ -z "$(ls -A out)" ]
}

@test "checkpoint directory: absent or empty, else --force; a file, '.', or a directory holding the input refused; a signal or full disk leaves nothing" {
    nf-mkarch --arch llama ck > /dev/null
    import_pack ck h
    run -0 --separate-stderr ninfer-export --safetensors -o new/dir h.ninfer
    [ -f new/dir/model.safetensors ]
    mkdir empty
    run -0 --separate-stderr ninfer-export --safetensors -o empty h.ninfer
    [ -f empty/config.json ]
    local before
    before=$(nf_snapshot empty)
    run -3 --separate-stderr ninfer-export --safetensors -o empty h.ninfer
    [ "$stderr" = 'ninfer-export: empty: io: output directory exists and is not empty; use --force to replace it' ]
    expect_unchanged "$before" empty
    echo old > empty/stale.txt
    run -0 --separate-stderr ninfer-export --safetensors --force -o empty h.ninfer
    [ ! -e empty/stale.txt ]
    [ -f empty/model.safetensors ]
    touch afile
    run -2 --separate-stderr ninfer-export --safetensors -o afile h.ninfer
    [[ "$stderr" == *'output is a regular file, not a directory'* ]]
    run -2 --separate-stderr ninfer-export --safetensors -o . h.ninfer
    mkdir holder && cp h.ninfer holder/
    run -2 --separate-stderr ninfer-export --safetensors --force -o holder holder/h.ninfer
    [[ "$stderr" == *'output directory holds an input file'* ]]
    [ -f holder/h.ninfer ]
    no_temporaries .
    need_shim
    run -3 --separate-stderr nf_failwrite 2000 ENOSPC ninfer-export --safetensors -o full h.ninfer
    [ ! -e full ]
    no_temporaries .
    need_sigat
    run nf_sigat write:2000 TERM ninfer-export --safetensors -o sig h.ninfer
    [ "$status" -eq 143 ]
    [ ! -e sig ]
    no_temporaries .
}

@test "components: MTP goes where the format has a place, --component text leaves it out, a component with no place needs --drop" {
    nf-mkarch --arch qwen3_5 --mtp ck > /dev/null
    tokenizer_json ck
    import_pack ck h
    run -0 --separate-stderr ninfer-export --gguf -o m.gguf h.ninfer
    [ "$(nf-gguf kv m.gguf qwen35.nextn_predict_layers)" = 1 ]
    [ "$(nf-gguf kv m.gguf qwen35.block_count)" = 5 ]
    nf-gguf tensors m.gguf | grep -q '^blk.4.nextn.eh_proj.weight'
    run -0 --separate-stderr ninfer-export --gguf --component text -o t.gguf h.ninfer
    [ "$(nf-gguf kv t.gguf qwen35.block_count)" = 4 ]
    run -1 nf-gguf kv t.gguf qwen35.nextn_predict_layers
    run -0 --separate-stderr ninfer-export --safetensors -o st h.ninfer
    nf-stlist st/model.safetensors | grep -q '^mtp.fc.weight'
    # a declared component neither format carries
    sed 's/"components": {/"components": {"vision": {"config": {"architectures": ["SomeVision"]}},/' h.json > v.json
    run -0 --separate-stderr ninfer-pack -q -o v.ninfer v.json
    run -4 --separate-stderr ninfer-export --gguf -o v.gguf v.ninfer
    [ "$stderr" = 'ninfer-export: v.ninfer: unsupported: component "vision" has no place in this format (--drop leaves it out)' ]
    [ ! -e v.gguf ]
    run -0 --separate-stderr ninfer-export --gguf --drop -o v.gguf v.ninfer
    [[ "$stderr" == *'ninfer-export: warning: v.ninfer: component "vision" left out (--drop)'* ]]
    run -0 --separate-stderr ninfer-export --safetensors --drop -o vst v.ninfer
    run -1 --separate-stderr ninfer-export --gguf --component nope -o x.gguf v.ninfer
    [[ "$stderr" == *'component-missing: component "nope" is not in the artifact'* ]]
}

@test "usage: --gguf or --safetensors, one artifact, options of the other format refused" {
    run -2 --separate-stderr ninfer-export x.ninfer
    [ "$stderr" = "ninfer-export: usage: say --gguf or --safetensors (see 'ninfer-export --help')" ]
    run -2 --separate-stderr ninfer-export --gguf --safetensors x.ninfer
    run -2 --separate-stderr ninfer-export --safetensors x.ninfer
    run -2 --separate-stderr ninfer-export --gguf --dtype f32 x.ninfer
    run -2 --separate-stderr ninfer-export --safetensors -o d --fallback f16 x.ninfer
    run -2 --separate-stderr ninfer-export --gguf --fallback q4 x.ninfer
    run -2 --separate-stderr ninfer-export --safetensors -o d --max-shard-size 10MX x.ninfer
    [ "$stderr" = "ninfer-export: usage: bad --max-shard-size '10MX': unknown suffix (K M G T, KiB MiB GiB TiB, KB MB GB TB) (see 'ninfer-export --help')" ]
    run -2 --separate-stderr ninfer-export --gguf --max-json-bytes 0 x.ninfer
    [ "$stderr" = "ninfer-export: usage: bad --max-json-bytes '0': zero (give a positive size) (see 'ninfer-export --help')" ]
    run -0 ninfer-export --help
    [ "$(awk '{ if (length > 80) n++ } END { print n + 0 }' <<< "$output")" -eq 0 ]
}

# man_cmd PAGE N — the Nth "$ " command of man/PAGE's EXAMPLES (mdoc escapes undone).
man_cmd() {
    sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$REPO/man/$1" | sed -e 's/\\e/\\/g' -e 's/\\-/-/g' |
        sed -n 's/^\$ //p' | sed -n "$2p"
}

# man_listing PAGE N — the lines after the Nth "$ " command up to the next one
# or the end of its block: what the page says it prints.
man_listing() {
    sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$REPO/man/$1" |
        awk -v n="$2" '/^\$ / { k++; next } /^\.(Ed|Pp|Bd)/ { if (k == n) exit; next } k == n { print }'
}

@test "ninfer-export(1): every EXAMPLES command runs and prints what the page shows" {
    [ "$(sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$REPO/man/ninfer-export.1" | grep -c '^\$ ')" -eq 7 ]
    nf-mkckpt ckpt > /dev/null
    run -0 bash -o pipefail -c "$(man_cmd ninfer-export.1 4)"
    run -0 --separate-stderr bash -o pipefail -c "$(man_cmd ninfer-export.1 5)"
    [ "$(nf-gguf kv q8.gguf tokenizer.ggml.pre)" = '"gpt-2"' ]
    run -0 bash -o pipefail -c "$(man_cmd ninfer-export.1 6)"
    run -0 bash -o pipefail -c "$(man_cmd ninfer-export.1 7)"
    [ "$output" = "$(man_listing ninfer-export.1 7)" ]
    need stories260K-gguf/stories260K-Q4_0.gguf
    ln -s "$REALDATA/stories260K-gguf/stories260K-Q4_0.gguf" stories260K-Q4_0.gguf
    run -0 bash -o pipefail -c "$(man_cmd ninfer-export.1 1)"
    run -0 bash -o pipefail -c "$(man_cmd ninfer-export.1 2)"
    run -0 bash -o pipefail -c "$(man_cmd ninfer-export.1 3)"
}
