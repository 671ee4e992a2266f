#!/usr/bin/env bats
# GGUF import beyond the plain families (DESIGN 5, 10; GGUF.md 3.3, 4): the
# packer's source transforms (unpermute v-heads-tiled on rows and columns,
# map minus-one / log-neg) on every kind of source, and the hybrids
# (qwen3next, qwen35, qwen35moe) written by nf-mkgguf as llama.cpp's
# converter writes them, whose imports equal the Hugging Face ones.

load helper

# objects_equal ART A B — objects A and B of ART hold the same bytes.
objects_equal() {
    cmp <(ninfer-cat --object "$2" "$1") <(ninfer-cat --object "$3" "$1")
}

# tensor ID SHAPE FORMAT SOURCE — one manifest object.
tensor() {
    printf '{"id": "%s", "kind": "tensor", "shape": %s, "format": "%s", "layout": "contiguous_le_v1", "source": %s}' \
        "$1" "$2" "$3" "$4"
}

# manifest OBJECT... — a manifest of these objects (no bindings).
manifest() {
    local IFS=,
    printf '{"components": {"text": {"config": {"architectures": ["TestForCausalLM"]}}}, "objects": [%s], "bindings": {}, "uses": []}\n' "$*"
}

# same_params_alog A B — every parameter of A extracts to the same values
# from B, but A_log, which must agree within 2^-21 max(1, |A_log|)
# (DESIGN 10); prints how many A_log vectors were not bit-exact.
same_params_alog() {
    local name rest n=0 inexact=0
    while IFS=$'\t' read -r name rest; do
        ninfer-bind --extract "$name" "$1" > got.bin
        ninfer-bind --extract "$name" "$2" > want.bin
        case "$name" in
            */A_log)
                nf-f32cmp --alog got.bin want.bin > /dev/null ||
                    { echo "$name is outside the A_log tolerance" >&2; return 1; }
                cmp -s got.bin want.bin || inexact=$((inexact + 1)) ;;
            *) cmp got.bin want.bin || { echo "$name differs between $1 and $2" >&2; return 1; } ;;
        esac
        n=$((n + 1))
    done < <(ninfer-bind "$1")
    [ "$n" -eq "$(ninfer-bind "$2" | wc -l)" ]
    echo "$n parameters equal; $inexact A_log within the tolerance only"
}

# import_pack SRC NAME [IMPORT OPTIONS] — import, pack, verify, --check.
import_pack() {
    local src=$1 name=$2
    shift 2
    run -0 --separate-stderr ninfer-import "$@" -o "$name.json" "$src"
    run -0 --separate-stderr ninfer-pack -q -o "$name.ninfer" "$name.json"
    run -0 --separate-stderr ninfer-verify "$name.ninfer"
    run -0 --separate-stderr ninfer-bind --check "$name.ninfer"
}

@test "source transforms: v-heads-tiled rows and columns, llama-rope, minus-one, log-neg" {
    local v8='[0, 1, 2, 3, 4, 5, 6, 7]'
    # Hk 2, Hv 4 (r 2), head_dim 1: stored head (j*2 + g) holds logical head (g*2 + j),
    # so logical rows/columns 1 and 2 trade places
    manifest \
        "$(tensor rows '[4, 2]' fp32 "{\"values\": $v8, \"dtype\": \"f32\", \"unpermute\": {\"scheme\": \"v-heads-tiled\", \"axis\": \"rows\", \"k_heads\": 2, \"v_heads\": 4, \"head_dim\": 1}}")" \
        "$(tensor rows_want '[4, 2]' fp32 '{"values": [0, 1, 4, 5, 2, 3, 6, 7], "dtype": "f32"}')" \
        "$(tensor cols '[2, 4]' fp32 "{\"values\": $v8, \"dtype\": \"f32\", \"unpermute\": {\"scheme\": \"v-heads-tiled\", \"axis\": \"columns\", \"k_heads\": 2, \"v_heads\": 4, \"head_dim\": 1}}")" \
        "$(tensor cols_want '[2, 4]' fp32 '{"values": [0, 2, 1, 3, 4, 6, 5, 7], "dtype": "f32"}')" \
        "$(tensor off '[8, 1]' int32 "{\"values\": $v8, \"dtype\": \"i32\", \"unpermute\": {\"scheme\": \"v-heads-tiled\", \"axis\": \"rows\", \"k_heads\": 2, \"v_heads\": 4, \"head_dim\": 1, \"offset\": 3}}")" \
        "$(tensor off_want '[8, 1]' int32 '{"values": [0, 1, 2, 3, 5, 4, 6, 7], "dtype": "i32"}')" \
        "$(tensor hd2 '[8, 1]' int32 "{\"values\": $v8, \"dtype\": \"i32\", \"unpermute\": {\"scheme\": \"v-heads-tiled\", \"axis\": \"rows\", \"k_heads\": 2, \"v_heads\": 4, \"head_dim\": 2}}")" \
        "$(tensor hd2_want '[8, 1]' int32 '{"values": [0, 1, 4, 5, 2, 3, 6, 7], "dtype": "i32"}')" \
        "$(tensor rope '[4, 1]' int32 '{"values": [0, 1, 2, 3], "dtype": "i32", "unpermute": {"scheme": "llama-rope", "heads": 1}}')" \
        "$(tensor rope_want '[4, 1]' int32 '{"values": [0, 2, 1, 3], "dtype": "i32"}')" \
        "$(tensor m1 '[3]' fp32 '{"values": [1.5, 3, 1], "dtype": "f32", "map": "minus-one"}')" \
        "$(tensor m1_want '[3]' fp32 '{"values": [0.5, 2, 0], "dtype": "f32"}')" \
        "$(tensor ln '[3]' fp32 '{"values": [-1, -0.25, -4], "dtype": "f32", "map": "log-neg"}')" \
        "$(tensor ln_want '[3]' fp32 '{"values": [0, -1.3862943611198906, 1.3862943611198906], "dtype": "f32"}')" \
        "$(tensor vec '[4]' fp32 '{"values": [-1, -2, -3, -4], "dtype": "f32", "map": "log-neg", "unpermute": {"scheme": "v-heads-tiled", "axis": "rows", "k_heads": 2, "v_heads": 4, "head_dim": 1}}')" \
        "$(tensor vec_want '[4]' fp32 '{"values": [-1, -3, -2, -4], "dtype": "f32", "map": "log-neg"}')" \
        > m.json
    run -0 --separate-stderr ninfer-pack -q -o m.ninfer m.json
    for t in rows cols off hd2 rope m1 ln vec; do
        objects_equal m.ninfer "$t" "${t}_want"
    done
    # with an offset the tiled span is rows [3, 7); heads of 2 rows trade rows 2,3 with 4,5
    run -0 bash -c 'ninfer-cat --object off m.ninfer | od -An -v -td4 -w32 | tr -s " " | sed "s/^ //"'
    [ "$output" = "0 1 2 3 5 4 6 7" ]
    # the same transforms on an artifact's object (decoded, transformed, encoded)
    manifest \
        "$(tensor a '[2, 4]' fp32 '{"artifact": "m.ninfer", "object": "cols_want", "map": "minus-one", "unpermute": {"scheme": "v-heads-tiled", "axis": "columns", "k_heads": 2, "v_heads": 4, "head_dim": 1}}')" \
        "$(tensor a_want '[2, 4]' fp32 '{"values": [-1, 0, 1, 2, 3, 4, 5, 6], "dtype": "f32"}')" > a.json
    run -0 --separate-stderr ninfer-pack -q -o a.ninfer a.json
    objects_equal a.ninfer a a_want
}

@test "source transforms: malformed unpermute and map are schema errors; misfits are range errors" {
    local bad
    for bad in '"unpermute": {"scheme": "v-heads-tiled", "axis": "diagonal", "k_heads": 2, "v_heads": 4, "head_dim": 1}' \
        '"unpermute": {"scheme": "v-heads-tiled", "axis": "rows", "k_heads": 2, "head_dim": 1}' \
        '"unpermute": {"scheme": "v-heads-tiled", "axis": "columns", "k_heads": 2, "v_heads": 4, "head_dim": 1, "offset": 2}' \
        '"unpermute": {"scheme": "v-heads-tiled", "axis": "rows", "k_heads": 2, "v_heads": 4, "head_dim": 1, "heads": 2}' \
        '"unpermute": {"scheme": "reverse", "heads": 2}' \
        '"map": "plus-one"' '"map": 1'; do
        manifest "$(tensor t '[4, 2]' fp32 "{\"values\": [0, 1, 2, 3, 4, 5, 6, 7], \"dtype\": \"f32\", $bad}")" > m.json
        run -1 --separate-stderr ninfer-pack -q -o m.ninfer m.json
        expect_only_codes schema
        [[ "$stderr" == *"/objects/0/source/"* ]]
    done
    manifest "$(tensor t '[4, 2]' fp32 '{"values": [0, 1, 2, 3, 4, 5, 6, 7], "dtype": "f32", "unpermute": {"scheme": "v-heads-tiled", "axis": "rows", "k_heads": 2, "v_heads": 3, "head_dim": 1}}')" > m.json
    run -1 --separate-stderr ninfer-pack -q -o m.ninfer m.json
    expect_only_codes range
    [[ "$stderr" == *"v_heads 3 is not a multiple of k_heads 2"* ]]
    # 4 heads of 2 rows from offset 1 need rows [1, 9) of 4; 4 columns of a [4, 2]
    for bad in '"axis": "rows", "k_heads": 2, "v_heads": 4, "head_dim": 2, "offset": 1' \
        '"axis": "columns", "k_heads": 2, "v_heads": 4, "head_dim": 1'; do
        manifest "$(tensor t '[4, 2]' fp32 "{\"values\": [0, 1, 2, 3, 4, 5, 6, 7], \"dtype\": \"f32\", \"unpermute\": {\"scheme\": \"v-heads-tiled\", $bad}}")" > m.json
        run -1 --separate-stderr ninfer-pack -q -o m.ninfer m.json
        expect_only_codes range
        [[ "$stderr" == *"do not fit"* ]]
    done
    [ ! -e m.ninfer ]
    # log-neg of a positive value is NaN: refused like any NaN source
    manifest "$(tensor t '[2]' fp32 '{"values": [-1, 2], "dtype": "f32", "map": "log-neg"}')" > m.json
    run -1 --separate-stderr ninfer-pack -q -o m.ninfer m.json
    expect_only_codes range
}

@test "GGUF hybrids (qwen3next, qwen35 with Hv != Hk, qwen35moe; MTP) equal the Hugging Face import" {
    local a inexact=0
    for a in "qwen3next bf16" "qwen3_5 bf16" "qwen3_5moe f32"; do
        set -- $a
        nf-mkarch --arch "$1" --dtype "$2" --mtp "ck-$1"
        nf-mkgguf "ck-$1" "$1.gguf"
        import_pack "$1.gguf" "g-$1"
        import_pack "ck-$1" "h-$1"
        run -0 same_params_alog "g-$1.ninfer" "h-$1.ninfer"
        echo "$1: $output"
        [[ "$output" == *" 0 A_log"* ]] || inexact=$((inexact + 1))
        # the MTP block at blk.L: its own component, sharing the text's embedding
        ninfer-bind --component mtp "g-$1.ninfer" | grep -qF $'mtp/embedding\t'
    done
    # A_log = log(-(-exp(A_log))) is not always bit-exact, which the tolerance allows
    [ "$inexact" -ge 1 ]
    # what the import writes: maps for the w + 1 norms and ssm_a, the tiled value heads as
    # parts of attn_qkv (zero-copy), ssm_out's columns unpermuted
    grep -qF '"map": "log-neg"' g-qwen3_5.json
    [ "$(grep -c '"map": "minus-one"' g-qwen3_5.json)" -eq 18 ]  # 4 x 2 + 1 x 2 q/k + final + MTP (2 + 2 + 3)
    grep -qF '"axis": "columns"' g-qwen3_5.json
    run -1 grep -qF '"axis": "columns"' g-qwen3next.json               # qwen3next tiles nothing
    grep -qF '"mtp_num_hidden_layers":1' g-qwen3_5.json
    grep -qF '"full_attention_interval":4' g-qwen3_5.json
    grep -qF '"linear_value_head_dim":8' g-qwen3_5.json
}

@test "GGUF hybrids: legacy ssm_in, fused ffn_gate_up_exps, a wrapper config, --fuse" {
    nf-mkarch --arch qwen3next --dtype bf16 ck-n
    import_pack ck-n h-n
    nf-mkgguf --legacy-ssm-in ck-n legacy.gguf
    import_pack legacy.gguf legacy
    run -0 same_params_alog legacy.ninfer h-n.ninfer
    ninfer-bind legacy.ninfer | grep -qF $'text/layers/0/linear_attention/z\t32x64\t2048\tbf16/contiguous_le_v1\tblk.0.ssm_in.weight'
    # Qwen3.5-MoE as a wrapper with text_config and model.language_model. names
    nf-mkarch --arch qwen3_5moe --language-model --dtype bf16 ck-m
    import_pack ck-m h-m
    grep -qF '"architectures":["Qwen3_5MoeForCausalLM"]' h-m.json
    nf-mkgguf --fuse-gate-up-exps ck-m fused.gguf
    import_pack fused.gguf fused
    run -0 same_params_alog fused.ninfer h-m.ninfer
    ninfer-bind fused.ninfer | grep -qF $'text/layers/0/mlp/experts/3/up\t32x64\t2048\tbf16/contiguous_le_v1\tblk.0.ffn_gate_up_exps.weight\tview'
    # --fuse builds parents from the GGUF's rows (tiled heads included)
    import_pack fused.gguf fused-f --fuse
    run -0 same_params_alog fused-f.ninfer fused.ninfer
    grep -qF '"id": "text/layers/0/linear_attention/in_proj"' fused-f.json
    ninfer-run --device cpu fused-f.ninfer > /dev/null
}

@test "the flat Qwen3.5-MoE wrapper config normalizes as the real one does" {
    nf-mkarch --arch qwen3_5moe --dtype bf16 ck
    grep -qF '"Qwen3_5MoeForConditionalGeneration"' ck/config.json
    run -1 grep -qF decoder_sparse_step ck/config.json
    run -0 --separate-stderr ninfer-import -o m.json ck
    grep -qF '"architectures":["Qwen3_5MoeForCausalLM"]' m.json
    grep -qF '"decoder_sparse_step":1' m.json
    grep -qF '"model_type":"qwen3_5_moe_text"' m.json
}

# digests ART — "ID SHA256" per object of ART's metadata.integrity.
digests() {
    ninfer-cat --catalog "$1" | grep -o '"integrity":{"sha256":{[^}]*}' |
        sed 's/.*"sha256":{//; s/}$//' | tr ',' '\n' | sed 's/^"\(.*\)":"\([0-9a-f]*\)"$/\1 \2/'
}

# tensor_digests GGUF — "NAME SHA256" of every tensor's data bytes.
tensor_digests() {
    local name type off bytes
    while IFS=$'\t' read -r name type off bytes; do
        echo "$name $(dd if="$1" bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$bytes" status=none |
            sha256sum | cut -c1-64)"
    done < <(nf-srcdump --list "$1")
}

# same_bytes ART GGUF EXCEPT... — every object of ART named after a GGUF
# tensor holds that tensor's bytes (SHA-256), but the EXCEPT ones, whose
# digests differ; prints the counts.
same_bytes() {
    local art=$1 g=$2 id want got n=0 other=0
    shift 2
    declare -A tg
    while read -r id want; do tg[$id]=$want; done < <(tensor_digests "$g")
    while read -r id got; do
        [ -n "${tg[$id]:-}" ] || continue
        if printf '%s\n' "$@" | grep -qxF "$id"; then
            [ "$got" != "${tg[$id]}" ] || { echo "$id: expected other bytes" >&2; return 1; }
            other=$((other + 1))
        else
            [ "$got" = "${tg[$id]}" ] || { echo "$id: not the tensor's bytes" >&2; return 1; }
            n=$((n + 1))
        fi
    done < <(digests "$art")
    echo "$n objects hold their tensor's bytes, $other do not"
}

@test "quantized hybrids (ggml's Q8_0/Q4_0 of grid values): blocks as gguf_*, equal to Hugging Face; input_columns gathered and folded" {
    local a
    for a in "qwen3_5 q8_0 bf16" "qwen3_5moe q4_0 f32" "qwen3next q8_0 bf16"; do
        set -- $a
        nf-mkarch --arch "$1" --grid "$2" --dtype "$3" --mtp "ck-$1"
        import_pack "ck-$1" "h-$1"
        nf-mkgguf --type "$2" "ck-$1" "$1.gguf"
        import_pack "$1.gguf" "g-$1"
        run -0 ninfer-verify --deep "g-$1.ninfer"
        grep -qF "\"format\": \"gguf_$2\"" "g-$1.json"
        # every object but the mapped norms and ssm_a holds its tensor's bytes
        run -0 same_bytes "g-$1.ninfer" "$1.gguf" $(tr -d ' \n' < "g-$1.json" |
            grep -o '"transformed":\[[^]]*\]' | grep -o '"[a-z_0-9.]*"' | tr -d '"' | grep -v transformed)
        echo "$1: $output"
        # ninfer-run: the ssm_out uses gather their input by input_columns (Qwen3.5, Hv != Hk)
        run -0 ninfer-run --device cpu --iters 1 --json "g-$1.ninfer"
        [[ "$output" != *'"status":"failed"'* ]]
        # moved to our formats, ssm_out's input_columns is folded into a column unpermute:
        # then every parameter equals the Hugging Face one (the grid makes the blocks exact)
        run -0 --separate-stderr ninfer-quant -i "g-$1.json" -o "f-$1.json" 'text/*linear_attention/output=fp32'
        run -0 --separate-stderr ninfer-pack -q -o "f-$1.ninfer" "f-$1.json"
        run -0 --separate-stderr ninfer-bind --check "f-$1.ninfer"
        run -0 same_params_alog "f-$1.ninfer" "h-$1.ninfer"
    done
    # qwen35 (Hk 2, Hv 4, Dv 8): one shared int32 [32] object, on each linear layer's ssm_out use
    [ "$(grep -c '"object": "input_columns.v_heads_tiled.2x4x8"' g-qwen3_5.json)" -eq 3 ]
    run -0 ninfer-run --device cpu --iters 1 --json g-qwen3_5.ninfer
    [ "$(grep -o '"input_columns":true' <<< "$output" | wc -l)" -eq 3 ]
    grep -qF '"axis":"columns"' f-qwen3_5.json
    run -1 grep -qF '"input_columns": {' f-qwen3_5.json
    run -1 grep -qF input_columns.v_heads g-qwen3next.json              # nothing tiled
    # the banks: one gguf_q4_0 object [E*Im, H] per layer, experts bound to their rows
    ninfer-bind g-qwen3_5moe.ninfer |
        grep -qF $'text/layers/1/mlp/experts/3/down\t64x32\t2048\tgguf_q4_0/gguf_rows_v1\tblk.1.ffn_down_exps.weight\tview'
    # provenance: the file type, the quantization version
    grep -qF '"general.file_type": 2' g-qwen3_5moe.json
    grep -qF '"general.quantization_version": 2' g-qwen3_5moe.json
}

@test "a quantized ssm_out with F32 elsewhere; F32 ssm_out is unpermuted instead; bad input_columns are refused" {
    nf-mkarch --arch qwen3_5 --grid q8_0 --dtype f32 ck
    import_pack ck h
    nf-mkgguf --type q8_0 --only ssm_out ck only.gguf
    import_pack only.gguf g
    [ "$(grep -c '"format": "gguf_q8_0"' g.json)" -eq 3 ]
    run -0 ninfer-run --device cpu --iters 1 g.ninfer
    nf-mkgguf ck f32.gguf
    import_pack f32.gguf gf
    run -1 grep -qF input_columns gf.json
    run -0 same_params_alog gf.ninfer h.ninfer
    # --fuse of block-quantized rows: parents of gguf_q8_0 rows (tiled heads included)
    nf-mkgguf --type q8_0 ck q.gguf
    import_pack q.gguf gq
    import_pack q.gguf gq-fused --fuse
    run -0 same_params_alog gq-fused.ninfer gq.ninfer
    ninfer-bind gq-fused.ninfer | grep -qF $'text/layers/0/linear_attention/value\t32x64\t2048\tgguf_q8_0/gguf_rows_v1\ttext/layers/0/linear_attention/in_proj'
    # an F16 ssm_out: fp32 with its columns unpermuted (gguf_f16 cannot be re-encoded)
    nf-mkarch --arch qwen3_5 --dtype f16 ck16
    import_pack ck16 h16
    nf-mkgguf ck16 f16.gguf
    import_pack f16.gguf g16
    ninfer-bind g16.ninfer | grep -qF $'text/layers/0/linear_attention/output\t64x32\t2048\tfp32/contiguous_le_v1'
    ninfer-bind g16.ninfer | grep -qF $'text/layers/0/linear_attention/query\t32x64\t2048\tgguf_f16/gguf_rows_v1'
    cmp <(ninfer-bind --extract text/layers/0/linear_attention/output g16.ninfer) \
        <(ninfer-bind --extract text/layers/0/linear_attention/output h16.ninfer)
    cmp <(ninfer-bind --extract text/layers/0/linear_attention/value g16.ninfer) \
        <(ninfer-bind --extract text/layers/0/linear_attention/value h16.ninfer)
    # the binder: input_columns must be a permutation of 0..K-1 on gguf_* parameters
    sed '/"id": "input_columns/,/"dtype"/ s/^\( *\)1,$/\10,/' g.json > dup.json
    run -1 cmp -s g.json dup.json
    run -0 ninfer-pack -q -o dup.ninfer dup.json
    run -1 --separate-stderr ninfer-bind --check dup.ninfer
    expect_only_codes auxiliary
    [[ "$stderr" == *'input_columns[1] is 0: not a permutation of 0..31'* ]]
}

REALDATA="${NF_REALDATA:-$REPO/../shared/realdata}"

need() {
    [ -e "$REALDATA/$1" ] || skip "real data absent: $REALDATA/$1 (see the project's shared/realdata)"
}

# row_copies MANIFEST — the objects provenance lists as row copies.
row_copies() {
    tr -d ' \n' < "$1" | grep -o '"row_copies":\[[^]]*\]' | grep -o '"[a-z_0-9.]*"' | tr -d '"' |
        grep -v row_copies
}

@test "realdata: SmolLM2-135M Q4_1 (llama.cpp's) imports, packs, verifies, binds and runs every projection" {
    need smollm2-135m-instruct-gguf/SmolLM2-135M-Instruct.Q4_1.gguf
    local g="$REALDATA/smollm2-135m-instruct-gguf/SmolLM2-135M-Instruct.Q4_1.gguf"
    import_pack "$g" sm
    [ "$output" = "sm.ninfer: OK (273 parameters, 212 uses)" ]
    run -0 ninfer-bind sm.ninfer
    [ "$(grep -c $'\tgguf_q4_1/gguf_rows_v1\t' <<< "$output")" -eq 210 ]
    [[ "$output" == *$'text/embedding\t49152x576\t28311552\tgguf_q8_0/gguf_rows_v1\ttoken_embd.weight\tview'* ]]
    [[ "$output" == *$'text/head\t49152x576\t28311552\tgguf_q8_0/gguf_rows_v1\ttoken_embd.weight\tview'* ]]
    # q/k rows back in Hugging Face order: a row copy of whole Q4_1 rows, listed in provenance
    [ "$(row_copies sm.json | wc -l)" -eq 60 ]
    run -0 same_bytes sm.ninfer "$g" $(row_copies sm.json)
    [ "$output" = "212 objects hold their tensor's bytes, 60 do not" ]
    grep -qF '"general.file_type": 3' sm.json
    grep -qF '"general.quantization_version": 2' sm.json
    # every projection runs on the CPU against the reference (211 and the embedding's lookup)
    run -0 ninfer-run --device cpu --iters 1 --json sm.ninfer
    [ "$(grep -o '"status":"ok"' <<< "$output" | wc -l)" -eq 211 ]
    [ "$(grep -o '"status":"lookup"' <<< "$output" | wc -l)" -eq 1 ]
    run -0 ninfer-cat --resource chat_template.jinja sm.ninfer
    [[ "$output" == "{% for message in messages %}"* ]]
}

@test "realdata: the stories260K GGUFs import; pooled SNR per kind and per file equals the README's" {
    need stories260K-gguf/stories260K-Q8_0.gguf
    need stories260K/hf-f32/model.safetensors
    local t k n kinds="embedding attention/query attention/key attention/value attention/output mlp/gate mlp/up"
    import_pack "$REALDATA/stories260K/hf-f32" hf
    for n in $(ninfer-bind hf.ninfer | cut -f1); do
        ninfer-bind --extract "$n" hf.ninfer > "ref-${n//\//_}.bin"
    done
    for t in Q8_0 Q4_0 Q5_0 Q4_1 IQ4_NL; do
        local g="$REALDATA/stories260K-gguf/stories260K-$t.gguf" got="$t" all=()
        import_pack "$g" "s-$t"
        [ "$(grep -c "\"format\": \"gguf_${t,,}\"" "s-$t.json")" -eq 31 ]
        # 10 q/k rows moved whole; every other object holds its tensor's bytes
        [ "$(row_copies "s-$t.json" | wc -l)" -eq 10 ]
        run -0 same_bytes "s-$t.ninfer" "$g" $(row_copies "s-$t.json")
        [ "$output" = "37 objects hold their tensor's bytes, 10 do not" ]
        if [ "$t" = Q4_0 ]; then # fused: Q/K/V rows (q/k moved whole) and gate/up in gguf_q4_0 parents
            import_pack "$g" q4-fused --fuse
            run -0 same_params_alog q4-fused.ninfer "s-$t.ninfer"
            grep -qF '"id": "text/layers/0/attention/qkv"' q4-fused.json
        fi
        for k in $kinds; do
            local pairs=()
            for n in $(ninfer-bind hf.ninfer | cut -f1 | grep -E "^text/(layers/[0-9]+/)?$k\$"); do
                ninfer-bind --extract "$n" "s-$t.ninfer" > "deq-${n//\//_}.bin"
                pairs+=("ref-${n//\//_}.bin" "deq-${n//\//_}.bin")
            done
            all+=("${pairs[@]}")
            got="$got $(nf-f32cmp --snr "${pairs[@]}")"
        done
        got="$got $(nf-f32cmp --snr "${all[@]}")"
        # the README's table: file, token_embd, attn_q/k/v/output, ffn_gate/up, all quantized
        local want
        want=$(sed -n "s/^| $t | \(.*\) |\$/$t \1/p" "$REALDATA/stories260K-gguf/README.md" | head -n1 | sed 's/ | / /g')
        echo "got:  $got"
        echo "want: $want"
        [ "$(wc -w <<< "$want")" -eq 9 ]
        paste <(tr ' ' '\n' <<< "$got" | tail -n +2) <(tr ' ' '\n' <<< "$want" | tail -n +2) |
            awk '{ d = $1 - $2; if (d < -0.05 || d > 0.05) { print "off by " d; bad = 1 } } END { exit bad }'
    done
}
