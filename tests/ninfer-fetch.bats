#!/usr/bin/env bats
# ninfer-fetch.bats — downloads (ninfer-fetch(1)) from a real nginx this file
# starts on a free loopback port: the whole set or a component's files, the
# result byte for byte and verified, SHA256SUMS, the JSON summary, the
# writer's rules for the target, the private resume directory and reruns.
# Faults in the middle of a download are in http-faults.bats.

load helper
. "$BATS_TEST_DIRNAME/lib/nginx.bash"

setup_file() {
    nf_nginx_available || return 0
    local d=$BATS_FILE_TMPDIR w=$BATS_FILE_TMPDIR/ng/www
    mkdir -p "$w/s" "$w/nd" "$w/comp"
    (
        cd "$d" || exit 1
        nf-mkckpt ck > /dev/null && ninfer-import ck > m.json &&
            ninfer-pack -q -o one.ninfer m.json &&
            ninfer-split -q --max-file-bytes 1M -o "$w/s/m.ninfer" one.ninfer &&
            ninfer-split -q --no-digests --max-file-bytes 2M -o "$w/nd/m.ninfer" one.ninfer
        head -c 3000000 /dev/zero | openssl enc -aes-128-ctr -nosalt \
            -K 000102030405060708090a0b0c0d0e0f -iv 0 > pay.bin 2> /dev/null
        printf '%s' '{"components":{"text":{"config":{},"resources":{"tok":"r.tok"}},' \
            '"extra":{"config":{},"resources":{"x":"r.x"}}},"objects":[' \
            '{"id":"r.tok","kind":"resource","encoding":"raw_bytes_v1","bytes":1500000,"source":{"file":"pay.bin","offset":0}},' \
            '{"id":"r.x","kind":"resource","encoding":"raw_bytes_v1","bytes":1500000,"source":{"file":"pay.bin","offset":1500000}}' \
            '],"bindings":{},"uses":[]}' > comp.json
        ninfer-pack -q --max-file-bytes 1M -o "$w/comp/c.ninfer" comp.json
    ) || return 1
    nf_nginx_start "$d/ng" || return 1
    echo "$NF_HTTP_PORT" > "$d/port"
}

teardown_file() {
    nf_nginx_stop "$BATS_FILE_TMPDIR/ng"
}

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    nf_nginx_available || skip "nginx is not installed (Debian package nginx-light)"
    W=$BATS_FILE_TMPDIR/ng/www
    H=http://127.0.0.1:$(cat "$BATS_FILE_TMPDIR/port")
    unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY NINFER_TOKEN
}

same_set() { # same_set DIR — out/ holds DIR's files byte for byte
    local f
    for f in "$1"/*; do cmp "$f" "out/$(basename "$f")"; done
}

@test "the whole set, byte for byte, verified; --sums and --json; the resume directory gone" {
    run -0 --separate-stderr ninfer-fetch --json --sums out/SHA256SUMS "$H/s/m.ninfer" -o out/m.ninfer
    same_set "$W/s"
    [ "$(json_field files)" = 5 ]
    [ "$(json_field digests_checked)" = 24 ]
    [ "$(json_field resumed_bytes)" = 0 ]
    [ "$(json_field requests)" = 10 ]
    [ "$(json_field exit)" = 0 ]
    [ "$(json_field file)" = "$H/s/m.ninfer" ]
    [ "$(json_field total_bytes)" = "$(cat "$W"/s/* | wc -c)" ]
    (cd out && sha256sum -c --quiet SHA256SUMS)
    [ "$(wc -l < out/SHA256SUMS)" = 5 ]
    run -0 ninfer-verify -q out/m.ninfer
    [ ! -e out/.m.ninfer.ninfer-fetch ]
    no_temporaries out
}

@test "--component: only the files the selection needs; the result passes verify --component" {
    run -0 --separate-stderr ninfer-fetch -q --component text "$H/comp/c.ninfer" -o out/c.ninfer
    local want
    want=$(ninfer-cat --files --component text "$W/comp/c.ninfer" | sed -n 's/.*"path": "\(.*\)".*/\1/p' | sort)
    [ "$(ls out | sort)" = "$want" ]
    [ "$(ls out | wc -l)" -lt "$(ls "$W/comp" | wc -l)" ]
    for f in out/*; do cmp "$f" "$W/comp/$(basename "$f")"; done
    run -0 ninfer-verify -q --component text out/c.ninfer
    run -3 --separate-stderr ninfer-verify -q out/c.ninfer
    expect_only_codes part-missing
}

@test "the target follows the writers' rules: an existing entry needs --force, which replaces the set" {
    ninfer-fetch -q "$H/s/m.ninfer" -o out/m.ninfer
    run -3 --separate-stderr ninfer-fetch -q "$H/s/m.ninfer" -o out/m.ninfer
    [ "$stderr" = "ninfer-fetch: out/m.ninfer: io: output exists; use --force to replace it" ]
    # refused before any payload: no resume directory left
    [ ! -e out/.m.ninfer.ninfer-fetch ]
    # --force: the 2 MiB set replaces the 1 MiB one, its surplus parts gone
    run -0 --separate-stderr ninfer-fetch -q --force "$H/nd/m.ninfer" -o out/m.ninfer
    [ "$(ls out)" = "$(ls "$W/nd")" ]
    same_set "$W/nd"
    # -o - and a local operand are usage errors
    run -2 --separate-stderr ninfer-fetch "$H/s/m.ninfer" -o -
    run -2 --separate-stderr ninfer-fetch "$W/s/m.ninfer" -o x.ninfer
    run -2 --separate-stderr ninfer-fetch "$H/s/m.ninfer"
}

@test "no digests: fetched with a warning; --require-digests refuses it (1) before any payload" {
    run -0 --separate-stderr ninfer-fetch "$H/nd/m.ninfer" -o out/m.ninfer
    [[ "$stderr" == *"warning: no digests (metadata.integrity)"* ]]
    same_set "$W/nd"
    run -1 --separate-stderr ninfer-fetch --require-digests "$H/nd/m.ninfer" -o out2/m.ninfer
    expect_only_codes integrity
    [ ! -e out2/m.ninfer ]
}

@test "the resume directory: a symlink, another mode or a foreign file there is refused, never followed" {
    mkdir -p out elsewhere
    ln -s "$PWD/elsewhere" out/.m.ninfer.ninfer-fetch
    run -3 --separate-stderr ninfer-fetch -q "$H/s/m.ninfer" -o out/m.ninfer
    [[ "$stderr" == *"out/.m.ninfer.ninfer-fetch: io: this is not a private resume directory"* ]]
    [ -z "$(ls -A elsewhere)" ]
    [ ! -e out/m.ninfer ]
    rm out/.m.ninfer.ninfer-fetch
    mkdir -m 755 out/.m.ninfer.ninfer-fetch
    run -3 --separate-stderr ninfer-fetch -q "$H/s/m.ninfer" -o out/m.ninfer
    expect_only_codes io
    chmod 700 out/.m.ninfer.ninfer-fetch
    echo mine > out/.m.ninfer.ninfer-fetch/notes
    run -3 --separate-stderr ninfer-fetch -q "$H/s/m.ninfer" -o out/m.ninfer
    [[ "$stderr" == *"out/.m.ninfer.ninfer-fetch/notes: io: not a file of ninfer-fetch's resume directory"* ]]
    [ "$(cat out/.m.ninfer.ninfer-fetch/notes)" = mine ]
    rm out/.m.ninfer.ninfer-fetch/notes
    ln -s /etc/passwd out/.m.ninfer.ninfer-fetch/f1
    run -3 --separate-stderr ninfer-fetch -q "$H/s/m.ninfer" -o out/m.ninfer
    expect_only_codes io
    rm out/.m.ninfer.ninfer-fetch/f1
    run -0 ninfer-fetch -q "$H/s/m.ninfer" -o out/m.ninfer
    same_set "$W/s"
}

@test "a rerun checks what the last one left: another artifact at the URL starts over, --no-resume too" {
    mkdir -p "$W/re"
    cp "$W/s/"* "$W/re/"
    # a run left its state: pretend it was cut (the frontier and files kept)
    mkdir -m 700 -p out/.m.ninfer.ninfer-fetch
    printf 'ninfer-fetch-state 1\nentry %064d\nfrontier 4000000\nurl %s\ncomponent -\n' 0 \
        "$H/re/m.ninfer" > out/.m.ninfer.ninfer-fetch/state
    head -c 100 /dev/zero > out/.m.ninfer.ninfer-fetch/f1
    # the entry's header and catalog are not the saved ones: nothing kept
    run -0 --separate-stderr ninfer-fetch --json "$H/re/m.ninfer" -o out/m.ninfer
    [ "$(json_field resumed_bytes)" = 0 ]
    same_set "$W/re"
    rm -r out
    # --no-resume empties what is there
    mkdir -m 700 -p out/.m.ninfer.ninfer-fetch
    head -c 100 /dev/urandom > out/.m.ninfer.ninfer-fetch/f0
    run -0 --separate-stderr ninfer-fetch --json --no-resume "$H/re/m.ninfer" -o out/m.ninfer
    [ "$(json_field resumed_bytes)" = 0 ]
    same_set "$W/re"
}

@test "a bad option, a bad --component and an unreachable server" {
    run -2 --separate-stderr ninfer-fetch --bogus x
    [ "$stderr" = "ninfer-fetch: usage: unrecognized option '--bogus' (see 'ninfer-fetch --help')" ]
    run -2 --separate-stderr ninfer-fetch --component '' "$H/s/m.ninfer" -o out/m.ninfer
    run -2 --separate-stderr ninfer-fetch --max-json-bytes 1XB "$H/s/m.ninfer" -o out/m.ninfer
    [ "$stderr" = "ninfer-fetch: usage: bad --max-json-bytes '1XB': unknown suffix (K M G T, KiB MiB GiB TiB, KB MB GB TB) (see 'ninfer-fetch --help')" ]
    run -1 --separate-stderr ninfer-fetch --component nope "$H/s/m.ninfer" -o out/m.ninfer
    expect_code component-missing
    [ ! -e out/m.ninfer ]
    run -3 --separate-stderr ninfer-fetch --retries 0 "http://127.0.0.1:1/m.ninfer" -o out/m.ninfer
    expect_only_codes io
    [ ! -e out/m.ninfer ]
    run -0 ninfer-fetch --help
    [[ "$output" == "usage: ninfer-fetch [OPTIONS] URL -o PATH"* ]]
}
