#!/usr/bin/env bats
# The gguf_* formats (DESIGN 7.5) and layout gguf_rows_v1 (DESIGN 8) end to
# end: GGUF block bytes packed as objects, --deep validity, decoding through
# the packer (transcoding), the binder (--extract) and the runner, against
# values computed at development time with gguf-py 0.19.0's
# gguf.quants.dequantize (tests/unit/gen-gguf-golden.py shows how); reserved
# later-wave names and encoding into gguf formats are `unsupported`.

load helper

REALDATA="${NF_REALDATA:-$REPO/../shared/realdata}"
G="$REALDATA/stories260K-gguf"

need() {
    [ -e "$REALDATA/$1" ] || skip "real data absent: $REALDATA/$1 (see the project's shared/realdata)"
}

# raw_object FILE SHAPE FORMAT [OFFSET] → m.json/m.ninfer holding FILE's bytes
# from OFFSET as object "w" in gguf_rows_v1
raw_object() {
    printf '{"components":{"text":{"config":{}}},"objects":[{"id":"w","kind":"tensor","shape":%s,"format":"%s","layout":"gguf_rows_v1","source":{"file":"%s","offset":%s}}],"bindings":{},"uses":[]}\n' \
        "$2" "$3" "$1" "${4:-0}" > m.json
    run -0 ninfer-pack -q --force -o m.ninfer m.json
    run -0 ninfer-verify m.ninfer
}

poke() { # FILE OFFSET HEXBYTES...
    local f=$1 off=$2; shift 2
    printf "$(printf '\\x%s' "$@")" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
}

# from_source SOURCE_JSON FORMAT LAYOUT SHAPE → t.ninfer with object "w"
from_source() {
    printf '{"components":{"text":{"config":{}}},"objects":[{"id":"w","kind":"tensor","shape":%s,"format":"%s","layout":"%s","source":%s}],"bindings":{},"uses":[]}\n' \
        "$4" "$2" "$3" "$1" > t.json
}

# gguf-py's dequantize of token_embd.weight [512,64] (f32, little-endian), per file
emb_digest() {
    case $1 in
    Q8_0) echo 8d61bb3b96b19318a96b85c56b0a678b73a922c0125addd41716a0441efd70b4 ;;
    Q4_0) echo e4c46ee9910e3be0ee0238f8903284dd75db7d5054fb539db43378864ff98315 ;;
    Q5_0) echo cf24042e4020543ca7b329a09a77d56f4e8d2828908e4411d0eee4a179712ecd ;;
    Q4_1) echo 1d9811e89504217174293ef0f60cc57c84a66ace9ea4098856fbeb9a84022778 ;;
    IQ4_NL) echo e7b74bfd37d502859fc64d99efbdc01632c67e8c17597f6f1ddc76917f2b3fdc ;;
    esac
}

@test "gguf: a quantized GGUF tensor transcoded to fp32 equals gguf-py's dequantize" {
    need stories260K-gguf/stories260K-Q8_0.gguf
    for t in Q8_0 Q4_0 Q5_0 Q4_1 IQ4_NL; do
        from_source "{\"gguf\":\"$G/stories260K-$t.gguf\",\"tensor\":\"token_embd.weight\"}" \
            fp32 contiguous_le_v1 '[512,64]'
        run -0 ninfer-pack -q --force -o t.ninfer t.json
        [ "$(ninfer-cat --object w t.ninfer | sha256sum | cut -c1-64)" = "$(emb_digest $t)" ] ||
            { echo "$t differs from gguf-py" >&2; return 1; }
    done
}

@test "gguf: GGUF block bytes packed as gguf_q4_0 keep their SHA-256 and decode as gguf-py" {
    need stories260K-gguf/stories260K-Q4_0.gguf
    # token_embd is the first tensor: data at 3488, 512 rows of 2 blocks of 18 bytes
    raw_object "$G/stories260K-Q4_0.gguf" '[512,64]' gguf_q4_0 3488
    run -0 ninfer-verify --deep m.ninfer
    want=$(dd if="$G/stories260K-Q4_0.gguf" bs=1 skip=3488 count=18432 status=none | sha256sum | cut -c1-64)
    [ "$(ninfer-cat --object w m.ninfer | sha256sum | cut -c1-64)" = "$want" ]
    # transcoding from the gguf_q4_0 object: decode (fp32) and re-encode (q8)
    from_source '{"artifact":"m.ninfer","object":"w"}' fp32 contiguous_le_v1 '[512,64]'
    run -0 ninfer-pack -q --force -o t.ninfer t.json
    [ "$(ninfer-cat --object w t.ninfer | sha256sum | cut -c1-64)" = "$(emb_digest Q4_0)" ]
    from_source '{"artifact":"m.ninfer","object":"w"}' q8_g32_fp16 row_split_k128_v1 '[512,64]'
    run -0 ninfer-pack -q --force -o q.ninfer t.json
    run -0 ninfer-verify --deep q.ninfer
}

@test "gguf: a gguf_q8_0 projection binds, extracts as gguf-py and runs on the CPU" {
    need stories260K-gguf/stories260K-Q8_0.gguf
    need stories260K-gguf/stories260K-F32.gguf
    run -0 ninfer-import "$G/stories260K-F32.gguf"
    printf '%s\n' "$output" > f.json
    # blk.0.attn_v.weight [32,64] from the Q8_0 file's bytes (offset 45088)
    awk -v id=blk.0.attn_v.weight -v file="$G/stories260K-Q8_0.gguf" -v off=45088 '
        $0 ~ "\"id\": \"" id "\"" { hit = 1 }
        hit && /"format":/ { sub(/"format": "[^"]*"/, "\"format\": \"gguf_q8_0\"") }
        hit && /"layout":/ { sub(/"layout": "[^"]*"/, "\"layout\": \"gguf_rows_v1\"") }
        hit && /"gguf":/ { sub(/"gguf": "[^"]*"/, "\"file\": \"" file "\"") }
        hit && /"tensor":/ { sub(/"tensor": "[^"]*"/, "\"offset\": " off); hit = 0 }
        { print }' f.json > q.json
    grep -q '"format": "gguf_q8_0"' q.json
    run -0 ninfer-pack -q -o a.ninfer q.json
    run -0 ninfer-verify --deep a.ninfer
    run -0 ninfer-bind --check a.ninfer
    # gguf-py: dequantize(blk.0.attn_v.weight) of the Q8_0 file
    [ "$(ninfer-bind --extract text/layers/0/attention/value a.ninfer | sha256sum | cut -c1-64)" = \
      384a77d4dc05432891c31b2f7eb637ffaec1139ff8658ef42a99122620257265 ]
    run -0 ninfer-bind --plan a.ninfer
    # whole rows of one plane: a view, 32 rows x 2 blocks x 34 bytes
    [[ "$output" == *'"object": "blk.0.attn_v.weight",'*'"layout": "gguf_rows_v1",'*'"view": true,'*'"plane": "data",'*'"offset": 0,'*'"bytes": 2176'* ]]
    run -0 ninfer-run --device cpu a.ninfer
    [[ "$output" == *"text/layers/0/attention/value"*"gguf_q8_0"*"ok"* ]]
}

@test "gguf: --deep reports a non-finite d, dmin or m with the row and columns" {
    head -c 576 /dev/zero > w.bin              # gguf_q4_k [2,512]: 2 rows of 2 blocks of 144
    raw_object w.bin '[2,512]' gguf_q4_k
    run -0 ninfer-verify --deep m.ninfer       # all zero: finite scales
    poke w.bin $((288 + 144 + 2)) 00 7e        # row 1, block 1: dmin NaN
    raw_object w.bin '[2,512]' gguf_q4_k
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"/objects/0: codes: object \"w\": row 1, columns 256..511: dmin 0x7e00 is not finite; 1 scale finding in all"* ]]
    head -c 40 /dev/zero > w.bin               # gguf_q4_1 [1,64]
    poke w.bin 22 00 7c                        # block 1: m = +inf
    raw_object w.bin '[1,64]' gguf_q4_1
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"row 0, columns 32..63: m 0x7c00 is not finite"* ]]
    head -c 420 /dev/zero > w.bin              # gguf_q6_k [2,256]: d at byte 208
    poke w.bin $((210 + 208)) 00 fc
    raw_object w.bin '[2,256]' gguf_q6_k
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"row 1, columns 0..255: d 0xfc00 is not finite"* ]]
}

@test "gguf: --deep reports MXFP4 E = 0xFF; E = 0 and 254 are valid" {
    head -c 68 /dev/zero > w.bin               # gguf_mxfp4 [2,64]: 4 blocks of 17
    poke w.bin 17 fe
    raw_object w.bin '[2,64]' gguf_mxfp4
    run -0 ninfer-verify --deep m.ninfer
    poke w.bin 51 ff                           # row 1, block 1
    raw_object w.bin '[2,64]' gguf_mxfp4
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"row 1, columns 32..63: mxfp4 scale E = 0xff (e8m0 nan)"* ]]
    # the value decodes as ggml's: E 255 scales by 2^127 (here code 0: +0)
    [ "$(ninfer-cat --object w m.ninfer | wc -c)" = 68 ]
}

@test "gguf: gguf_rows_v1 needs rank 2 and whole blocks; the size is N*(K/QK)*B" {
    head -c 4096 /dev/zero > w.bin
    printf '{"components":{"text":{"config":{}}},"objects":[{"id":"w","kind":"tensor","shape":[1,5121],"format":"gguf_q4_k","layout":"gguf_rows_v1","source":{"file":"w.bin"}}],"bindings":{},"uses":[]}\n' > m.json
    run -1 --separate-stderr ninfer-pack -q -o m.ninfer m.json
    expect_code encoding
    [[ "$stderr" == *"K % 256 == 0"* ]]
    [ ! -e m.ninfer ]
    sed 's/\[1,5121\]/[2,512]/; s/"source"/"bytes":577,"source"/' m.json > b.json
    run -1 --separate-stderr ninfer-pack -q -o m.ninfer b.json
    expect_code size
    [[ "$stderr" == *"encodes to 576"* ]]
    sed 's/\[1,5121\]/[2,2,256]/' m.json > r.json
    run -1 --separate-stderr ninfer-pack -q -o m.ninfer r.json
    expect_code encoding
    sed 's/"gguf_rows_v1"/"row_split_k128_v1"/; s/\[1,5121\]/[2,512]/' m.json > l.json
    run -1 --separate-stderr ninfer-pack -q -o m.ninfer l.json
    expect_code encoding
}

@test "gguf: reserved later-wave formats are unsupported, never read" {
    head -c 132 /dev/zero > w.bin
    printf '{"components":{"text":{"config":{}}},"objects":[{"id":"w","kind":"tensor","shape":[2,256],"format":"gguf_iq2_xxs","layout":"gguf_rows_v1","source":{"file":"w.bin"}}],"bindings":{},"uses":[]}\n' > m.json
    run -4 --separate-stderr ninfer-pack -q -o m.ninfer m.json
    expect_code unsupported
    [[ "$stderr" == *"gguf_iq2_xxs"*"reserved for a later wave"* ]]
    [ ! -e m.ninfer ]
    # an artifact that carries one (explicit bytes) verifies structurally but is unsupported
    sed 's/"source"/"bytes":132,"source"/' m.json > b.json
    run -4 --separate-stderr ninfer-pack -q -o m.ninfer b.json
    expect_code unsupported
}

@test "gguf: the toolkit does not encode into gguf formats" {
    nf_bytes 4096 w.i8
    printf '{"components":{"text":{"config":{}}},"objects":[{"id":"w","kind":"tensor","shape":[2,256],"format":"gguf_q4_k","layout":"gguf_rows_v1","source":{"file":"w.i8","dtype":"i8"}}],"bindings":{},"uses":[]}\n' > m.json
    run -4 --separate-stderr ninfer-pack -q -o m.ninfer m.json
    expect_code unsupported
    [[ "$stderr" == *"does not encode into them"* ]]
    [ ! -e m.ninfer ]
    nf-mkckpt ckpt
    run -0 ninfer-import ckpt
    printf '%s\n' "$output" > c.json
    run -4 --separate-stderr ninfer-quant 'text/*mlp*=gguf_q4_k' -i c.json -o q.json
    expect_code unsupported
    run -4 --separate-stderr ninfer-quant 'text/*mlp*=gguf_nvfp4' -i c.json -o q.json
    [[ "$stderr" == *"reserved"* ]]
}

@test "gguf: ninfer-bench times gemv and decode of gguf formats; encode is unsupported" {
    for f in gguf_q4_k gguf_q6_k gguf_q8_0 gguf_q5_0 gguf_f16; do
        run -0 --separate-stderr ninfer-bench --format $f --shape 64x512 --iters 2 --warmup 0 --csv
        # 64 rows: q4_k 2 x 144, q6_k 2 x 210, q8_0 16 x 34, q5_0 16 x 22, f16 512 x 2 bytes
        case $f in
        gguf_q4_k) b=18432 ;; gguf_q6_k) b=26880 ;; gguf_q8_0) b=34816 ;;
        gguf_q5_0) b=22528 ;; gguf_f16) b=65536 ;;
        esac
        [[ "${lines[1]}" == "cpu,gemv,a16,$f,gguf_rows_v1,,64,512,"*",$b,"*",ok" ]]
    done
    run -0 --separate-stderr ninfer-bench --format gguf_iq4_xs --shape 64x512 --op decode --iters 2 --csv
    [[ "${lines[1]}" == "cpu,decode,,gguf_iq4_xs,gguf_rows_v1,,64,512,"* ]]
    run -4 --separate-stderr ninfer-bench --format gguf_q4_k --shape 64x512 --op encode
    expect_code unsupported
    run -1 --separate-stderr ninfer-bench --format gguf_q4_k --shape 64x500
    [[ "$stderr" == *"K % 256 == 0"* ]]
}

@test "gguf: SmolLM2-135M's Q4_1 and Q8_0 tensors decode as gguf-py's dequantize" {
    need smollm2-135m-instruct-gguf/SmolLM2-135M-Instruct.Q4_1.gguf
    local S="$REALDATA/smollm2-135m-instruct-gguf/SmolLM2-135M-Instruct.Q4_1.gguf" t want
    while read -r t shape rows want; do
        if [ "$rows" = - ]; then
            from_source "{\"gguf\":\"$S\",\"tensor\":\"$t\"}" fp32 contiguous_le_v1 "$shape"
        else
            from_source "{\"gguf\":\"$S\",\"tensor\":\"$t\",\"rows\":$rows}" fp32 contiguous_le_v1 "$shape"
        fi
        run -0 ninfer-pack -q --force -o t.ninfer t.json
        [ "$(ninfer-cat --object w t.ninfer | sha256sum | cut -c1-64)" = "$want" ] ||
            { echo "$t differs from gguf-py" >&2; return 1; }
    done <<'LIST'
blk.0.attn_q.weight [576,576] - aa74111ad24c3624a20374d2026fd1f50bfe2520252e3c9aef4a666a28593cc8
blk.3.ffn_down.weight [576,1536] - 4776fb25ee5f67b77cdd0c03f37261069c5dcc3f41d312fe1788f3ca5f825db3
token_embd.weight [64,576] [0,64] fa3a0dda82189bc050dbd8c25a34d4135d7c7c983c276a134060970e58a82dd8
LIST
}
