#!/usr/bin/env bats
# Every v3 format end to end: ninfer-quant → ninfer-pack (transcoding) →
# ninfer-verify --deep, SNR floors on a real checkpoint, and hostile
# encodings caught by --deep with the object, row and code.

load helper

REALDATA="${NF_REALDATA:-$REPO/../shared/realdata}"

# pooled_snr REPORT [EXCLUDE_REGEX] — 10 log10(sum x^2 / sum err^2) over the
# report's objects (sse = rmse^2 * n, ssx = sse * 10^(snr/10)).
pooled_snr() {
    awk -F'\t' -v ex="${2:-^$}" 'NR > 1 && $1 !~ ex {
            sse = $4 * $4 * $3; a += sse; b += sse * 10 ^ ($6 / 10) }
        END { printf "%.2f\n", 10 * log(b / a) / log(10) }' "$1"
}

# at_least VALUE FLOOR
at_least() {
    awk -v v="$1" -v f="$2" 'BEGIN { exit !(v >= f) }' || {
        echo "measured $1 dB, floor $2 dB" >&2
        return 1
    }
}

quantize_real() { # RULE → report.tsv, q.ninfer verified --deep
    [ -e "$REALDATA/stories260K/hf-f32/model.safetensors" ] ||
        skip "real data absent: $REALDATA/stories260K/hf-f32"
    nf-st2manifest "$REALDATA/stories260K/hf-f32" > f32.json
    run -0 ninfer-quant --force "$1" -i f32.json -o q.json
    run -0 ninfer-pack -q --no-sync --force --report -o q.ninfer q.json
    printf '%s\n' "$output" > report.tsv
    run -0 ninfer-verify --deep q.ninfer
}

# Measured on stories260K (pooled over embedding, q, k, v, o, gate, up — the
# tensors ggml quantized; its README: Q8_0 44.64, Q5_0 26.57, Q4_0 20.62 dB).
# Floors sit a little below what we measured (in the closing note).
@test "snr: q8_g32_fp16 beats ggml's Q8_0 (44.64 dB) on stories260K" {
    quantize_real '*=q8_g32_fp16'
    s=$(pooled_snr report.tsv down_proj); echo "q8: $s dB"
    at_least "$s" 44.8
}

@test "snr: q6_g64_fp16 on stories260K" {
    quantize_real '*=q6_g64_fp16'
    s=$(pooled_snr report.tsv down_proj); echo "q6: $s dB"
    at_least "$s" 31.7
}

@test "snr: q5_g64_fp16 within 1 dB of ggml's Q5_0 (group 32) on stories260K" {
    quantize_real '*=q5_g64_fp16'
    s=$(pooled_snr report.tsv down_proj); echo "q5: $s dB"
    at_least "$s" 25.6
}

@test "snr: q4_g64_fp16 within 1 dB of ggml's Q4_0 (group 32) on stories260K" {
    quantize_real '*=q4_g64_fp16'
    s=$(pooled_snr report.tsv down_proj); echo "q4: $s dB"
    at_least "$s" 19.6
}

@test "snr: q2_g64_fp16 and t2_g128_fp16 on stories260K" {
    quantize_real '*=q2_g64_fp16'
    s=$(pooled_snr report.tsv down_proj); echo "q2: $s dB"
    at_least "$s" 8.0
    quantize_real '*=t2_g128_fp16'
    s=$(pooled_snr report.tsv down_proj); echo "t2: $s dB"
    at_least "$s" 6.3
}

@test "snr: fp8_e4m3fn_row_bf16 and bf16 on stories260K" {
    quantize_real '*=fp8_e4m3fn_row_bf16'
    s=$(pooled_snr report.tsv down_proj); echo "fp8: $s dB"
    at_least "$s" 32.2
    quantize_real '*=bf16'
    s=$(pooled_snr report.tsv down_proj); echo "bf16: $s dB"
    at_least "$s" 54.9
}

@test "snr: nvfp4 on the stories260K embedding (the only tensor it fits)" {
    quantize_real '*embed_tokens*=nvfp4'
    s=$(pooled_snr report.tsv); echo "nvfp4 embedding: $s dB"
    at_least "$s" 19.2
    # every projection has N of 32, 64 or 172: refused with the parameter's name
    run -1 --separate-stderr ninfer-quant '*q_proj*=nvfp4' -i f32.json
    [[ "$stderr" == *'encoding: parameter "model.layers.0.self_attn.q_proj.weight"'*'N % 128'* ]]
}

@test "snr: nvfp4 on a synthetic 256x512 tensor, 4 divisors" {
    nf_bytes 131072 w.i8
    cat > m.json <<'JSON'
{"components":{"text":{"config":{}}},"objects":[{"id":"w","kind":"tensor","shape":[256,512],
 "format":"nvfp4","layout":"block_scale_k16_m128x4_v1","divisors":4,
 "source":{"file":"w.i8","dtype":"i8"}}],"bindings":{"text/w":{"object":"w"}},"uses":[]}
JSON
    run -0 ninfer-pack -q --report -o w.ninfer m.json
    printf '%s\n' "$output" > report.tsv
    s=$(pooled_snr report.tsv); echo "nvfp4 uniform int8 source: $s dB"
    at_least "$s" 16.5
    run -0 ninfer-verify --deep w.ninfer
    # encoded size: codes 65536 + scales 8192 + 4 divisors = 73744 (DESIGN 8)
    run -0 ninfer-cat --catalog w.ninfer
    [[ "$output" == *'"bytes":73744'* ]]
}

@test "transcoding: bf16 → fp32 → bf16 is lossless, f16 and i8 sources convert exactly" {
    [ -e "$REALDATA/stories260K/hf-bf16/model.safetensors" ] || skip "real data absent"
    nf-st2manifest "$REALDATA/stories260K/hf-bf16" > b.json
    run -0 ninfer-quant '*=fp32' -i b.json -o f.json
    run -0 ninfer-pack -q -o f.ninfer f.json
    run -0 ninfer-cat --manifest f.ninfer
    printf '%s\n' "$output" > back.json
    run -0 ninfer-quant '*=bf16' -i back.json -o b2.json
    run -0 ninfer-pack -q -o b2.ninfer b2.json
    ninfer-cat --object model.layers.2.mlp.up_proj.weight b2.ninfer | cmp - <(ninfer-pack -q -o - b.json | ninfer-cat --object model.layers.2.mlp.up_proj.weight -)
    # f16 1.0, -2.0, 0.5 and i8 -128 into fp32
    printf '\x00\x3c\x00\xc0\x00\x38' > h.f16
    printf '\x80' > c.i8
    cat > m.json <<'JSON'
{"components":{"text":{"config":{}}},"objects":[
 {"id":"h","kind":"tensor","shape":[3],"format":"fp32","layout":"contiguous_le_v1","source":{"file":"h.f16","dtype":"f16"}},
 {"id":"c","kind":"tensor","shape":[1],"format":"fp32","layout":"contiguous_le_v1","source":{"file":"c.i8","dtype":"i8"}}],
 "bindings":{},"uses":[]}
JSON
    run -0 ninfer-pack -q -o m.ninfer m.json
    [ "$(ninfer-cat --object h m.ninfer | od -An -tf4 | tr -s ' ')" = " 1 -2 0.5" ]
    [ "$(ninfer-cat --object c m.ninfer | od -An -tf4 | tr -s ' ')" = " -128" ]
}

@test "transcoding: NaN sources are refused unless --allow-nonfinite, and never into q formats" {
    printf '\x00\x00\xc0\x7f\x00\x00\x80\x3f' > nan.f32
    for f in fp32 q8; do
        if [ $f = fp32 ]; then fl='"format":"bf16","layout":"contiguous_le_v1","shape":[2]'
        else fl='"format":"q8_g32_fp16","layout":"row_split_k128_v1","shape":[1,2]'; fi
        printf '{"components":{"text":{"config":{}}},"objects":[{"id":"x","kind":"tensor",%s,"source":{"file":"nan.f32","dtype":"f32"}}],"bindings":{},"uses":[]}\n' "$fl" > $f.json
    done
    run -1 --separate-stderr ninfer-pack -q -o a.ninfer fp32.json
    [[ "$stderr" == *"range: object \"x\": the source holds NaN or Inf"* ]]
    [ ! -e a.ninfer ]
    run -0 ninfer-pack -q --allow-nonfinite -o a.ninfer fp32.json
    [ "$(ninfer-cat --object x a.ninfer | od -An -tx2 | tr -s ' ')" = " 7fc0 3f80" ]
    run -1 --separate-stderr ninfer-pack -q --allow-nonfinite -o b.ninfer q8.json
    [[ "$stderr" == *"cannot hold"* ]]
}

# scales_manifest FORMAT LAYOUT N K AWK_EXPR [DIVISORS] — m.json: one
# tensor w [N,K] from inline values, element (r,k) = AWK_EXPR.
scales_manifest() {
    local vals
    vals=$(awk -v n="$3" -v K="$4" 'BEGIN { for (i = 0; i < n * K; i++) {
        r = int(i / K); k = i % K; printf "%s%.9g", i ? "," : "", '"$5"' } }')
    printf '{"components":{"text":{"config":{}}},"objects":[{"id":"w","kind":"tensor","shape":[%d,%d],"format":"%s","layout":"%s","divisors":%d,"source":{"values":[%s]}}],"bindings":{},"uses":[]}\n' \
        "$3" "$4" "$1" "$2" "${6:-1}" "$vals" > m.json
}

# packs FORMAT SATURATED ZEROED SCALES — m.json packs (exit 0); --report's
# last columns are the counts (its line left in $row); stderr has the warning
# exactly when one is not 0, with or without --report
packs() {
    run -0 --separate-stderr ninfer-pack -q --force -o w.ninfer m.json
    if [ "$2$3" = 00 ]; then
        [ -z "$stderr" ]
    else
        [ "$stderr" = "ninfer-pack: m.json: warning: object \"w\" ($1): of $4 scales, $2 saturated (their values clamped) and $3 zeroed (their values decode to 0); snr ${stderr##*snr }" ]
    fi
    run -0 --separate-stderr ninfer-pack -q --force --report -o w.ninfer m.json
    [ "${lines[0]}" = "$(printf 'object\tformat\telements\trmse\tmax_abs_error\tsnr_db\tscales_saturated\tscales_zeroed')" ]
    [ "${#lines[@]}" -eq 2 ]
    [[ "${lines[1]}" == "w"$'\t'"$1"$'\t'* ]]
    [[ "${lines[1]}" == *$'\t'"$2"$'\t'"$3" ]]
    [ "$2$3" = 00 ] || [[ "$stderr" == *"warning: object \"w\" ($1): of $4 scales, $2 saturated"* ]]
    row=${lines[1]}
    run -0 ninfer-verify --deep w.ninfer
}

@test "scales beyond their storage type: counted in --report and warned about on stderr (DESIGN 7.4)" {
    # q8: |x| up to 1e10 needs a scale of ~7.9e7, beyond FP16's 65504: both
    # groups of each row saturate (every code clamped), SNR near 0
    scales_manifest q8_g32_fp16 row_split_k128_v1 2 64 '(k - 31.5) * 3e8'
    packs q8_g32_fp16 4 0 4
    snr=$(cut -f6 <<< "$row")
    awk -v s="$snr" 'BEGIN { exit !(s < 1) }'
    # q4: 1e-30 rounds every scale to 0: the values decode to 0
    scales_manifest q4_g64_fp16 row_split_k128_v1 1 128 '(k - 63.5) * 1e-30'
    packs q4_g64_fp16 0 2 2
    [[ "$row" == *$'\t'"0.000"$'\t'0$'\t'2 ]]
    # q2: a negative largest element rounds the scale to 0 too: stored +0.0 (DESIGN 7.4)
    scales_manifest q2_g64_fp16 row_split_k128_v1 1 64 '(k == 3 ? -5e-30 : 1e-31)'
    packs q2_g64_fp16 0 1 1
    # the scales plane ends the object: group 0's scale, then the padding group's
    [ "$(ninfer-cat --object w w.ninfer | tail -c 4 | od -An -tx1 | tr -d ' ')" = 00000000 ]
    # one 1e9 outlier in the first group of a row of ordinary weights
    scales_manifest q4_g64_fp16 row_split_k128_v1 1 128 '(k == 5 ? 1e9 : (k % 7 - 3) * 0.01)'
    packs q4_g64_fp16 1 0 2
    # nvfp4: a slice of amax 1e-37 needs a divisor 448*6/amax beyond FLT_MAX;
    # a block 1e-7 of the next slice's amax 1 gets block scale 0
    scales_manifest nvfp4 block_scale_k16_m128x4_v1 256 64 '(r < 128 ? 1e-37 : (r == 128 && k < 16 ? 1e-7 : 1)) * (k % 2 ? 1 : -1)' 2
    packs nvfp4 1 1 1026
    # ordinary weights: no warning, counts 0 (q8 and nvfp4)
    scales_manifest q8_g32_fp16 row_split_k128_v1 2 64 '((r * 64 + k) % 13 - 6) * 0.05'
    packs q8_g32_fp16 0 0 4
    scales_manifest nvfp4 block_scale_k16_m128x4_v1 128 64 '((r * 64 + k) % 13 - 6) * 0.05'
    packs nvfp4 0 0 513
}

@test "saturation at the boundaries: an nvfp4 block scale of 448.00003 is 448 (no warning), a q8 scale of 65520 is not FP16" {
    # every block's amax is the slice's 0.500001431: w = 2688 / amax and
    # b = amax / 6 * w come to 448.000031 in f32 (about one block in five of
    # ordinary weights does the same), which rounds to E4M3's 448; only
    # above 464, the midpoint to the next step, would a scale saturate
    scales_manifest nvfp4 block_scale_k16_m128x4_v1 128 64 '(k % 2 ? 0.500001431 : -0.500001431)'
    packs nvfp4 0 0 513
    # every block scale byte is 448 (0x7e), the codes +-6 (0x7f: 7 and 15)
    ninfer-cat --object w w.ninfer > w.bin
    [ "$(head -c 4096 w.bin | od -An -v -tx1 | tr -s ' ' '\n' | grep -c '^7f$')" -eq 4096 ]
    [ "$(tail -c +4097 w.bin | head -c 512 | od -An -v -tx1 | tr -s ' ' '\n' | grep -c '^7e$')" -eq 512 ]
    [[ "$row" == *$'\t'0$'\t'0 ]]
    # q8's FP16 scale: amax / 127 = 65520, the midpoint above 65504 (odd last
    # bit), rounds up to infinity: saturated; 0.5 less in amax does not
    scales_manifest q8_g32_fp16 row_split_k128_v1 1 32 '(k == 0 ? 8321040 : 0)'
    packs q8_g32_fp16 1 0 1
    scales_manifest q8_g32_fp16 row_split_k128_v1 1 32 '(k == 0 ? 8321039.5 : 0)'
    packs q8_g32_fp16 0 0 1
}

# ---- hostile encodings: packed as raw bytes, caught by --deep ----

# raw_object FILE SHAPE FORMAT LAYOUT → m.ninfer holding FILE's bytes as the object
raw_object() {
    printf '{"components":{"text":{"config":{}}},"objects":[{"id":"w","kind":"tensor","shape":%s,"format":"%s","layout":"%s","source":{"file":"%s"}}],"bindings":{},"uses":[]}\n' \
        "$2" "$3" "$4" "$1" > m.json
    run -0 ninfer-pack -q --force -o m.ninfer m.json
    run -0 ninfer-verify m.ninfer   # structure and digest are fine
}

poke() { # FILE OFFSET HEXBYTES...
    local f=$1 off=$2; shift 2
    printf "$(printf '\\x%s' "$@")" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
}

@test "deep: q8 code -128 is reported with row and column" {
    head -c 264 /dev/zero > w.bin          # base 128 B, scales at 256: 4 x fp16
    poke w.bin 0 01 80                     # codes 1, -128
    poke w.bin 256 00 3c                   # group 0 scale 1.0
    raw_object w.bin '[1,32]' q8_g32_fp16 row_split_k128_v1
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"/objects/0: codes: object \"w\": row 0, column 1"*"-128"* ]]
}

@test "deep: t2 code 0b10 is reported" {
    head -c 258 /dev/zero > w.bin          # base 32 B, scale at 256
    poke w.bin 0 02                        # column 0: 0b10
    poke w.bin 256 00 3c
    raw_object w.bin '[1,128]' t2_g128_fp16 row_split_k128_v1
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"codes: object \"w\": row 0, column 0"* ]]
}

@test "deep: NaN and Inf scales are reported with the group" {
    head -c 260 /dev/zero > w.bin          # q4 [1,64]: base 64 B, scales at 256: 2 groups
    poke w.bin 256 00 7e                   # group 0: NaN
    raw_object w.bin '[1,64]' q4_g64_fp16 row_split_k128_v1
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"row 0, group 0"*"not finite"* ]]
    poke w.bin 256 00 7c                   # +Inf
    raw_object w.bin '[1,64]' q4_g64_fp16 row_split_k128_v1
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"group 0"* ]]
}

@test "deep: nonzero padding codes and padding-group scales are reported" {
    head -c 260 /dev/zero > w.bin
    poke w.bin 256 00 3c
    poke w.bin 50 01                       # column 100 (padding) = 1
    raw_object w.bin '[1,64]' q4_g64_fp16 row_split_k128_v1
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"row 0, column 100"* ]]
    head -c 260 /dev/zero > w.bin
    poke w.bin 258 00 3c                   # group 1 lies wholly in the padding
    raw_object w.bin '[1,64]' q4_g64_fp16 row_split_k128_v1
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"group 1"*"pad-scale"* ]]
}

@test "deep: e4m3 NaN codes and non-finite row scales (fp8) are reported" {
    head -c 258 /dev/zero > w.bin          # fp8 [1,16]: codes 16 B, row scale at 256
    poke w.bin 3 7f                        # NaN code at column 3
    poke w.bin 256 80 3f                   # row scale 1.0 (bf16)
    raw_object w.bin '[1,16]' fp8_e4m3fn_row_bf16 row_scale_v1
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"row 0, column 3"* ]]
}

@test "deep: nvfp4 divisors <= 0 and negative block scales are reported" {
    head -c 4612 /dev/zero > w.bin         # [128,64]: codes 4096, scales 512, 1 divisor
    poke w.bin 4608 00 00 80 bf            # divisor -1.0
    raw_object w.bin '[128,64]' nvfp4 block_scale_k16_m128x4_v1
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"divisor"* ]]
    head -c 4612 /dev/zero > w.bin
    poke w.bin 4608 00 00 80 3f            # divisor 1.0
    poke w.bin 4096 b8                     # block scale -1.0 (E4M3 0xb8)
    raw_object w.bin '[128,64]' nvfp4 block_scale_k16_m128x4_v1
    run -1 --separate-stderr ninfer-verify --deep m.ninfer
    [[ "$stderr" == *"block"* ]]
}

@test "deep: a valid transcoded artifact of every format passes" {
    nf_bytes 65536 w.i8
    for f in q2_g64_fp16 q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 q8_g32_fp16 t2_g128_fp16 nvfp4 fp8_e4m3fn_row_bf16; do
        l=$(case $f in nvfp4) echo block_scale_k16_m128x4_v1;; fp8*) echo row_scale_v1;; *) echo row_split_k128_v1;; esac)
        printf '{"components":{"text":{"config":{}}},"objects":[{"id":"w","kind":"tensor","shape":[128,500],"format":"%s","layout":"%s","source":{"file":"w.i8","dtype":"i8"}}],"bindings":{},"uses":[]}\n' "$f" "$l" > m.json
        [ $f = nvfp4 ] && sed -i 's/\[128,500\]/[128,512]/' m.json
        run -0 ninfer-pack -q --force -o m.ninfer m.json
        run -0 ninfer-verify --deep m.ninfer
    done
}

@test "reproducible encoding: every format gives the same object bytes on 1, 2 and 3 encoding threads" {
    # a source of 4 MiB of f32 (rows cut into blocks differently per thread count)
    nf_bytes $((600 * 1792 * 4)) w.raw
    local f l t digests
    for f in q2_g64_fp16 q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 q8_g32_fp16 t2_g128_fp16 nvfp4 fp8_e4m3fn_row_bf16 bf16; do
        l=$(case $f in nvfp4) echo block_scale_k16_m128x4_v1;; fp8*) echo row_scale_v1;; bf16) echo contiguous_le_v1;;
            *) echo row_split_k128_v1;; esac)
        printf '{"components":{"text":{"config":{}}},"objects":[{"id":"w","kind":"tensor","shape":[%s],"format":"%s","layout":"%s","source":{"file":"w.raw","dtype":"i8"}}],"bindings":{},"uses":[]}\n' \
            "$([ $f = nvfp4 ] && echo 640,6720 || echo 600,7168)" "$f" "$l" > m.json
        digests=""
        for t in 1 2 3; do
            run -0 ninfer-pack -q --no-sync --force --threads $t -o m$t.ninfer m.json
            digests="$digests $(ninfer-cat --object w m$t.ninfer | sha256sum | cut -c1-64)"
        done
        read -r d1 d2 d3 <<< "$digests"
        [ "$d1" = "$d2" ] && [ "$d1" = "$d3" ] || { echo "$f: $digests" >&2; return 1; }
    done
}

@test "the scale search's bytes are pinned: each q format's objects of a seeded checkpoint (a tail group in down_proj, K = 688)" {
    # pinned from the search before the candidate memo (ab9998d); the bytes
    # are the same on every ISA and thread count, so any machine gives them
    nf-mkckpt --seed 7 --dtype f16 ck > /dev/null
    ninfer-import ck > l.json
    local f want got
    for f in q2_g64_fp16 q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 q8_g32_fp16 t2_g128_fp16; do
        want=$(case $f in
            q2_g64_fp16) echo e294abc4b3c7925592010fd0cbbabfbd1c45ef5a56c9f5c058ac5f2c10643d4a ;;
            q4_g64_fp16) echo 2bbc61aeeb91a519b8eb6542bc87aafa31a5d87da2f8c4054683d2980ffcc76d ;;
            q5_g64_fp16) echo aef4dcebd84e9c12d19d6c52e04c783407649a56ae9c18de6dbd5076acd56045 ;;
            q6_g64_fp16) echo f82bb45c4ade92fe40fc78f1d62cc9c8a492daf84fa7956464b0ad96f7b7e357 ;;
            q8_g32_fp16) echo 99762f5f68dea068efbed8f25fff795340de42ddc83160964e65410a3405c3ec ;;
            t2_g128_fp16) echo ae97b824b6fde303bb9c8f2d2b7b20268660b819b88a5408d70b77f57b047e1c ;;
        esac)
        ninfer-quant -i l.json "text/*=$f" > q.json
        run -0 ninfer-pack -q --no-sync --force -o q.ninfer q.json
        got=$({ ninfer-cat --object model.layers.0.mlp.down_proj.weight q.ninfer
                ninfer-cat --object model.layers.1.self_attn.q_proj.weight q.ninfer; } | sha256sum | cut -c1-64)
        [ "$got" = "$want" ] || { echo "$f: $got, pinned $want" >&2; return 1; }
    done
}
