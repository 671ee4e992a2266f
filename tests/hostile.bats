#!/usr/bin/env bats
# Hostile catalogs (issue 6, DESIGN 3 and 13): every reader refuses each one
# with its stable code and exit status, in bounded time and memory.
#
# Each small case is read four ways: ninfer-verify on the file, the same
# bytes as a stream on stdin, ninfer-cat --catalog, and ninfer-split (which
# must write nothing). The large cases (a 100,000-deep nesting, a 50 MB ID,
# 200 MB catalogs, a 300 MB json_bytes) also measure the peak resident set
# with /usr/bin/time and hold it to a small multiple of the catalog.

load helper

# ---- helpers -------------------------------------------------------------------

# all_readers STATUS CODE ARTIFACT — every reader exits STATUS naming CODE;
# split publishes nothing. Streams are read only for single-file artifacts.
all_readers() {
    local want=$1 code=$2 art=$3
    mkdir -p out
    run -"$want" --separate-stderr ninfer-verify "$art"
    expect_code "$code"
    run -"$want" --separate-stderr ninfer-cat --catalog "$art"
    expect_code "$code"
    run -"$want" --separate-stderr ninfer-verify - < "$art"
    expect_code "$code"
    run -"$want" --separate-stderr ninfer-split -o out/s.ninfer "$art"
    expect_code "$code"
    [ ! -e out/s.ninfer ]
    no_temporaries out
}

# catalog_sed ENTRY SED — the standard catalog edited by sed (must change)
catalog_sed() {
    nf_make_sed "$@"
}

# measure OUT CMD... — run CMD (a binary, not a shell function) under
# /usr/bin/time: its exit status goes to $status, its stderr to OUT.err,
# its peak resident set in KiB to $kb.
measure() {
    local out=$1
    shift
    status=0
    /usr/bin/time -f '%M' -o "$out.rss" "$@" > /dev/null 2> "$out.err" || status=$?
    kb=$(tail -n 1 "$out.rss")
}

need_time() {
    [ -x /usr/bin/time ] || skip "/usr/bin/time is missing (Debian package time; scripts/install-deps.sh)"
    [ -z "${NF_WRAPPER:-}" ] || skip "memory is not measured under NF_WRAPPER"
}

# rss_limit_kb BYTES FACTOR — FACTOR x BYTES in KiB, plus room for the
# program itself; under sanitizers (NF_SANITIZE=1) twice that plus ASan's
# own quarantine and shadow.
rss_limit_kb() {
    local kb=$(($1 * $2 / 1024 + 32768))
    if [ -n "${NF_SANITIZE:-}" ]; then
        kb=$((kb * 2 + 600000))
    fi
    echo "$kb"
}

# The 50 MB IDs and the 200 MB nesting shrink 4x under sanitizers
# (NF_SANITIZE=1), which take several times longer: the code paths are the
# same. The 200 MB catalogs keep their size: their size is the point.
if [ -n "${NF_SANITIZE:-}" ]; then BIG_DIV=4; else BIG_DIV=1; fi

# big_artifact ENTRY CATALOG_FILE — frame a catalog file (any size) with a
# 2-byte payload.
big_artifact() {
    head -c 2 /dev/zero > pay2
    nf-mkartifact --catalog "$2" --payload pay2 -o "$1"
}

# prefixes of a valid catalog with one 2-byte tensor, for appending bulk
obj_prefix='{"components": {"text": {"config": {}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [1], "format": "bf16", "layout": "contiguous_le_v1", "offset": 0, "bytes": 2}]'
small_prefix="$obj_prefix"', "bindings": {}, "uses": [], "files": [{"path": null, "payload_bytes": 2}]'

# ---- shapes and sizes ----------------------------------------------------------

@test "shape whose element count overflows U64 -> range (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[4294967296, 4294967296, 2]' 0 16), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    all_readers 1 range a.ninfer
}

@test "shape whose byte count overflows U64 (bf16 [2^63]) -> range (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[9223372036854775808]' 0 16), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    all_readers 1 range a.ninfer
    grep -qF ': /objects/0: range: ' <<< "$stderr"
}

@test "quantized shape whose encoded size overflows U64 -> range (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[4611686018427387904, 128]' 0 16 q4_g64_fp16 row_split_k128_v1), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    all_readers 1 range a.ninfer
}

@test "rank 17 -> schema (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2,4]' 0 16), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    all_readers 1 schema a.ninfer
}

# ---- the header ------------------------------------------------------------------

@test "json_bytes 0 -> header (1)" {
    nf_make a.ninfer -- --json-bytes raw:0
    all_readers 1 header a.ninfer
}

@test "json_bytes 2^64-1 -> header (1), nothing allocated for it" {
    nf_make a.ninfer -- --json-bytes raw:18446744073709551615
    all_readers 1 header a.ninfer
}

@test "json_bytes past the end of the file -> header (1); the stream ends inside it" {
    nf_make a.ninfer -- --json-bytes raw:100000
    all_readers 1 header a.ninfer
}

# json_bytes_is ENTRY N — rewrite the entry header's json_bytes (bytes 8..16)
json_bytes_is() {
    printf "$(printf '\\x%02x' $(($2 & 255)) $(($2 >> 8 & 255)) $(($2 >> 16 & 255)) 0 0 0 0 0)" |
        dd of="$1" bs=1 seek=8 conv=notrunc status=none
}

@test "json_bytes that cuts the catalog short -> header (1), no pointer: in a string, a number, between tokens" {
    nf_make a.ninfer
    local len cut
    len=$(nf_size a.ninfer.json)
    cp a.ninfer good.ninfer
    # the end of each cut: 40 (inside "components"' value), half, a number's
    # digit, the last bracket, the last byte
    for cut in 40 $((len / 2)) $(($(grep -bo '"payload_bytes": 1' a.ninfer.json | cut -d: -f1) + 18)) $((len - 2)); do
        cp good.ninfer a.ninfer
        json_bytes_is a.ninfer "$cut"
        all_readers 1 header a.ninfer
        run -1 --separate-stderr ninfer-verify a.ninfer
        [ "${#stderr_lines[@]}" -eq 1 ]
        [[ "$stderr" == "ninfer-verify: a.ninfer: header: json_bytes ends the catalog inside its JSON value (after "*" bytes): the header's length is too small" ]]
        run -1 --separate-stderr ninfer-verify - < a.ninfer
        [[ "$stderr" == "ninfer-verify: -: header: json_bytes ends the catalog inside its JSON value "* ]]
    done
    # cut in the trailing whitespace: the catalog is whole, the rest of its
    # padding lies in the fill (verify checks the fill)
    cp good.ninfer a.ninfer
    json_bytes_is a.ninfer $((len - 1))
    run -1 --separate-stderr ninfer-verify a.ninfer
    [ "$stderr" = "ninfer-verify: a.ninfer: header: json_bytes ends the catalog inside its trailing whitespace (it goes on after byte $((32 + len - 1))): the header's length is too small" ]
    run -1 --separate-stderr ninfer-verify - < a.ninfer
    [ "$stderr" = "ninfer-verify: -: header: json_bytes ends the catalog inside its trailing whitespace (it goes on after byte $((32 + len - 1))): the header's length is too small" ]
    # a manifest cut short is the file's own fault: json, where it ends
    head -c $((len / 2)) a.ninfer.json > m.json
    run -1 --separate-stderr ninfer-pack -q -o out.ninfer m.json
    expect_code json
    [ ! -e out.ninfer ]
}

@test "json_bytes past the catalog into the zero fill -> header (1), no pointer" {
    nf_make a.ninfer
    local len
    len=$(nf_size a.ninfer.json)
    json_bytes_is a.ninfer $((len + 10))
    all_readers 1 header a.ninfer
    run -1 --separate-stderr ninfer-verify a.ninfer
    [ "$stderr" = "ninfer-verify: a.ninfer: header: json_bytes runs past the catalog's JSON value ($((len - 1)) bytes) into zero bytes: the header's length is too large" ]
}

@test "json_bytes past the catalog into payload bytes (no fill between) -> json (1): as garbage after the value" {
    # the catalog padded with spaces to the page: a longer json_bytes reads
    # payload bytes, which cannot be told from garbage a writer appended
    nf_catalog > c.json
    head -c $((4064 - $(nf_size c.json))) /dev/zero | tr '\0' ' ' >> c.json
    nf-mkartifact --catalog c.json --payload "$(nf_payload)" --json-bytes raw:4074 -o a.ninfer
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_only_codes json utf8
}

@test "300 MB json_bytes with the default 256 MiB cap: refused before allocation, small RSS" {
    need_time
    local n=314572800
    nf_make a.ninfer -- --json-bytes raw:$n
    # make the file long enough that only the cap can refuse it (sparse)
    truncate -s $((32 + n + 4096)) a.ninfer
    measure v "$NF_BIN/ninfer-verify" a.ninfer
    [ "$status" -eq 1 ]
    grep -qF ': header: ' v.err
    grep -qF 'cap' v.err
    echo "verify: peak RSS ${kb} KiB" >&3
    [ "$kb" -lt "$(rss_limit_kb 0 0)" ]
    # the same header on a stream: refused after 32 bytes
    measure s "$NF_BIN/ninfer-verify" - < a.ninfer
    [ "$status" -eq 1 ]
    grep -qF ': header: ' s.err
    [ "$kb" -lt "$(rss_limit_kb 0 0)" ]
    run -1 --separate-stderr ninfer-split -o out/s.ninfer a.ninfer
    expect_code header
    [ ! -e out/s.ninfer ]
}

# ---- JSON text -------------------------------------------------------------------

@test "integers 1e3 and 256.0 in offset -> schema (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 1e3 16), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    all_readers 1 schema a.ninfer
    grep -qF ': /objects/0/offset: schema: ' <<< "$stderr"
    rm -rf a.ninfer* out
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 256.0 16), $(nf_resource r.tok 600 400)]" nf_make a.ninfer
    all_readers 1 schema a.ninfer
}

@test "integer 1e3 in bytes and in a shape -> schema (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 16 9.84e2)]" nf_make a.ninfer
    all_readers 1 schema a.ninfer
    grep -qF ': /objects/1/bytes: schema: ' <<< "$stderr"
    rm -rf a.ninfer* out
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4e0]' 0 16), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    all_readers 1 schema a.ninfer
}

@test "leading zero 0256 -> json (1)" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0256 16), $(nf_resource r.tok 600 400)]" nf_make a.ninfer
    all_readers 1 json a.ninfer
}

@test "18446744073709551616 in offset, bytes, payload_bytes and a shape -> range (1)" {
    local big=18446744073709551616
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok $big 984)]" nf_make a.ninfer
    all_readers 1 range a.ninfer
    grep -qF ': /objects/1/offset: range: ' <<< "$stderr"
    rm -rf a.ninfer* out
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 16 $big)]" nf_make a.ninfer
    all_readers 1 range a.ninfer
    grep -qF ': /objects/1/bytes: range: ' <<< "$stderr"
    rm -rf a.ninfer* out
    NF_FILES="[{\"path\": null, \"payload_bytes\": $big}]" nf_make a.ninfer
    all_readers 1 range a.ninfer
    grep -qF ': /files/0/payload_bytes: range: ' <<< "$stderr"
    rm -rf a.ninfer* out
    NF_OBJECTS="[$(nf_tensor w.a "[2, $big]" 0 16), $(nf_resource r.tok 16 984)]" nf_make a.ninfer
    all_readers 1 range a.ninfer
    grep -qF ': /objects/0/shape/1: range: ' <<< "$stderr"
}

@test "lone surrogate escapes in an ID -> utf8 (1)" {
    local s
    for s in '\\ud800' '\\udfff' '\\ud800\\u0041' '\\udc00\\ud800'; do
        rm -rf a.ninfer* out
        catalog_sed a.ninfer "s/\"id\": \"w.a\"/\"id\": \"w$s\"/"
        all_readers 1 utf8 a.ninfer
    done
}

@test "a surrogate pair escape in an ID is valid" {
    NF_OBJECTS="[$(nf_tensor 'w\ud83d\ude00' '[2, 4]' 0 16), $(nf_resource r.tok 16 984)]" \
    NF_BINDINGS='{"text/a": {"object": "w\ud83d\ude00"}}' nf_make a.ninfer
    run -0 --separate-stderr ninfer-verify a.ninfer
}

@test "U+0000 in an object ID, a reference, a component key, a binding name -> schema (1)" {
    NF_OBJECTS="[$(nf_tensor 'w.a\u0000' '[2, 4]' 0 16), $(nf_resource r.tok 16 984)]" \
    NF_BINDINGS='{"text/a": {"object": "w.a\u0000"}}' nf_make a.ninfer
    all_readers 1 schema a.ninfer
    grep -qF ': /objects/0/id: schema: ' <<< "$stderr"
    rm -rf a.ninfer* out
    NF_BINDINGS='{"text/a": {"object": "w\u0000.a"}}' nf_make a.ninfer
    all_readers 1 schema a.ninfer
    rm -rf a.ninfer* out
    NF_COMPONENTS='{"te\u0000xt": {"config": {}, "resources": {"tokenizer.json": "r.tok"}}}' nf_make a.ninfer
    all_readers 1 schema a.ninfer
    rm -rf a.ninfer* out
    NF_BINDINGS='{"text/a\u0000": {"object": "w.a"}}' \
    NF_USES='[{"parameter": "text/a\u0000", "input": "x"}]' nf_make a.ninfer
    all_readers 1 schema a.ninfer
}

@test "U+0000 in a part path -> files (1)" {
    NF_FILES='[{"path": null, "payload_bytes": 600}, {"path": "a.ninfer.part-0001\u0000", "payload_bytes": 400}]' \
        nf_make a.ninfer 600 400
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_code files
}

@test "byte-order mark -> json (1)" {
    nf_make_catalog a.ninfer "$(printf '\357\273\277')$(nf_catalog)"
    all_readers 1 json a.ninfer
}

@test "non-whitespace after the JSON inside json_bytes -> json (1)" {
    local junk
    for junk in ' x' '{}' ' 0' "$(printf ' \001')"; do
        rm -rf a.ninfer* out
        nf_make_catalog a.ninfer "$(nf_catalog)$junk"
        all_readers 1 json a.ninfer
    done
}

@test "NUL padding inside json_bytes (instead of spaces) -> header (1): json_bytes runs into the fill" {
    # indistinguishable from a json_bytes too large by 64: blamed on the header
    nf_catalog > c.json
    head -c 64 /dev/zero >> c.json
    nf-mkartifact --catalog c.json --payload "$(nf_payload)" -o a.ninfer
    all_readers 1 header a.ninfer
    [[ "$stderr" == *"a.ninfer: header: json_bytes runs past the catalog's JSON value ("*" bytes) into zero bytes: the header's length is too large" ]]
}

@test "trailing whitespace padding inside json_bytes is valid" {
    nf_make a.ninfer -- --json-bytes 3000
    run -0 --separate-stderr ninfer-verify a.ninfer
    run -0 --separate-stderr ninfer-verify - < a.ninfer
}

@test "duplicate member names written with escapes -> duplicate-member (1)" {
    catalog_sed a.ninfer 's/"offset": 0,/"offset": 0, "off\\u0073et": 0,/'
    all_readers 1 duplicate-member a.ninfer
    grep -qF ': /objects/0/offset: duplicate-member: ' <<< "$stderr"
    rm -rf a.ninfer* out
    # at the root ("\u0066iles" is "files") and in open metadata
    NF_EXTRA=', "\u0066iles": []' nf_make a.ninfer
    all_readers 1 duplicate-member a.ninfer
    rm -rf a.ninfer* out
    NF_EXTRA=', "metadata": {"n\u0061me": "a", "name": "b"}' nf_make a.ninfer
    all_readers 1 duplicate-member a.ninfer
}

@test "member names with U+0000 anywhere (metadata, config, roles, records) -> schema (1) at the name" {
    # json-c keys are C strings: "a\u0000b" and "a\u0000c" would both be "a",
    # and the binder would read "hidden_size\u0000x" as hidden_size (two
    # readings of one catalog); the scanner refuses every such name
    NF_EXTRA=', "metadata": {"a\u0000b": 1, "a\u0000c": 2, "a\u0000d": 3}' nf_make a.ninfer
    all_readers 1 schema a.ninfer
    [[ "$stderr" == *": /metadata/a?b: schema: member name \"a\\u0000b\" at byte "*" holds U+0000, which no member name may hold" ]]
    [ "${#stderr_lines[@]}" -eq 1 ]
    local case
    for case in \
        '/components/text/config/hidden_size?x|{"text": {"config": {"architectures": ["LlamaForCausalLM"], "hidden_size\u0000x": 4}, "resources": {"tokenizer.json": "r.tok"}}}' \
        '/components/text/resources/tokenizer.json?|{"text": {"config": {}, "resources": {"tokenizer.json\u0000": "r.tok"}}}' \
        '/components/te?xt|{"te\u0000xt": {"config": {}}}'; do
        rm -rf a.ninfer* out
        NF_COMPONENTS=${case#*|} nf_make a.ninfer
        all_readers 1 schema a.ninfer
        [[ "$stderr" == *": ${case%%|*}: schema: member name "*" holds U+0000, which no member name may hold" ]]
        run -1 --separate-stderr ninfer-bind --check a.ninfer
        [[ "$stderr" == *": ${case%%|*}: schema: "* ]]
    done
    rm -rf a.ninfer* out
    catalog_sed a.ninfer 's/"offset": 0,/"offs\\u0000et": 0, "offset": 0,/'
    all_readers 1 schema a.ninfer
    [[ "$stderr" == *": /objects/0/offs?et: schema: "* ]]
    # an escaped backslash before "u0000" is no U+0000
    rm -rf a.ninfer* out
    NF_EXTRA=', "metadata": {"a\\\\u0000b": 1}' nf_make a.ninfer
    run -0 --separate-stderr ninfer-verify a.ninfer
}

# st_file FILE HEADER — a safetensors file: 8-byte length, HEADER, 32 data bytes
st_file() {
    local n=${#2}
    printf "$(printf '\\x%02x' $((n & 255)) $((n >> 8 & 255)) 0 0 0 0 0 0)" > "$1"
    printf '%s' "$2" >> "$1"
    head -c 32 /dev/zero | tr '\0' '\1' >> "$1"
}

@test "safetensors tensor names with U+0000 -> schema (1): two tensors never alias one name" {
    st_file nul.safetensors '{"x\u0000a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"x\u0000b":{"dtype":"F32","shape":[4],"data_offsets":[16,32]}}'
    cat > m.json <<'E'
{"components": {"text": {"config": {}}}, "bindings": {}, "uses": [],
 "objects": [{"id": "a", "kind": "tensor", "shape": [4], "format": "fp32", "layout": "contiguous_le_v1",
              "source": {"safetensors": "nul.safetensors", "tensor": "x"}}]}
E
    run -1 --separate-stderr ninfer-pack -q -o o.ninfer m.json
    expect_code schema
    [[ "$stderr" == *"nul.safetensors: /x?a: schema: member name \"x\\u0000a\" at byte 1 holds U+0000"* ]]
    [ ! -e o.ninfer ]
    # __metadata__ is a string -> string map
    st_file meta.safetensors '{"__metadata__":{"format":1},"x":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}}'
    sed -i 's/nul.safetensors/meta.safetensors/' m.json
    run -1 --separate-stderr ninfer-pack -q -o o.ninfer m.json
    expect_code schema
    [[ "$stderr" == *"/__metadata__/format: schema: __metadata__ values are strings, not integer"* ]]
}

@test "control characters in names never reach the terminal: ESC, newline and C1 controls are written \\xHH" {
    NF_BINDINGS='{"\u001b[2J\u001b[31mFAKE: OK\u0085\nnext": {"object": "nope"}}' nf_make a.ninfer
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_code reference
    [ "$(grep -c . <<< "$stderr")" -eq 2 ]          # two problems, two lines
    [[ "$stderr" == *'/bindings/\x1b[2J\x1b[31mFAKE: OK\xc2\x85\x0anext/object: reference: '* ]]
    ! grep -q $'\033' <<< "$stderr" || return 1
    # --json keeps the name exactly (JSON escapes it)
    run -1 --separate-stderr ninfer-verify --json a.ninfer
    [[ "$output" == *'"/bindings/\u001b[2J\u001b[31mFAKE: OK'$'\xc2\x85''\nnext/object"'* ]]
}

# ---- size and depth: bounded time and memory -------------------------------------------

@test "100,000 nested arrays -> depth (1), fast" {
    local n=100000
    { printf '{"components": {"text": {"config": {"deep": '
      head -c $n /dev/zero | tr '\0' '['; head -c $n /dev/zero | tr '\0' ']'
      printf '}}}, "objects": [], "bindings": {}, "uses": [], "files": []}'; } > deep.json
    big_artifact a.ninfer deep.json
    SECONDS=0
    run -1 --separate-stderr timeout 20 "$NF_BIN/ninfer-verify" a.ninfer
    expect_code depth
    run -1 --separate-stderr timeout 20 "$NF_BIN/ninfer-verify" - < a.ninfer
    expect_code depth
    run -1 --separate-stderr timeout 20 "$NF_BIN/ninfer-cat" --catalog a.ninfer
    expect_code depth
    [ "$SECONDS" -lt 15 ]
    # the same nesting in an object chain {"a":{"a":...}}
    { printf '{"a":'; for _ in $(seq 2000); do printf '{"a":'; done; printf '0'
      head -c 2001 /dev/zero | tr '\0' '}'; } > deep2.json
    big_artifact b.ninfer deep2.json
    run -1 --separate-stderr ninfer-verify b.ninfer
    expect_code depth
}

@test "a 50 MB object ID is read in bounded time and memory" {
    need_time
    local n=$((50000000 / BIG_DIV)) size
    { printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "'
      head -c $n /dev/zero | tr '\0' 'x'
      printf '", "kind": "tensor", "shape": [1], "format": "bf16", "layout": "contiguous_le_v1", "offset": 0, "bytes": 2}], "bindings": {"a": {"object": "'
      head -c $n /dev/zero | tr '\0' 'x'
      printf '"}}, "uses": [], "files": [{"path": null, "payload_bytes": 2}]}'; } > long.json
    big_artifact a.ninfer long.json
    size=$(nf_size long.json)
    SECONDS=0
    measure v timeout 60 "$NF_BIN/ninfer-verify" a.ninfer
    [ "$status" -eq 0 ] || { cat v.err; false; }
    echo "verify of a ${size}-byte catalog with two ${n}-byte IDs: peak RSS ${kb} KiB, ${SECONDS}s" >&3
    [ "$kb" -lt "$(rss_limit_kb "$size" 6)" ]
    [ "$SECONDS" -lt 30 ]
}

@test "a 50 MB reference to a missing object -> reference (1), one short diagnostic" {
    need_time
    local n=$((50000000 / BIG_DIV)) size
    { printf '%s' "$obj_prefix"
      printf ', "bindings": {"a": {"object": "'
      head -c $n /dev/zero | tr '\0' 'y'
      printf '"}}, "uses": [], "files": [{"path": null, "payload_bytes": 2}]}'; } > ref.json
    big_artifact a.ninfer ref.json
    size=$(nf_size ref.json)
    measure v timeout 60 "$NF_BIN/ninfer-verify" a.ninfer
    [ "$status" -eq 1 ]
    grep -qF ': /bindings/a/object: reference: ' v.err
    # the diagnostic quotes the ID, cut short: stderr stays small
    [ "$(nf_size v.err)" -lt 65536 ]
    [ "$kb" -lt "$(rss_limit_kb "$size" 6)" ]
}

@test "a long name in 1000 diagnostics: stderr and memory stay small" {
    need_time
    { printf '%s' "$obj_prefix"
      printf ', "bindings": {"'
      head -c 5000000 /dev/zero | tr '\0' 'x'
      printf '": {"object": "w"'
      for i in $(seq 1000); do printf ', "u%d": 0' "$i"; done
      printf '}}, "uses": [], "files": [{"path": null, "payload_bytes": 2}]}'; } > many.json
    big_artifact a.ninfer many.json
    SECONDS=0
    measure v timeout 60 "$NF_BIN/ninfer-verify" a.ninfer
    [ "$status" -eq 1 ]
    grep -qF ': schema: unknown member "u1000" in binding' v.err
    echo "1000 diagnostics under a 5 MB name: peak RSS ${kb} KiB, stderr $(nf_size v.err) bytes, ${SECONDS}s" >&3
    [ "$(nf_size v.err)" -lt 10000000 ]
    [ "$kb" -lt "$(rss_limit_kb 5000000 8)" ]
}

@test "200 MB of nested arrays -> depth (1) in bounded memory" {
    need_time
    local n=$((200000000 / BIG_DIV))
    { printf '{"components": ['; head -c $n /dev/zero | tr '\0' '['; } > nest.json
    big_artifact a.ninfer nest.json
    SECONDS=0
    measure v timeout 60 "$NF_BIN/ninfer-verify" a.ninfer
    [ "$status" -eq 1 ]
    grep -qF ': depth: ' v.err
    echo "$n bytes of [: peak RSS ${kb} KiB ($((kb * 1024 / n)).$((kb * 10240 / n % 10))x), ${SECONDS}s" >&3
    [ "$kb" -lt "$(rss_limit_kb $n 4)" ]
    measure s timeout 60 "$NF_BIN/ninfer-verify" - < a.ninfer
    [ "$status" -eq 1 ]
    grep -qF ': depth: ' s.err
    echo "the same on a stream: peak RSS ${kb} KiB" >&3
    [ "$kb" -lt "$(rss_limit_kb $n 4)" ]
    [ "$SECONDS" -lt 60 ]
}

@test "200 MB object of millions of members: read (never refused for its cost) in at most 4x its size" {
    need_time
    local size
    # 14.7 million members "m<i>":0 in metadata (open data: valid if read)
    { printf '%s, "metadata": {' "$small_prefix"
      awk -v n=14700000 'BEGIN { for (i = 0; i < n; i++) printf "\"m%d\":0,", i }'
      printf '"end": 0}}'; } > members.json
    size=$(nf_size members.json)
    [ "$size" -gt 190000000 ]
    big_artifact a.ninfer members.json
    SECONDS=0
    measure v timeout 120 "$NF_BIN/ninfer-verify" a.ninfer
    echo "${size}-byte catalog of 14.7M members: exit $status, peak RSS ${kb} KiB ($((kb * 1024 / size)).$((kb * 10240 / size % 10))x), ${SECONDS}s" >&3
    # DESIGN 14: a catalog within --max-json-bytes is always parsed
    [ "$status" -eq 0 ] || { cat v.err; false; }
    [ "$kb" -lt "$(rss_limit_kb "$size" 4)" ]
}

@test "200 MB array of small objects: read (never refused for its cost) in at most 4x its size" {
    need_time
    local size
    { printf '%s, "provenance": {"x": [' "$small_prefix"
      awk -v n=8000000 'BEGIN { for (i = 0; i < n; i++) printf "{\"kkkkkkkkkkkkkkkkkk\":0},"; }'
      printf '{}]}}'; } > objs.json
    size=$(nf_size objs.json)
    big_artifact a.ninfer objs.json
    measure v timeout 120 "$NF_BIN/ninfer-verify" a.ninfer
    echo "${size}-byte catalog of 8M small objects: exit $status, peak RSS ${kb} KiB" >&3
    [ "$status" -eq 0 ] || { cat v.err; false; }
    [ "$kb" -lt "$(rss_limit_kb "$size" 4)" ]
}
