#!/usr/bin/env bats
# Names from a catalog (object IDs, binding names, format and layout names)
# and operand paths in the commands' text outputs: written as diagnostics
# write them (nf_text_escape: controls, DEL, C1 and invalid UTF-8 as \xHH),
# and in a listing's fields the separators too (',' '\' '"'), so that an ID
# holding ESC, TAB, LF, ',' or '"' can neither forge a line or a field nor
# drive the terminal. --json keeps every name exactly (JSON escapes it).

load helper

# A catalog whose tensor ID and binding name hold ESC, TAB, LF, ',' and '"'.
hostile_names() {
    NF_OBJECTS="[$(nf_tensor 'w\u001b[31m,x\ty\nz\"' '[2, 4]' 0 16), $(nf_resource r.tok 16 984)]" \
    NF_BINDINGS='{"text/a\tb\u001b]0;t\u0007": {"object": "w\u001b[31m,x\ty\nz\""}}' \
    NF_USES='[]' nf_make "$1"
}

@test "bind's listing: one line per parameter, six tab-separated fields, IDs escaped" {
    hostile_names a.ninfer
    run -0 --separate-stderr ninfer-verify a.ninfer   # names are free but for U+0000
    run -0 --separate-stderr ninfer-bind a.ninfer
    [ "${#lines[@]}" -eq 1 ]
    [ "$(awk -F'\t' '{ print NF }' <<< "$output")" -eq 6 ]
    [ "$output" = 'text/a\x09b\x1b]0;t\x07	2x4	8	bf16/contiguous_le_v1	w\x1b[31m\x2cx\x09y\x0az\x22	view' ]
    ! grep -q $'\033' <<< "$output" || return 1
    # --json: the names as they are
    run -0 --separate-stderr ninfer-bind --json a.ninfer
    [[ "$output" == *'"name": "text/a\tb\u001b]0;t\u0007"'* ]]
    [[ "$output" == *'"parents": ['$'\n''      "w\u001b[31m,x\ty\nz\""'$'\n''    ]'* ]]
}

@test "bind's listing: a name holding a backslash escape cannot pass for an escaped byte" {
    NF_BINDINGS='{"text/a\\x09b": {"object": "w.a"}}' NF_USES='[]' nf_make a.ninfer
    run -0 --separate-stderr ninfer-bind a.ninfer
    [ "$output" = 'text/a\x5cx09b	2x4	8	bf16/contiguous_le_v1	w.a	view' ]
    # a comma in a format name splits no list
    rm -f a.ninfer*
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16 'bf16,fp32'), $(nf_resource r.tok 16 984)]" \
        NF_USES='[]' nf_make a.ninfer
    run -0 --separate-stderr ninfer-bind a.ninfer
    [ "$output" = 'text/a	2x4	8	bf16\x2cfp32/contiguous_le_v1	w.a	view' ]
}

@test "bind --check, verify: the operand's path in OK lines is escaped as in diagnostics" {
    nf-mkckpt ckpt > /dev/null
    ninfer-import ckpt > m.json
    local p=$'x\033[2Jy.ninfer'
    ninfer-pack -q -o "$p" m.json
    run -0 --separate-stderr ninfer-verify "$p"
    [[ "$output" == 'x\x1b[2Jy.ninfer: OK ('* ]]
    run -0 --separate-stderr ninfer-bind --check "$p"
    [[ "$output" == 'x\x1b[2Jy.ninfer: OK ('*' parameters, '*' uses)' ]]
    ! grep -q $'\033' <<< "$output" || return 1
}

@test "pack --report: an object ID with a tab or ESC splits no column" {
    printf '{"components": {"text": {"config": {}}}, "bindings": {}, "uses": [], "objects": [{"id": "w\\t\\u001b[1mx", "kind": "tensor", "shape": [1, 32], "format": "q8_g32_fp16", "layout": "row_split_k128_v1", "source": {"values": [%s]}}]}\n' \
        "$(seq -s, 1 32)" > m.json
    run -0 --separate-stderr ninfer-pack -q --report -o a.ninfer m.json
    [ "${#lines[@]}" -eq 2 ]
    [ "$(awk -F'\t' 'NR == 2 { print NF }' <<< "$output")" -eq 8 ]
    [[ "${lines[1]}" == 'w\x09\x1b[1mx	q8_g32_fp16	32	'* ]]
    ! grep -q $'\033' <<< "$output" || return 1
}

@test "bench's table and CSV: an object ID with ESC, TAB, LF, ',' or '\"' forges no field or line" {
    hostile_names a.ninfer
    run -0 --separate-stderr ninfer-bench a.ninfer --iters 1 --warmup 0 --threads 1 --csv
    # the header and one row of 24 fields; the ID quoted (RFC 4180), its
    # controls and backslashes as \xHH
    [ "${#lines[@]}" -eq 2 ]
    [[ "${lines[1]}" == 'cpu,gemv,a16,bf16,contiguous_le_v1,"w\x1b[31m,x\x09y\x0az""'\"',2,4,1,16,1,'* ]]
    [ "$(sed 's/"[^"]*\("[^"]*"\)*"//' <<< "${lines[1]}" | awk -F, '{ print NF }')" -eq 24 ]
    ! grep -q $'\033' <<< "$output" || return 1
    # the table: one line for the case, the ID escaped as in bind's listing
    run -0 --separate-stderr ninfer-bench a.ninfer --iters 1 --warmup 0 --threads 1
    [ "${#lines[@]}" -eq 3 ]
    [[ "${lines[2]}" =~ ^cpu\ +gemv\ +a16\ +bf16\ +contiguous_le_v1\ +'w\x1b[31m\x2cx\x09y\x0az\x22'\ +2\ +4\ +1\  ]]
    ! grep -q $'\033' <<< "$output" || return 1
}
