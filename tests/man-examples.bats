#!/usr/bin/env bats
# man-examples.bats — every command of every man page's EXAMPLES runs here
# (jq's idea: a manual whose examples are tests cannot drift from the code).
#
# The commands are not copied into this file: `man_example PAGE N` reads the
# Nth "$ " line of PAGE's EXAMPLES section from man/ and runs it with bash
# (pipefail on) in the test's own directory, and `man_block PAGE N` prints the
# Nth literal block of that section (the manifests the pages show). The last
# test checks that every "$ " line of every page is run by some test here.
#
# Fixtures are made once per run with the project's own tools: a small
# Hugging Face Llama checkpoint (nf-mkckpt, seed 0), its manifest
# (nf-st2manifest), model.ninfer packed from it, shards/ (that artifact split
# at 2 MiB) and model.ninfer.zst (it as a zstd stream). Tests take copies.

if [ -f "$BATS_TEST_DIRNAME/helper.bash" ]; then
    load helper
else
    bats_require_minimum_version 1.5.0
    REPO="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
    NF_BIN="${NF_BIN:-$REPO/bin}"
    NF_TOOLS="${NF_TOOLS:-$REPO/build/tools}"
    PATH="$NF_BIN:$NF_TOOLS:$PATH"
    LC_ALL=C
    export REPO NF_BIN NF_TOOLS PATH LC_ALL
fi

MAN="$BATS_TEST_DIRNAME/../man"
. "$BATS_TEST_DIRNAME/lib/nginx.bash" # ninfer-fetch(1)'s examples read a loopback nginx

# ---- reading the pages -------------------------------------------------------

# man_section PAGE — the EXAMPLES section of man/PAGE, mdoc escapes undone.
man_section() {
    sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$MAN/$1" | sed -e '1d' -e '$d' |
        sed -e 's/\\(dq/"/g' -e 's/\\e/\\/g' -e 's/\\-/-/g' -e 's/\\&//g'
}

# man_commands PAGE — its command lines ("$ " stripped), one per line.
man_commands() {
    man_section "$1" | sed -n 's/^\$ //p'
}

# man_example PAGE N — run the Nth command of PAGE's EXAMPLES.
man_example() {
    local cmd
    cmd=$(man_commands "$1" | sed -n "${2}p")
    if [ -z "$cmd" ]; then
        echo "man/$1 has no example command $2" >&2
        return 99
    fi
    bash -o pipefail -c "$cmd"
}

# man_block PAGE N — the Nth literal block (.Bd -literal ... .Ed) of PAGE's
# EXAMPLES.
man_block() {
    man_section "$1" | awk -v n="$2" '
        /^\.Bd -literal/ { k++; inside = 1; next }
        /^\.Ed/          { inside = 0; next }
        inside && k == n { print }'
}

# ---- fixtures -----------------------------------------------------------------

setup_file() {
    local tool
    for tool in nf-mkckpt nf-st2manifest; do
        command -v "$tool" >/dev/null || return 0 # setup() skips, with the reason
    done
    FIX="$BATS_FILE_TMPDIR/fixture"
    mkdir -p "$FIX"
    cd "$FIX" || return 1
    nf-mkckpt ckpt 2>/dev/null &&
        nf-st2manifest ckpt > manifest.json &&
        ninfer-pack -q -o model.ninfer manifest.json &&
        ninfer-split -q --max-file-bytes 2M -o shards/model.ninfer model.ninfer &&
        ninfer-cat --zstd model.ninfer > model.ninfer.zst
}

setup() {
    command -v nf-mkckpt >/dev/null && command -v nf-st2manifest >/dev/null ||
        skip "fixture tools missing: make build/tools/nf-mkckpt build/tools/nf-st2manifest"
    FIX="$BATS_FILE_TMPDIR/fixture"
    [ -f "$FIX/model.ninfer.zst" ] || {
        echo "the fixtures were not built in $FIX" >&2
        return 1
    }
    cd "$BATS_TEST_TMPDIR" || return 1
    # the checkpoint is only read: share it
    ln -s "$FIX/ckpt" ckpt
}

# use NAME... — copy fixtures into the test directory (model, shards, zst,
# manifest).
use() {
    local f
    for f in "$@"; do
        case "$f" in
        model) cp "$FIX/model.ninfer" . ;;
        shards) cp -r "$FIX/shards" . ;;
        zst) cp "$FIX/model.ninfer.zst" . ;;
        manifest) cp "$FIX/manifest.json" . ;;
        *) echo "use: unknown fixture $f" >&2; return 1 ;;
        esac
    done
}

# objects_in FILE — how many objects the manifest or catalog FILE has.
objects_in() {
    grep -o '"kind": *"\(tensor\|resource\)"' "$1" | wc -l
}

# payload_of ENTRY — the payload bytes of a single-file artifact.
payload_of() {
    local eps
    eps=$(ninfer-cat --header "$1" | sed -n 's/.*"entry_payload_start": \([0-9]*\).*/\1/p')
    echo $(( $(stat -c %s "$1") - eps ))
}

# json_num NAME — every number value of "NAME" in $output, one per line.
json_num() {
    grep -o "\"$1\": *[0-9]*" <<< "$output" | sed 's/.*: *//'
}

# ---- ninfer-verify(1) ---------------------------------------------------------

@test "ninfer-verify(1): check an artifact and its digests" {
    use model manifest
    run -0 man_example ninfer-verify.1 1
    [ "$output" = "model.ninfer: OK ($(objects_in manifest.json) digests checked)" ]
}

@test "ninfer-verify(1): publish SHA256SUMS and check them with sha256sum and --check-sums" {
    use shards
    run -0 man_example ninfer-verify.1 2
    run -0 man_example ninfer-verify.1 3
    [ "${#lines[@]}" -eq 3 ]
    local line name
    for line in "${lines[@]}"; do
        [[ "$line" =~ ^[0-9a-f]{64}\ \ (model\.ninfer(\.part-000[12])?)$ ]]
        name=${BASH_REMATCH[1]}
        [ "${line%% *}" = "$(sha256sum "shards/$name" | cut -d' ' -f1)" ]
    done
    run -0 man_example ninfer-verify.1 4
    [ "${lines[0]}" = "model.ninfer: OK" ]
    [ "${lines[2]}" = "model.ninfer.part-0002: OK" ]
    run -0 man_example ninfer-verify.1 5
    [ "$output" = "shards/model.ninfer: OK ($(ninfer-cat --catalog shards/model.ninfer | grep -o '"[^"]*":"[0-9a-f]\{64\}"' | wc -l) digests checked)" ]
    # and a sums line that no longer matches is a digest error
    local first
    first=$(sed -n '2s/^\(.\).*/\1/p' shards/SHA256SUMS)
    sed -i "2s/^./$([ "$first" = 0 ] && echo 1 || echo 0)/" shards/SHA256SUMS
    run -1 --separate-stderr man_example ninfer-verify.1 5
    [[ "$stderr" == *"shards/model.ninfer.part-0001: digest: sha256 "* ]]
}

@test "ninfer-verify(1): verify a zstd stream as it is decompressed" {
    use zst manifest
    run -0 man_example ninfer-verify.1 6
    [ "$output" = "-: OK ($(objects_in manifest.json) digests checked)" ]
}

@test "ninfer-verify(1): one --json line for a CI job" {
    use shards model
    run -0 man_example ninfer-verify.1 7
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == *'"exit":0'* ]]
    [[ "$output" == *'"exit":0,"verdict":"ok","diagnostics":[]'* ]]
    [[ "$output" == *'"file":"shards/model.ninfer"'* ]]
    # the files table: the entry and two parts
    [ "$(grep -o '"index":[0-9]*' <<< "$output" | wc -l)" -eq 3 ]
    [ "$(json_num payload_bytes | head -1)" -eq "$(payload_of model.ninfer)" ]
    [[ "$output" =~ \"artifact_id\":\"[0-9a-f]{32}\" ]]
}

@test "ninfer-verify(1): a damaged byte fails its object's digest (exit 1)" {
    use model
    run -0 man_example ninfer-verify.1 8
    [ "$(od -An -tx1 -j 20000 -N1 model.ninfer | tr -d ' ')" = ff ]
    run -1 --separate-stderr man_example ninfer-verify.1 9
    [ -z "$output" ]
    [[ "$stderr" == 'ninfer-verify: model.ninfer: /objects/0: digest: object "model.embed_tokens.weight": sha256 '* ]]
}

@test "ninfer-verify(1): a missing part is an I/O failure (exit 3)" {
    use shards
    run -0 man_example ninfer-verify.1 10
    [ ! -e shards/model.ninfer.part-0002 ]
    run -3 --separate-stderr man_example ninfer-verify.1 11
    [ "$stderr" = "ninfer-verify: shards/model.ninfer.part-0002: /files/2: part-missing: part 2 is missing" ]
}

# ---- ninfer-cat(1) ------------------------------------------------------------

@test "ninfer-cat(1): --header and --files" {
    use model shards
    run -0 man_example ninfer-cat.1 1
    local jb id eps
    jb=$(json_num json_bytes)
    eps=$(json_num entry_payload_start)
    [ "$(json_num version)" -eq 3 ]
    [ "$jb" -eq "$(od -An -tu8 -j 8 -N8 model.ninfer | tr -d ' ')" ]
    [ "$eps" -eq $(( (32 + jb + 4095) / 4096 * 4096 )) ]
    id=$(od -An -tx1 -j 16 -N16 model.ninfer | tr -d ' \n')
    [[ "$output" == *"\"artifact_id\": \"$id\""* ]]

    run -0 man_example ninfer-cat.1 2
    local sizes offsets payloads i=0 f
    sizes=($(json_num file_bytes))
    offsets=($(json_num logical_offset))
    payloads=($(json_num payload_bytes))
    [ "${#sizes[@]}" -eq 3 ]
    for f in model.ninfer model.ninfer.part-0001 model.ninfer.part-0002; do
        [ "${sizes[$i]}" -eq "$(stat -c %s "shards/$f")" ]
        [ "${sizes[$i]}" -le $((2 * 1024 * 1024)) ]
        i=$((i + 1))
    done
    [ "${offsets[0]}" -eq 0 ]
    [ "${offsets[1]}" -eq "${payloads[0]}" ]
    [ "${offsets[2]}" -eq $(( payloads[0] + payloads[1] )) ]
    [ "${sizes[1]}" -eq $(( 4096 + payloads[1] )) ]
}

@test "ninfer-cat(1): a resource, an object and a payload range" {
    use model shards
    run -0 man_example ninfer-cat.1 3
    [ "$output" = "$(head -c 100 ckpt/tokenizer.json)" ]
    run -0 man_example ninfer-cat.1 4
    [ -z "$output" ]
    run -0 man_example ninfer-cat.1 5
    [ "$output" -eq $((2048 * 256 * 2)) ]  # lm_head [vocab, hidden] in bf16
    ninfer-cat --object lm_head.weight shards/model.ninfer | cmp - <(ninfer-cat --object lm_head.weight model.ninfer)
    run -0 man_example ninfer-cat.1 6
    local eps
    eps=$(ninfer-cat --header model.ninfer | sed -n 's/.*"entry_payload_start": \([0-9]*\).*/\1/p')
    [ "$output" = "$(od -An -tx1 -j "$eps" -N8 model.ninfer)" ]
    [ "$(wc -w <<< "$output")" -eq 8 ]
}

@test "ninfer-cat(1): the whole artifact as a stream, compressed, byte-identical, resharded" {
    use model shards manifest
    run -0 man_example ninfer-cat.1 7
    [ "$(od -An -tx1 -N4 model.ninfer.zst | tr -d ' ')" = 28b52ffd ]
    run -0 man_example ninfer-cat.1 8
    [ -z "$output" ]
    run -0 man_example ninfer-cat.1 9
    [ -f big/model.ninfer ]
    [ -f big/model.ninfer.part-0001 ]
    [ ! -e big/model.ninfer.part-0002 ]
    [ "$(stat -c %s big/model.ninfer)" -eq $((3 * 1024 * 1024)) ]
    run -0 ninfer-verify big/model.ninfer
    [ "$output" = "big/model.ninfer: OK ($(objects_in manifest.json) digests checked)" ]
}

@test "ninfer-cat(1): --manifest into ninfer-pack copies an artifact" {
    use model
    run -0 man_example ninfer-cat.1 10
    run -0 man_example ninfer-cat.1 11
    [ "$output" = "copy.ninfer: OK ($(objects_in "$FIX/manifest.json") digests checked)" ]
    # same objects at the same offsets: the payloads are identical
    local p
    p=$(payload_of model.ninfer)
    [ "$(payload_of copy.ninfer)" -eq "$p" ]
    cmp <(ninfer-cat --range "0:$p" copy.ninfer) <(ninfer-cat --range "0:$p" model.ninfer)
}

# ---- ninfer-split(1) ----------------------------------------------------------

@test "ninfer-split(1): split at 2 MiB" {
    use model
    run -0 man_example ninfer-split.1 1
    run -0 man_example ninfer-split.1 2
    [ "$output" = "$(printf 'model.ninfer\nmodel.ninfer.part-0001\nmodel.ninfer.part-0002')" ]
    local f
    for f in shards/*; do
        [ "$(stat -c %s "$f")" -le $((2 * 1024 * 1024)) ]
    done
    [ "$(stat -c %s shards/model.ninfer)" -eq $((2 * 1024 * 1024)) ]
    run -0 ninfer-verify -q shards/model.ninfer
}

@test "ninfer-split(1): --dry-run prints the files table and writes nothing" {
    use model
    run -0 man_example ninfer-split.1 3
    [ ! -e small ]
    [[ "${lines[2]}" == *'"path": null,'* ]]
    [[ "$output" == *'"path": "model.ninfer.part-0001",'* ]]
    local p total=0 n=0 b
    p=($(json_num payload_bytes))
    for b in "${p[@]}"; do total=$((total + b)); n=$((n + 1)); done
    [ "$total" -eq "$(payload_of model.ninfer)" ]
    # spec 2.3: every part but the last holds floor((1M - 4096) / 4096) * 4096
    [ "$n" -ge 3 ]
    [ "${p[1]}" -eq $((1024 * 1024 - 4096)) ]
    [ "${p[$((n - 2))]}" -eq $((1024 * 1024 - 4096)) ]
}

@test "ninfer-split(1): merge with --verify, then again with --force" {
    use model shards
    run -0 man_example ninfer-split.1 4
    [ -f merged.ninfer ]
    [ ! -e merged.ninfer.part-0001 ]
    local p id1
    p=$(payload_of model.ninfer)
    [ "$(payload_of merged.ninfer)" -eq "$p" ]
    cmp <(ninfer-cat --range "0:$p" merged.ninfer) <(ninfer-cat --range "0:$p" model.ninfer)
    id1=$(od -An -tx1 -j 16 -N16 merged.ninfer)
    # without --force an existing entry is kept (exit 3)
    run -3 --separate-stderr ninfer-split -o merged.ninfer shards/model.ninfer
    [[ "$stderr" == *": io: "* ]]
    run -0 man_example ninfer-split.1 5
    [ "$(od -An -tx1 -j 16 -N16 merged.ninfer)" != "$id1" ]  # a new file set
    run -0 ninfer-verify merged.ninfer
    [[ "$output" == "merged.ninfer: OK ("* ]]
}

@test "ninfer-split(1): reshard a zstd stream, and write one" {
    use zst shards manifest
    run -0 man_example ninfer-split.1 6
    [ -f fromzst/model.ninfer.part-0002 ]
    run -0 ninfer-verify fromzst/model.ninfer
    [ "$output" = "fromzst/model.ninfer: OK ($(objects_in manifest.json) digests checked)" ]
    run -0 man_example ninfer-split.1 7
    [ "$(od -An -tx1 -N4 stream.ninfer.zst | tr -d ' ')" = 28b52ffd ]
    run -0 bash -c 'zstd -dc stream.ninfer.zst | ninfer-verify -'
    [ "$output" = "-: OK ($(objects_in manifest.json) digests checked)" ]
}

# ---- ninfer-pack(1) -----------------------------------------------------------

@test "ninfer-pack(1): pack into one file, plan a split, split" {
    use manifest
    run -0 man_example ninfer-pack.1 1
    run -0 ninfer-verify model.ninfer
    [ "$output" = "model.ninfer: OK ($(objects_in manifest.json) digests checked)" ]
    run -0 man_example ninfer-pack.1 2
    [ ! -e shards ]
    local planned
    planned=$(json_num payload_bytes)
    [ "$(wc -l <<< "$planned")" -eq 3 ]
    run -0 man_example ninfer-pack.1 3
    run -0 ninfer-cat --files shards/model.ninfer
    [ "$(json_num payload_bytes)" = "$planned" ]
    run -0 ninfer-verify -q shards/model.ninfer
}

@test "ninfer-pack(1): pack to a stream, ninfer-split adds the digests" {
    use manifest
    run -0 man_example ninfer-pack.1 4
    [ -f parts/model.ninfer.part-0002 ]
    run -0 ninfer-verify parts/model.ninfer
    [ "$output" = "parts/model.ninfer: OK ($(objects_in manifest.json) digests checked)" ]
}

@test "ninfer-pack(1): the hand-written manifest: concat, rows, values, a resource" {
    use model
    man_block ninfer-pack.1 3 > kv.json
    grep -q '"concat"' kv.json
    run -0 man_example ninfer-pack.1 5
    run -0 man_example ninfer-pack.1 6
    [ "$output" -eq 131072 ]
    # the fused parent is the key rows, then the value rows
    cmp <(ninfer-cat --object w.kv kv.ninfer) \
        <(ninfer-cat --object model.layers.0.self_attn.k_proj.weight model.ninfer
          ninfer-cat --object model.layers.0.self_attn.v_proj.weight model.ninfer)
    # rows [0, 32) of q_proj: its first 32 * 256 bf16 values
    cmp <(ninfer-cat --object w.q0 kv.ninfer) \
        <(ninfer-cat --object model.layers.0.self_attn.q_proj.weight model.ninfer | head -c 16384)
    run -0 man_example ninfer-pack.1 7
    [ "$output" = " 00 00 80 3f" ]  # 1.0f
    ninfer-cat --resource tokenizer.json kv.ninfer | cmp - ckpt/tokenizer.json
    run -0 ninfer-verify kv.ninfer
    [ "$output" = "kv.ninfer: OK (4 digests checked)" ]
}

@test "ninfer-pack(1): quantize while packing, with --report" {
    man_block ninfer-pack.1 5 > q4.json
    grep -q '"nvfp4"' q4.json
    run -0 --separate-stderr man_example ninfer-pack.1 8
    [ "${lines[0]}" = "$(printf 'object\tformat\telements\trmse\tmax_abs_error\tsnr_db\tscales_saturated\tscales_zeroed')" ]
    [ "${#lines[@]}" -eq 3 ]
    [ -z "$stderr" ] # no scale saturated or zeroed: no warning
    local row snr
    for row in "${lines[1]}" "${lines[2]}"; do
        [[ "$row" =~ ^w\.(q|k)$'\t'(q4_g64_fp16|nvfp4)$'\t'(65536|32768)$'\t'.*$'\t'0$'\t'0$ ]]
        snr=$(cut -f6 <<< "$row")
        # 4-bit codes on a Gaussian-like weight: roughly 20 dB, far from 0
        [ "${snr%%.*}" -ge 15 ]
    done
    [[ "${lines[1]}" == "w.q"$'\t'"q4_g64_fp16"$'\t'"65536"$'\t'* ]]
    [[ "${lines[2]}" == "w.k"$'\t'"nvfp4"$'\t'"32768"$'\t'* ]]
    run -0 man_example ninfer-pack.1 9
    # q4 [256,256]: 256*256/2 code bytes + 256*(256/64)*2 scale bytes;
    # nvfp4 [128,256]: 128*256/2 + 128*256/16 + one 4-byte divisor
    [ "$output" = "$(printf '"bytes":%s\n' 34816 18436)" ]
    run -0 ninfer-verify q4.ninfer
    [ "$output" = "q4.ninfer: OK (2 digests checked)" ]
}

@test "ninfer-pack(1): change an artifact through its manifest" {
    use model
    run -0 man_example ninfer-pack.1 10
    run -0 ninfer-verify copy.ninfer
    [[ "$output" == "copy.ninfer: OK ("* ]]
    cmp <(ninfer-cat --object lm_head.weight copy.ninfer) <(ninfer-cat --object lm_head.weight model.ninfer)
}

# ---- ninfer(5) ----------------------------------------------------------------

@test "ninfer(5): the entry and part headers" {
    use model shards
    run -0 man_example ninfer.5 1
    [ "$output" = " 4e 49 4e 46 45 52 00 03" ]
    run -0 man_example ninfer.5 2
    [ "$output" = " 4e 49 4e 50 52 54 00 03 01 00 00 00 00 00 00 00" ]
    # the part's artifact_id is its entry's
    [ "$(od -An -tx1 -j 16 -N16 shards/model.ninfer.part-0001)" = "$(od -An -tx1 -j 16 -N16 shards/model.ninfer)" ]
    run -0 man_example ninfer.5 3
    [[ "$output" == *"\"artifact_id\": \"$(od -An -tx1 -j 16 -N16 model.ninfer | tr -d ' \n')\""* ]]
    [ "$(json_num version)" -eq 3 ]
}

@test "ninfer(5): an object's digest in metadata.integrity is the SHA-256 of its bytes" {
    use model
    run -0 man_example ninfer.5 4
    local sum=${output%% *}
    [[ "$sum" =~ ^[0-9a-f]{64}$ ]]
    run -0 man_example ninfer.5 5
    [ "$output" = "\"lm_head.weight\":\"$sum\"" ]
}

@test "ninfer(5): the placement example of spec 3.3 (--dry-run)" {
    man_block ninfer.5 3 > big.json
    grep -q '"big.bin"' big.json
    run -0 man_example ninfer.5 6
    [ "$(stat -c %s big.bin)" -eq 31999938560 ]
    run -0 man_example ninfer.5 7
    [ ! -e example.ninfer ]
    [ "$(json_num payload_bytes | tr '\n' ' ')" = "31999934464 4096 " ]
    [[ "$output" == *'"path": "example.ninfer.part-0001",'* ]]
    # the entry is then exactly 65536 + 31999934464 = 32,000,000,000 bytes
    [ $((65536 + 31999934464)) -eq 32000000000 ]
}

# ---- ninfer-formats(7) --------------------------------------------------------

@test "ninfer-formats(7): the four encoded-size vectors" {
    man_block ninfer-formats.7 1 > vectors.json
    grep -q '"nvfp4"' vectors.json
    run -0 man_example ninfer-formats.7 1
    # the packer dies of SIGPIPE once ninfer-cat has read the catalog and
    # left: run this one without pipefail, as a shell user would
    local cmd
    cmd=$(man_commands ninfer-formats.7 | sed -n 2p)
    run -0 bash -c "$cmd"
    [ "$output" = "$(printf '"bytes":%s\n' 19496960 24084480 73428992 41287684)" ]
}

# ---- ninfer-quant(1) ----------------------------------------------------------

@test "ninfer-quant(1): q8 everywhere, q4 MLPs, an nvfp4 head with AllowA4; pack; the divisor" {
    run -0 man_example ninfer-quant.1 1
    grep -q '"parameter": "text/layers/1/mlp/down"' manifest.json
    run -0 --separate-stderr man_example ninfer-quant.1 2
    [ -z "$output" ]
    [ -z "$stderr" ]
    run -0 man_example ninfer-quant.1 3
    [ "$output" = 6 ]  # gate, up, down of two layers
    # 16 matrices: 6 in q4, the head in nvfp4, the other 9 in q8; the
    # norms untouched
    [ "$(grep -c '"format": "q8_g32_fp16"' q.json)" -eq 9 ]
    [ "$(grep -c '"format": "nvfp4"' q.json)" -eq 1 ]
    [ "$(grep -c '"format": "fp32"' q.json)" -eq 6 ]  # 5 norms, the divisor
    grep -q '"activation_policy": "AllowA4"' q.json
    grep -q '"quantization":{"tool":"ninfer-quant ' q.json
    run -0 man_example ninfer-quant.1 4
    run -0 man_example ninfer-quant.1 5
    [ "$output" = " 00 00 80 3f" ]  # 1.0f
    run -0 ninfer-verify --deep q.ninfer
    [ "$output" = "q.ninfer: OK (25 digests checked)" ]
}

@test "ninfer-quant(1): the recipe gives the same manifest; shapes and fused parents that cannot be" {
    run -0 man_example ninfer-quant.1 1
    run -0 man_example ninfer-quant.1 2
    man_block ninfer-quant.1 3 > recipe.json
    grep -q '"rules"' recipe.json
    run -0 man_example ninfer-quant.1 6
    [ -z "$output" ]
    run -0 --separate-stderr man_example ninfer-quant.1 7
    [ "$output" = 1 ]
    [ "${#stderr_lines[@]}" -eq 2 ]
    [ "${stderr_lines[0]}" = 'ninfer-quant: manifest.json: encoding: parameter "text/layers/0/mlp/gate" (object "model.layers.0.mlp.gate_proj.weight", 688x256) cannot be nvfp4: nvfp4 needs N % 128 == 0, got N=688' ]
    [[ "${stderr_lines[1]}" == 'ninfer-quant: manifest.json: encoding: parameter "text/layers/1/mlp/gate" '* ]]
    run -1 --separate-stderr man_example ninfer-quant.1 8
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 2 ]
    [ "${stderr_lines[0]}" = 'ninfer-quant: -: encoding: object "text/layers/0/attention/qkv" is asked for q4_g64_fp16 by "text/layers/0/attention/query" and for q8_g32_fp16 by "text/layers/0/attention/key"' ]
    [ "${stderr_lines[1]}" = 'ninfer-quant: -: encoding: object "text/layers/0/attention/qkv" is asked for q4_g64_fp16 by "text/layers/0/attention/query" and for q8_g32_fp16 by "text/layers/0/attention/value"' ]
}

# ---- ninfer-run(1) ------------------------------------------------------------

@test "ninfer-run(1): import, quantize, pack, run every projection on the CPU" {
    run -0 man_example ninfer-run.1 1
    [ -f run.ninfer ]
    run -0 --separate-stderr man_example ninfer-run.1 2
    [ -z "$stderr" ]
    [ "${lines[0]}" = "device cpu, components text" ]
    [[ "${lines[1]}" =~ ^loaded\ 21\ parents,\ .*,\ 21\ digests\ checked\;\ 3\ objects\ left\ unread$ ]]
    [[ "${lines[2]}" == "parameter "*" format "*" act "*" status" ]]
    [ "${#lines[@]}" -eq 19 ]  # 16 uses
    [[ "${lines[3]}" =~ ^text/embedding\ .*\ lookup$ ]]
    [[ "${lines[4]}" =~ ^text/layers/0/attention/query\ +q4_g64_fp16\ +a16\ +256\ +256\ .*\ ok$ ]]
    [[ "${lines[17]}" =~ ^text/layers/1/mlp/down\ +fp8_e4m3fn_row_bf16\ +a16\ +256\ +688\ .*\ ok$ ]]
    [[ "${lines[18]}" =~ ^text/head\ +nvfp4\ +a16\ +2048\ +256\ .*\ ok$ ]]
    [ "$(printf '%s\n' "${lines[@]:4}" | grep -c ' ok$')" -eq 15 ]
}

@test "ninfer-run(1): the JSON report, fused parents, a missing component (exit 1)" {
    run -0 man_example ninfer-run.1 1
    run -0 man_example ninfer-run.1 3
    [ "$output" = "$(printf '%s\n' '      1 "status":"lookup"' '     15 "status":"ok"')" ]
    run -0 man_example ninfer-run.1 4
    [ "$output" = '"objects_unread":["r.tokenizer.json","r.tokenizer_config.json","r.generation_config.json"]' ]
    run -0 man_example ninfer-run.1 5
    run -0 --separate-stderr ninfer-run --device cpu --json fused.ninfer
    [ "$(grep -o '"status":"ok"' <<< "$output" | wc -l)" -eq 15 ]
    [[ "$output" == *'"parameter":"text/layers/0/attention/key","input":"text/layers/0/mixer_input","format":"nvfp4","rows":128,"k":256,"parents":1,"view":"rows",'* ]]
    run -0 man_example ninfer-run.1 6
    [ "$output" = '"parents_loaded":15' ]  # 2 x (qkv, output, gate_up, down, 2 norms), embedding, norm, head
    run -1 --separate-stderr man_example ninfer-run.1 7
    [ -z "$output" ]
    [ "$stderr" = 'ninfer-run: run.ninfer: /components: component-missing: component "mtp" was selected but the artifact does not provide it' ]
}

# ---- ninfer-bench(1) ----------------------------------------------------------

@test "ninfer-bench(1): q4 and bf16 GEMV as a table, nvfp4 decode as JSON" {
    run -0 --separate-stderr man_example ninfer-bench.1 1
    [ "${#lines[@]}" -eq 4 ]
    [[ "${lines[0]}" == "# peak: CPU read-only passes over the "* ]]
    read -r dev op act fmt lay rows cols thr bytes rest <<< "${lines[2]}"
    [ "$dev $op $act $fmt $lay $rows $cols $thr $bytes" = "cpu gemv a16 q4_g64_fp16 row_split_k128_v1 4096 4096 1 8912896" ]
    read -r dev op act fmt lay rows cols thr bytes rest <<< "${lines[3]}"
    [ "$fmt $rows $cols $bytes ${lines[3]##* }" = "bf16 4096 4096 33554432 ok" ]
    run -0 --separate-stderr man_example ninfer-bench.1 2
    [ "${#lines[@]}" -eq 1 ]
    # 9437188 = 4096 * 4096 / 2 codes + 4096 * 4096 / 16 scales + one divisor
    [[ "$output" == '{"device":"cpu","op":"decode","activation":null,"format":"nvfp4","layout":"block_scale_k16_m128x4_v1","object":null,"rows":4096,"cols":4096,"threads":'[0-9]*',"bytes":9437188,"iters":3,'*',"check":"-"}' ]]
}

@test "ninfer-bench(1): an artifact's own objects as CSV" {
    run -0 man_example ninfer-bench.1 3
    run -0 --separate-stderr man_example ninfer-bench.1 4
    [ "${#lines[@]}" -eq 4 ]
    [ "${lines[0]}" = "device,op,activation,format,layout,object,rows,cols,threads,bytes,iters,min_us,p10_us,med_us,p90_us,gbps,input_mbps,peak_before_gbps,peak_after_gbps,ratio,unstable,max_err,bound,check" ]
    [[ "${lines[1]}" == cpu,gemv,a16,q4_g64_fp16,row_split_k128_v1,model.layers.0.mlp.gate_proj.weight,688,256,[0-9]*,93568,3,*,ok ]]
    [[ "${lines[2]}" == cpu,gemv,a16,q4_g64_fp16,row_split_k128_v1,model.layers.0.mlp.up_proj.weight,688,256,[0-9]*,93568,3,*,ok ]]
    [[ "${lines[3]}" == cpu,gemv,a16,q4_g64_fp16,row_split_k128_v1,model.layers.0.mlp.down_proj.weight,256,688,[0-9]*,104448,3,*,ok ]]
}

# ---- the pages themselves -----------------------------------------------------

# ---- ninfer-fetch(1) -----------------------------------------------------------

@test "ninfer-fetch(1): a download, a component's files with SHA256SUMS, a JSON summary, a trace" {
    nf_nginx_available || skip "nginx is not installed (Debian package nginx-light)"
    NGX=$BATS_TEST_TMPDIR/ng
    mkdir -p "$NGX/www"
    cp -r "$FIX/shards" "$NGX/www/"
    nf_nginx_start "$NGX"
    export URL=http://127.0.0.1:$NF_HTTP_PORT
    unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
    run -0 man_example ninfer-fetch.1 1
    for f in "$NGX"/www/shards/*; do cmp "$f" "$(basename "$f")"; done
    run -0 man_example ninfer-fetch.1 2
    [[ "$output" == "model.ninfer: OK ("*" digests checked)" ]]
    run -0 man_example ninfer-fetch.1 3
    # names relative to the entry's directory
    (cd text && sha256sum -c --quiet ../SHA256SUMS)
    [ "$(wc -l < SHA256SUMS)" = "$(ls text | wc -l)" ]
    run -0 man_example ninfer-fetch.1 4
    [[ "$output" == "text/model.ninfer: OK ("*" digests checked)" ]]
    run -0 man_example ninfer-fetch.1 5
    [[ "$output" == "{\"file\":\"$URL/shards/model.ninfer\",\"output\":\"copy/model.ninfer\",\"exit\":0,\"files\":3,"* ]]
    [[ "$output" == *'"requests":6,'* ]]
    run -0 --separate-stderr man_example ninfer-fetch.1 6
    [ "$stderr" = "ninfer-cat: http: GET $URL/shards/model.ninfer bytes=0-65535 206" ]
    grep -q '"entry_payload_start"' header.json
}

teardown() {
    [ -z "${NGX:-}" ] || nf_nginx_stop "$NGX"
}

@test "every EXAMPLES command of every man page is run by a test above" {
    local page n i missing=""
    local self="$BATS_TEST_DIRNAME/man-examples.bats"
    for page in ninfer-verify.1 ninfer-cat.1 ninfer-split.1 ninfer-pack.1 ninfer-quant.1 \
        ninfer-run.1 ninfer-bench.1 ninfer-fetch.1 ninfer.5 ninfer-formats.7; do
        [ -f "$MAN/$page" ]
        n=$(man_commands "$page" | wc -l)
        [ "$n" -gt 0 ]
        for ((i = 1; i <= n; i++)); do
            # run through man_example, or (the pipeline above) through
            # man_commands ... | sed -n Np
            grep -qE "man_example $page $i\$|man_commands $page \| sed -n ${i}p" "$self" ||
                missing="$missing $page:$i"
        done
    done
    if [ -n "$missing" ]; then
        echo "example commands no test runs:$missing" >&2
        return 1
    fi
}

@test "every man page renders without mandoc warnings" {
    command -v mandoc >/dev/null || skip "mandoc not installed (apt-get install mandoc)"
    local page
    for page in "$MAN"/*.[157]; do
        run -0 --separate-stderr mandoc -T lint -W warning "$page"
        [ -z "$stderr" ]
    done
}
