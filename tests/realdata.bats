#!/usr/bin/env bats
# The main job on real checkpoints from ../shared/realdata (see its
# PROVENANCE.md): manifest → pack → split so that tensors span files →
# verify → every tensor read back byte-identical to the safetensors file.
# Skips with a message where the data is absent.

load helper

REALDATA="${NF_REALDATA:-$REPO/../shared/realdata}"

need() {
    [ -e "$REALDATA/$1" ] || skip "real data absent: $REALDATA/$1 (see the project's shared/realdata)"
}

# objects_crossing ARTIFACT — how many objects straddle a file boundary.
objects_crossing() {
    local bounds
    bounds=$(ninfer-cat --files "$1" | sed -n 's/.*"logical_offset": \([0-9]*\).*/\1/p' | tr '\n' ' ')
    ninfer-cat --catalog "$1" | grep -o '"offset":[0-9]*,"bytes":[0-9]*' |
        sed 's/"offset":\([0-9]*\),"bytes":\([0-9]*\)/\1 \2/' |
        awk -v b="$bounds" 'BEGIN { n = split(b, B, " ") }
            { for (i = 1; i <= n; i++) if (B[i] > $1 && B[i] < $1 + $2) { c++; break } }
            END { print c + 0 }'
}

pack_split_check() { # DIR LIMIT
    local dir="$REALDATA/$1"
    run -0 nf-st2manifest "$dir"
    printf '%s\n' "$output" > manifest.json
    run -0 ninfer-pack -q -o model.ninfer manifest.json
    run -0 ninfer-split -q --max-file-bytes "$2" -o parts/model.ninfer model.ninfer
    run -0 ninfer-verify parts/model.ninfer
    [[ "$output" == *"OK ("*" digests checked)"* ]]
    local nfiles crossing
    nfiles=$(ninfer-cat --files parts/model.ninfer | grep -c '"index"')
    crossing=$(objects_crossing parts/model.ninfer)
    echo "files: $nfiles, objects crossing a file boundary: $crossing"
    [ "$nfiles" -ge 3 ]
    [ "$crossing" -ge 1 ]
    # every tensor, read from the parts, equals its bytes in the checkpoint
    local n=0 id off len
    while IFS=$'\t' read -r id off len; do
        ninfer-cat --object "$id" parts/model.ninfer > obj.bin
        dd if="$dir/model.safetensors" bs=64K iflag=skip_bytes,count_bytes skip="$off" \
            count="$len" status=none > want.bin
        cmp obj.bin want.bin
        n=$((n + 1))
    done < <(nf-st2manifest --list "$dir")
    [ "$n" -gt 0 ]
    ninfer-cat --resource config.json parts/model.ninfer | cmp - "$dir/config.json"
}

@test "realdata: stories260K hf-bf16 packs, splits across files and reads back byte-identical" {
    need stories260K/hf-bf16/model.safetensors
    pack_split_check stories260K/hf-bf16 64K
}

@test "realdata: stories260K hf-f32 packs, splits across files and reads back byte-identical" {
    need stories260K/hf-f32/model.safetensors
    pack_split_check stories260K/hf-f32 128K
}

@test "realdata: the config's numbers keep their text through pack and split" {
    need stories260K/hf-f32/config.json
    run -0 nf-st2manifest "$REALDATA/stories260K/hf-f32"
    printf '%s\n' "$output" > manifest.json
    run -0 ninfer-pack -q -o m.ninfer manifest.json
    run -0 ninfer-split -q --max-file-bytes 256K -o p/m.ninfer m.ninfer
    run -0 ninfer-cat --catalog p/m.ninfer
    # 1e-05 and 10000.0 as written in config.json, not re-printed floats
    [[ "$output" == *'"rms_norm_eps": 1e-05'* ]]
    [[ "$output" == *'"rope_theta": 10000.0'* ]]
}

@test "realdata: Qwen2.5 frontend files travel as resources, byte for byte" {
    need qwen2.5-14b-frontend/vocab.json
    local d="$REALDATA/qwen2.5-14b-frontend" f i=0
    {
        printf '{"components":{"text":{"config":'
        cat "$d/config.json"
        printf ',"resources":{'
        for f in vocab.json merges.txt tokenizer_config.json generation_config.json; do
            [ $i -gt 0 ] && printf ','
            printf '"%s":"r%d"' "$f" $i
            i=$((i + 1))
        done
        printf '}}},"objects":['
        i=0
        for f in vocab.json merges.txt tokenizer_config.json generation_config.json; do
            [ $i -gt 0 ] && printf ','
            printf '{"id":"r%d","kind":"resource","encoding":"raw_bytes_v1","source":{"file":"%s"}}' $i "$d/$f"
            i=$((i + 1))
        done
        printf '],"bindings":{},"uses":[]}\n'
    } > manifest.json
    run -0 ninfer-pack -q --max-file-bytes 1M -o q/frontend.ninfer manifest.json
    run -0 ninfer-verify q/frontend.ninfer
    for f in vocab.json merges.txt tokenizer_config.json generation_config.json; do
        ninfer-cat --resource "$f" q/frontend.ninfer | cmp - "$d/$f"
    done
}
