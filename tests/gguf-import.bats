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
    ! grep -qF '"axis": "columns"' g-qwen3next.json               # qwen3next tiles nothing
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
    ! grep -qF decoder_sparse_step ck/config.json
    run -0 --separate-stderr ninfer-import -o m.json ck
    grep -qF '"architectures":["Qwen3_5MoeForCausalLM"]' m.json
    grep -qF '"decoder_sparse_step":1' m.json
    grep -qF '"model_type":"qwen3_5_moe_text"' m.json
}
