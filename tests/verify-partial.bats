#!/usr/bin/env bats
# A CI job's verdicts (issue 17 item 4 and "what a CI engineer needs"):
# --sums and --check-sums honour --component (exactly the files the
# selection needs, each present; files outside ignored), --sums never
# prints a partial list, each file is read once for its sum and its
# objects' digests, --require-digests, the `incomplete` code, and the
# --json "verdict".

load helper

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    # six resources of 64 KiB, one per file (--max-file-bytes 68K: the
    # entry and each part hold 65536 payload bytes): text needs o0 and o1
    # (the entry and part 1), vision o4 and o5 (parts 4 and 5)
    local i objs=""
    for i in 0 1 2 3 4 5; do
        nf_bytes 65536 "o$i.bin"
        objs="$objs${objs:+, }{\"id\": \"o$i\", \"kind\": \"resource\", \"encoding\": \"raw_bytes_v1\", \"source\": {\"file\": \"o$i.bin\"}}"
    done
    printf '{"components": {"text": {"config": {}, "resources": {"a": "o0", "b": "o1"}}, "vision": {"config": {}, "resources": {"c": "o4", "d": "o5"}}}, "objects": [%s], "bindings": {}, "uses": []}' "$objs" > m.json
    ninfer-pack -q --no-sync --max-file-bytes 68K -o a.ninfer m.json
    [ -e a.ninfer.part-0005 ]
    [ ! -e a.ninfer.part-0006 ]
    ninfer-verify --sums a.ninfer > SUMS
}

@test "a partial download: --component text --sums lists exactly the entry and part 1, which sha256sum -c accepts" {
    mkdir dl
    cp a.ninfer a.ninfer.part-0001 SUMS dl/
    cd dl
    run -0 --separate-stderr ninfer-verify --component text --sums a.ninfer
    [ "${#lines[@]}" -eq 2 ]
    [ "${lines[0]}" = "$(sha256sum a.ninfer)" ]
    [ "${lines[1]}" = "$(sha256sum a.ninfer.part-0001)" ]
    # the publisher's full SHA256SUMS: the lines of the files outside are ignored
    local before
    before=$(nf_snapshot .)
    run -0 --separate-stderr ninfer-verify --component text --check-sums SUMS a.ninfer
    [ -z "$stderr" ]
    [ "$output" = "a.ninfer: OK (2 digests checked)" ]
    # without --component the missing parts are what they are
    run -3 --separate-stderr ninfer-verify --check-sums SUMS a.ninfer
    expect_only_codes part-missing
    run -3 --separate-stderr ninfer-verify --sums a.ninfer
    [ -z "$output" ]
    # a damaged file outside the selection is ignored too
    printf 'junk' > a.ninfer.part-0004
    run -0 --separate-stderr ninfer-verify --component text --check-sums SUMS a.ninfer
    rm a.ninfer.part-0004
    expect_unchanged "$before"
}

@test "--component with a needed file missing, short, unlisted or different: the right code, and --sums prints nothing" {
    mkdir dl
    cp a.ninfer a.ninfer.part-0004 a.ninfer.part-0005 SUMS dl/
    cd dl
    # text needs part 1: missing
    run -3 --separate-stderr ninfer-verify --component text --sums a.ninfer
    [ -z "$output" ]
    expect_only_codes part-missing
    grep -qF 'a.ninfer.part-0001: /files/1: part-missing: ' <<< "$stderr"
    run -3 --separate-stderr ninfer-verify --component text --check-sums SUMS a.ninfer
    expect_only_codes part-missing
    # vision's files are all here
    run -0 --separate-stderr ninfer-verify --component vision --sums a.ninfer
    [ "${#lines[@]}" -eq 3 ]
    [ "${lines[2]}" = "$(sha256sum a.ninfer.part-0005)" ]
    # short: incomplete (1)
    head -c 10000 ../a.ninfer.part-0005 > a.ninfer.part-0005
    run -1 --separate-stderr ninfer-verify --component vision --sums a.ninfer
    [ -z "$output" ]
    expect_only_codes incomplete
    grep -qF 'a.ninfer.part-0005: /files/5: incomplete: part is 10000 bytes; files[5] says 69632' <<< "$stderr"
    cp ../a.ninfer.part-0005 .
    # a needed file without a line, or with another sum
    grep -v 'part-0004' SUMS > S2
    run -1 --separate-stderr ninfer-verify --component vision --check-sums S2 a.ninfer
    expect_only_codes digest
    grep -qF 'a.ninfer.part-0004: digest: no line for this file in S2' <<< "$stderr"
    # part 5's line with another sum (all zeros)
    sed '/part-0005$/s/^[0-9a-f]*/0000000000000000000000000000000000000000000000000000000000000000/' SUMS > S3
    ! cmp -s SUMS S3
    run -1 --separate-stderr ninfer-verify --component vision --check-sums S3 a.ninfer
    expect_only_codes digest
    grep -qF "a.ninfer.part-0005: digest: sha256 $(nf_sha256 a.ninfer.part-0005) differs from S3's" <<< "$stderr"
}

@test "--check-sums from a pipe (/dev/stdin, <(...), -): names are relative to the working directory" {
    # the directory of /dev/stdin or /dev/fd/63 is no place the names were
    # written for; sha256sum -c reads them from the working directory too
    run -0 --separate-stderr bash -c 'cat SUMS | ninfer-verify --check-sums /dev/stdin a.ninfer'
    [ "$output" = "a.ninfer: OK (6 digests checked)" ]
    run -0 --separate-stderr bash -c 'ninfer-verify --check-sums <(cat SUMS) a.ninfer'
    [ "$output" = "a.ninfer: OK (6 digests checked)" ]
    run -0 --separate-stderr bash -c 'ninfer-verify --check-sums - a.ninfer < SUMS'
    # a sums file that is a file (or a named FIFO) keeps its directory
    mkdir dl
    cp a.ninfer* SUMS dl/
    run -0 --separate-stderr ninfer-verify --check-sums dl/SUMS dl/a.ninfer
    mkfifo dl/FIFO
    cat SUMS > dl/FIFO &
    run -0 --separate-stderr ninfer-verify --check-sums dl/FIFO dl/a.ninfer
    wait
    # and a pipe's names that do not match are still a digest error (1)
    run -1 --separate-stderr bash -c 'ninfer-verify --check-sums <(sed "s/  /  dl\//" SUMS) a.ninfer'
    expect_only_codes digest
}

@test "--sums of several operands: all or nothing (no partial sums file)" {
    cp a.ninfer.part-0003 keep
    truncate -s -1 a.ninfer.part-0003
    NF_P=1000 nf_make b.ninfer
    run -1 --separate-stderr ninfer-verify --sums b.ninfer a.ninfer
    [ -z "$output" ]
    mv keep a.ninfer.part-0003
    run -0 --separate-stderr ninfer-verify --sums b.ninfer a.ninfer
    [ "${#lines[@]}" -eq 7 ]
    [ "${lines[0]}" = "$(sha256sum b.ninfer)" ]
}

@test "--sums and --check-sums read each file once: the sums and the objects' digests in one pass" {
    need_sigat
    # the files hold 6 * (4096 + 65536) bytes; reading them once, plus the
    # catalog at open, the fill checks and OpenSSL's configuration file,
    # stays under that + 64K; a digest pass and then a whole-file pass would
    # read 384K more
    local total limit
    total=$(cat a.ninfer a.ninfer.part-* | wc -c)
    [ "$total" -eq $((6 * 69632)) ]
    limit=$((total + 65536))
    run -0 --separate-stderr nf_sigat "read:$limit" KILL ninfer-verify --threads 1 --sums a.ninfer
    [ "$output" = "$(cat SUMS)" ]
    # (--check-sums takes its files' sums from the same pass)
    run -0 --separate-stderr ninfer-verify --threads 1 --check-sums SUMS a.ninfer
    [ "$output" = "a.ninfer: OK (6 digests checked)" ]
    # and the sums are still whole-file sums when objects span files
    ninfer-pack -q --no-sync --max-file-bytes 50K -o c.ninfer m.json
    run -0 --separate-stderr ninfer-verify --threads 2 --sums c.ninfer
    [ "$output" = "$(sha256sum c.ninfer c.ninfer.part-*)" ]
    run -0 --separate-stderr ninfer-verify --threads 2 c.ninfer
    [ "$output" = "c.ninfer: OK (6 digests checked)" ]
    # fewer files than threads: a second thread hashes the objects beside the read
    ninfer-pack -q --no-sync -o one.ninfer m.json
    run -0 --separate-stderr ninfer-verify --threads 4 --sums one.ninfer
    [ "$output" = "$(sha256sum one.ninfer)" ]
    nf_flip one.ninfer $((4096 * 2 + 65536 * 3 + 5))
    run -1 --separate-stderr ninfer-verify --threads 4 --sums one.ninfer
    expect_only_codes digest
    grep -qF '/objects/3: digest: object "o3"' <<< "$stderr"
}

@test "--json verdicts: ok, missing, incomplete, corrupt, foreign, invalid; a --component run lists what it checked" {
    local v
    run -0 --separate-stderr ninfer-verify --json a.ninfer
    [ "$(json_field verdict)" = ok ]
    run -0 --separate-stderr ninfer-verify --json --component text a.ninfer
    [ "$(json_field verdict)" = ok ]
    [[ "$output" == *'"components":["text"],"objects_outside":["o2","o3","o4","o5"],"files_checked":[{"index":0,'*'{"index":1,'*'"file_bytes":69632}]'* ]]
    cp a.ninfer.part-0002 p2
    # missing
    mv a.ninfer.part-0002 away
    run -3 --separate-stderr ninfer-verify --json a.ninfer
    [ "$(json_field verdict)" = missing ]
    run -3 --separate-stderr ninfer-verify --json nothing.ninfer
    [ "$(json_field verdict)" = missing ]
    # incomplete: shorter than its table says (longer stays length: invalid)
    head -c 5000 away > a.ninfer.part-0002
    run -1 --separate-stderr ninfer-verify --json a.ninfer
    [ "$(json_field verdict)" = incomplete ]
    [[ "$output" == *'"code":"incomplete","pointer":"/files/2","file":"a.ninfer.part-0002","message":"part is 5000 bytes; files[2] says 69632"'* ]]
    cat away > a.ninfer.part-0002
    printf x >> a.ninfer.part-0002
    run -1 --separate-stderr ninfer-verify --json a.ninfer
    [ "$(json_field verdict)" = invalid ]
    [[ "$output" == *'"code":"length"'* ]]
    # corrupt: a digest mismatch
    cp away a.ninfer.part-0002
    nf_flip a.ninfer.part-0002 5000
    run -1 --separate-stderr ninfer-verify --json a.ninfer
    [ "$(json_field verdict)" = corrupt ]
    # foreign: another artifact's part
    ninfer-pack -q --no-sync --max-file-bytes 68K -o b.ninfer m.json
    cp b.ninfer.part-0002 a.ninfer.part-0002
    run -1 --separate-stderr ninfer-verify --json a.ninfer
    [ "$(json_field verdict)" = foreign ]
    cp p2 a.ninfer.part-0002
    run -0 --separate-stderr ninfer-verify --json a.ninfer
    [ "$(json_field verdict)" = ok ]
}

@test "--require-digests: no digest checked is integrity (1); --no-digests with it is usage (2)" {
    ninfer-pack -q --no-sync --no-digests -o n.ninfer m.json
    run -0 --separate-stderr ninfer-verify n.ninfer
    [ "$output" = "n.ninfer: OK (0 digests checked)" ]
    run -1 --separate-stderr ninfer-verify --require-digests n.ninfer
    [ -z "$output" ]
    [ "$stderr" = "ninfer-verify: n.ninfer: /metadata/integrity: integrity: no object digest was checked (metadata.integrity has none for what was checked); --require-digests asks for one at least" ]
    run -1 --separate-stderr ninfer-verify --require-digests --json n.ninfer
    [ "$(json_field verdict)" = invalid ]
    run -1 --separate-stderr ninfer-verify --require-digests - < n.ninfer
    expect_only_codes integrity
    run -0 --separate-stderr ninfer-verify --require-digests a.ninfer
    [ "$output" = "a.ninfer: OK (6 digests checked)" ]
    run -2 --separate-stderr ninfer-verify --require-digests --no-digests a.ninfer
    expect_only_codes usage
    # digests that could not be checked because their files are missing:
    # the run fails for what is missing (3, verdict missing), not integrity
    mkdir dl
    cp a.ninfer a.ninfer.part-0001 dl/
    run -3 --separate-stderr ninfer-verify --require-digests --component vision dl/a.ninfer
    expect_only_codes part-missing
    run -3 --separate-stderr ninfer-verify --require-digests --component vision --json dl/a.ninfer
    [ "$(json_field verdict)" = missing ]
    # and one cut short: incomplete (1), still no integrity
    head -c 5000 a.ninfer.part-0004 > dl/a.ninfer.part-0004
    cp a.ninfer.part-0005 dl/
    truncate -s 5000 dl/a.ninfer.part-0005
    run -1 --separate-stderr ninfer-verify --require-digests --component vision dl/a.ninfer
    expect_only_codes incomplete
}

@test "--progress ends its line before the result" {
    # one hashing thread: it reports the last chunk itself (done = total)
    run -0 bash -c 'ninfer-verify --threads 1 --progress a.ninfer 2>&1'
    [ "${#lines[@]}" -eq 2 ]
    [[ "${lines[0]}" == *"ninfer-verify: hashing: "* ]]
    [ "${lines[1]}" = "a.ninfer: OK (6 digests checked)" ]
    run -1 bash -c 'truncate -s -1 a.ninfer.part-0005; ninfer-verify --threads 1 --progress a.ninfer 2>&1'
    [[ "${lines[-1]}" == "ninfer-verify: a.ninfer.part-0005: /files/5: incomplete: "* ]]
}
