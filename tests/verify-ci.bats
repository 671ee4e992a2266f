#!/usr/bin/env bats
# What CI users see (issue 11 item 13): ninfer-verify --json counts only
# the digests it checked and lists the others (`digests_unchecked`), a
# digest diagnostic names the file(s) holding the object and carries
# `segments` (what to fetch again), and --check-sums reports a missing file
# as part-missing (exit 3), not as "no line for this file".

load helper

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    # 6 resources of 3000 bytes at 0, 3000, ... over an entry and four parts
    # of 4096 payload bytes each: o1 lies across the entry and part 1, o3
    # wholly in part 2 ([8192, 12288))
    local i objs=""
    for i in 0 1 2 3 4 5; do
        nf_bytes 3000 "o$i.bin"
        objs="$objs${objs:+, }{\"id\": \"o$i\", \"kind\": \"resource\", \"encoding\": \"raw_bytes_v1\", \"source\": {\"file\": \"o$i.bin\"}}"
    done
    printf '{"components": {"text": {"config": {}}}, "objects": [%s], "bindings": {}, "uses": []}' "$objs" > m.json
    ninfer-pack -q --no-sync --max-file-bytes 8K -o a.ninfer m.json
    ninfer-cat --files a.ninfer > files.json
}

# ids ARRAY — the strings of the JSON array member ARRAY of $output, sorted
# and space-separated.
ids() {
    grep -o "\"$1\":\[[^]]*\]" <<< "$output" | sed 's/^[^[]*\[//; s/\]$//' | tr ',' '\n' |
        sed 's/"//g; /^$/d' | sort | tr '\n' ' ' | sed 's/ $//'
}

@test "all there: every digest checked, none unchecked" {
    run -0 --separate-stderr ninfer-verify --json a.ninfer
    [ "$(json_field digests_checked)" -eq 6 ]
    [ "$(ids digests_unchecked)" = "" ]
}

@test "a part missing: only the digests that could be hashed count; the rest are listed" {
    # which objects touch part 1? the layout says: read it from the catalog
    local in1
    in1=$(ninfer-cat --catalog a.ninfer | grep -o '"id":"o[0-9]","kind":"resource","encoding":"raw_bytes_v1","offset":[0-9]*,"bytes":[0-9]*' |
        sed 's/"id":"\(o[0-9]\)".*"offset":\([0-9]*\),"bytes":\([0-9]*\)/\1 \2 \3/' |
        awk '{ if ($2 < 8192 && $2 + $3 > 4096) print $1 }' | sort | tr '\n' ' ' | sed 's/ $//')
    [ -n "$in1" ]
    mv a.ninfer.part-0001 away
    run -3 --separate-stderr ninfer-verify --json a.ninfer
    [ "$(ids digests_unchecked)" = "$in1" ]
    [ "$(json_field digests_checked)" -eq $((6 - $(wc -w <<< "$in1"))) ]
    [[ "$output" == *'"code":"part-missing","pointer":"/files/1","file":"a.ninfer.part-0001"'* ]]
    # the text form says the same count
    run -3 --separate-stderr ninfer-verify a.ninfer
    expect_only_codes part-missing
}

@test "a digest failure wholly in a part names the part, with segments in --json" {
    local off
    off=$(ninfer-cat --catalog a.ninfer | grep -o '"id":"o3"[^}]*"offset":[0-9]*' | sed 's/.*"offset"://')
    # part 2 holds logical [8192, 12288); its payload starts at file offset 4096
    [ "$off" -ge 8192 ]
    [ $((off + 3000)) -le 12288 ]
    local foff=$((4096 + off - 8192))
    nf_flip a.ninfer.part-0002 $((foff + 7))
    run -1 --separate-stderr ninfer-verify a.ninfer
    expect_only_codes digest
    grep -qF "ninfer-verify: a.ninfer.part-0002: /objects/3: digest: object \"o3\"" <<< "$stderr"
    grep -qF "its bytes: a.ninfer.part-0002 bytes [$foff, +3000)" <<< "$stderr"
    run -1 --separate-stderr ninfer-verify --json a.ninfer
    [[ "$output" == *"\"file\":\"a.ninfer.part-0002\",\"message\":\"object \\\"o3\\\""* ]]
    [[ "$output" == *"\"segments\":[{\"file\":\"a.ninfer.part-0002\",\"file_offset\":$foff,\"bytes\":3000}]"* ]]
    [ "$(json_field digests_checked)" -eq 6 ]
}

@test "a digest failure across two files: the message and segments name both" {
    local off
    off=$(ninfer-cat --catalog a.ninfer | grep -o '"id":"o1"[^}]*"offset":[0-9]*' | sed 's/.*"offset"://')
    [ "$off" -lt 4096 ]
    [ $((off + 3000)) -gt 4096 ]
    # a byte of o1 in part 1 (logical 4100)
    nf_flip a.ninfer.part-0001 $((4096 + 4))
    run -1 --separate-stderr ninfer-verify --json a.ninfer
    local e=$((4096 - off))
    [[ "$output" == *"\"segments\":[{\"file\":\"a.ninfer\",\"file_offset\":$((4096 + off)),\"bytes\":$e},{\"file\":\"a.ninfer.part-0001\",\"file_offset\":4096,\"bytes\":$((3000 - e))}]"* ]]
    [[ "$output" == *'"code":"digest","pointer":"/objects/1","file":"a.ninfer"'* ]]
    run -1 --separate-stderr ninfer-verify a.ninfer
    grep -qF "its bytes: a.ninfer bytes [$((4096 + off)), +$e), a.ninfer.part-0001 bytes [4096, +$((3000 - e)))" <<< "$stderr"
}

@test "--check-sums: a missing part is part-missing (3), not a missing line (1)" {
    ninfer-verify --sums a.ninfer > SUMS
    run -0 --separate-stderr ninfer-verify --check-sums SUMS a.ninfer
    mv a.ninfer.part-0003 away
    run -3 --separate-stderr ninfer-verify --check-sums SUMS a.ninfer
    expect_only_codes part-missing
    [ "$(grep -c 'part-missing' <<< "$stderr")" -eq 1 ]
    [ "$(grep -c 'no line' <<< "$stderr")" -eq 0 ]
    # a present file without a line is still a digest error
    mv away a.ninfer.part-0003
    grep -v 'part-0002' SUMS > SUMS2
    run -1 --separate-stderr ninfer-verify --check-sums SUMS2 a.ninfer
    expect_only_codes digest
    grep -qF 'a.ninfer.part-0002: digest: no line for this file in SUMS2' <<< "$stderr"
}
