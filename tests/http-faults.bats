#!/usr/bin/env bats
# http-faults.bats — a hostile or failing server (ninfer(5) ARTIFACTS OVER
# HTTP): nf-httpfault, a small fault-injecting proxy (tests/tools), between
# the client and a real nginx this file starts on a free loopback port. Each
# case asserts the exit status, the diagnostic, the bytes, and that
# ninfer-fetch publishes nothing partial. Retries wait 0.05 s here
# (NINFER_HTTP_BACKOFF) and stalls one second (--stall-timeout 1).

load helper
. "$BATS_TEST_DIRNAME/lib/nginx.bash"

setup_file() {
    nf_nginx_available || return 0
    local d=$BATS_FILE_TMPDIR
    mkdir -p "$d/ng/www/s"
    (
        cd "$d" || exit 1
        nf-mkckpt ck > /dev/null && ninfer-import ck > m.json &&
            ninfer-pack -q -o one.ninfer m.json &&
            ninfer-split -q --max-file-bytes 1M -o "$d/ng/www/s/m.ninfer" one.ninfer
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
    NF_HTTP_PORT=$(cat "$BATS_FILE_TMPDIR/port")
    W=$BATS_FILE_TMPDIR/ng/www
    LOG=$BATS_FILE_TMPDIR/ng/logs/access.log
    unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY NINFER_TOKEN
    export NINFER_HTTP_BACKOFF=0.05
}

teardown() {
    nf_proxy_stop "$BATS_TEST_TMPDIR/px"
}

# a copy of the served set of this test's own (for faults that change it)
own_set() {
    OWN=fx$BATS_TEST_NUMBER
    mkdir -p "$W/$OWN"
    cp "$W/s/"m.ninfer* "$W/$OWN/"
}

# nothing of a fetch to out/ published: no entry, no part
nothing_published() {
    [ ! -e out/m.ninfer ]
    [ -z "$(ls out 2> /dev/null | grep -v '^\.' || true)" ]
}

@test "a connection cut after N bytes is resumed from the last byte received: the bytes are right" {
    nf_proxy_start px 'cut=300000@part-0002#2'
    run -0 --separate-stderr ninfer-verify --json "$NF_PROXY/s/m.ninfer"
    [ "$(json_field digests_checked)" = 24 ]
    [ "$(json_field retries)" = 1 ]
    grep -q 'GET /s/m.ninfer.part-0002 range=bytes=304096-1048575 .* -> 206$' px.log
    # a fetch through the same cut: the same files, byte for byte
    nf_proxy_stop px
    nf_proxy_start px 'cut=300000@part-0002#2'
    run -0 --separate-stderr ninfer-fetch -q "$NF_PROXY/s/m.ninfer" -o out/m.ninfer
    local f
    for f in m.ninfer m.ninfer.part-0001 m.ninfer.part-0002 m.ninfer.part-0003 m.ninfer.part-0004; do
        cmp "out/$f" "$W/s/$f"
    done
    [ ! -e out/.m.ninfer.ninfer-fetch ]
}

@test "an interrupted fetch resumes: what was proven is kept, the rest fetched, the set published once" {
    nf_proxy_start px 'cut=300000@part-0003#2'
    run -3 --separate-stderr ninfer-fetch -q --retries 0 "$NF_PROXY/s/m.ninfer" -o out/m.ninfer
    expect_only_codes io
    [[ "$stderr" == *"$NF_PROXY/s/m.ninfer.part-0003: io: "*"gave up after 0 retries"* ]]
    nothing_published
    [ -d out/.m.ninfer.ninfer-fetch ]
    [ "$(stat -c %a out/.m.ninfer.ninfer-fetch)" = 700 ]
    run -0 --separate-stderr ninfer-fetch --json "$NF_PROXY/s/m.ninfer" -o out/m.ninfer
    [ "$(json_field files)" = 5 ]
    [ "$(json_field resumed_bytes)" -gt 2000000 ]
    [ "$(json_field bytes)" -lt 3000000 ]
    # the parts already proven were not fetched again
    [ "$(grep -c 'part-0001 range=bytes=4096-' px.log)" = 1 ]
    for f in m.ninfer m.ninfer.part-0001 m.ninfer.part-0002 m.ninfer.part-0003 m.ninfer.part-0004; do
        cmp "out/$f" "$W/s/$f"
    done
    [ ! -e out/.m.ninfer.ninfer-fetch ]
    run -0 ninfer-verify -q out/m.ninfer
}

@test "a rerun whose resume directory lost or cut a download fetches it again, never publishes zeros" {
    nf_proxy_start px 'cut=300000@part-0003#2'
    run -3 --separate-stderr ninfer-fetch -q --retries 0 "$NF_PROXY/s/m.ninfer" -o out/m.ninfer
    nothing_published
    R=out/.m.ninfer.ninfer-fetch
    [ -f "$R/state" ]
    [ -f "$R/f1" ]
    [ -f "$R/f2" ]
    # part 1's download gone (as after a run stopped between publishing and
    # removing its state), part 2's cut short
    rm "$R/f1"
    truncate -s 5000 "$R/f2"
    run -0 --separate-stderr ninfer-fetch --json "$NF_PROXY/s/m.ninfer" -o out/m.ninfer
    [ "$(json_field resumed_bytes)" -lt 1048576 ]
    for f in m.ninfer m.ninfer.part-0001 m.ninfer.part-0002 m.ninfer.part-0003 m.ninfer.part-0004; do
        cmp "out/$f" "$W/s/$f"
    done
    run -0 ninfer-verify -q out/m.ninfer
}

@test "200 for a range: the first request (ranges not served) and a later one, io (3), nothing published" {
    nf_proxy_start px 'full200@m.ninfer#1'
    run -3 --separate-stderr ninfer-cat --header "$NF_PROXY/s/m.ninfer"
    [ "$stderr" = "ninfer-cat: $NF_PROXY/s/m.ninfer: io: cannot read: the server does not serve byte ranges (HTTP 200 to \"Range: bytes=0-65535\")" ]
    nf_proxy_stop px
    nf_proxy_start px 'full200@part-0002#2'
    run -3 --separate-stderr ninfer-verify "$NF_PROXY/s/m.ninfer"
    expect_only_codes io
    [[ "$stderr" == *"$NF_PROXY/s/m.ninfer.part-0002: io: the server ignored a Range request"* ]]
    nf_proxy_stop px
    nf_proxy_start px 'full200@part-0002#2'
    run -3 --separate-stderr ninfer-fetch -q "$NF_PROXY/s/m.ninfer" -o out/m.ninfer
    expect_only_codes io
    nothing_published
}

@test "a server that ignores Range: ninfer-verify reads a one-file artifact whole, in order; a multi-part one it cannot" {
    mkdir -p "$W/one"
    cp "$BATS_FILE_TMPDIR/one.ninfer" "$W/one/m.ninfer"
    nf_proxy_start px 'full200'
    NINFER_HTTP_TRACE=1 run -0 --separate-stderr ninfer-verify --json "$NF_PROXY/one/m.ninfer"
    [ "$(json_field digests_checked)" = 24 ]
    [ "$(json_field requests)" = 2 ]
    [[ "$stderr" == *"http: GET $NF_PROXY/one/m.ninfer whole file 200"* ]]
    run -1 --separate-stderr ninfer-verify "$NF_PROXY/s/m.ninfer"
    expect_only_codes files io
    run -3 --separate-stderr ninfer-cat --object lm_head.weight "$NF_PROXY/one/m.ninfer"
    expect_only_codes io
    # a damaged byte is still a digest (1)
    nf_flip "$W/one/m.ninfer" 200000
    run -1 --separate-stderr ninfer-verify "$NF_PROXY/one/m.ninfer"
    expect_only_codes digest
}

@test "a Content-Range other than the one asked, a compressed range, a body longer or shorter, a length past U64: io (3)" {
    local rule want
    for rule in 'badrange@part-0003' 'encoding@part-0003' 'longer=10@part-0003' \
        'shorter=10@part-0003' 'bigtotal@part-0003'; do
        nf_proxy_start px "$rule"
        run -3 --separate-stderr ninfer-verify --retries 1 "$NF_PROXY/s/m.ninfer"
        expect_only_codes io
        case $rule in
        badrange*) want="is not the range asked" ;;
        encoding*) want="a compressed range (Content-Encoding: gzip)" ;;
        longer* | shorter*) want="Content-Length" ;;
        bigtotal*) want="a length past U64" ;;
        esac
        [[ "$stderr" == *"$NF_PROXY/s/m.ninfer.part-0003"*": io: "*"$want"* ]]
        [ "$(grep -c . <<< "$stderr")" -eq 1 ]
        nf_proxy_stop px
    done
    nf_proxy_start px 'badrange@part-0003#2'
    run -3 --separate-stderr ninfer-fetch -q "$NF_PROXY/s/m.ninfer" -o out/m.ninfer
    nothing_published
}

@test "a file replaced between two requests is io (3) naming it, never a mix; nothing published" {
    own_set
    # the same length, other bytes, another modification time: another ETag
    cp "$W/$OWN/m.ninfer.part-0002" new-part
    nf_flip new-part 600000
    touch -d '2020-01-01' new-part
    nf_proxy_start px "swap=$PWD/new-part:$W/$OWN/m.ninfer.part-0002@part-0002#2"
    run -3 --separate-stderr ninfer-fetch -q "$NF_PROXY/$OWN/m.ninfer" -o out/m.ninfer
    expect_only_codes io
    [[ "$stderr" == *"$NF_PROXY/$OWN/m.ninfer.part-0002: io: the file changed while it was read"* ]]
    nothing_published
    # the next run sees the new file, and its digest fails (1): still nothing
    run -1 --separate-stderr ninfer-fetch -q "$NF_PROXY/$OWN/m.ninfer" -o out/m.ninfer
    expect_code digest
    nothing_published
}

@test "a retry answered without the validator the file had, or with one it lacked, is a change (io, 3), never data" {
    # the first request of part 3 cut, its retry (If-Range) answered by an
    # edge that strips ETag and Last-Modified
    nf_proxy_start px 'cut=300000@part-0003#1' 'novalidator@part-0003#2'
    run -3 --separate-stderr ninfer-verify --retries 2 "$NF_PROXY/s/m.ninfer"
    expect_only_codes io
    [[ "$stderr" == *"$NF_PROXY/s/m.ninfer.part-0003: io: "*"changed while it was read (its validator went from \""*"\" to none)"* ]]
    nf_proxy_stop px
    # no validator at first, one on the retry
    nf_proxy_start px 'novalidator@part-0003#1' 'cut=300000@part-0003#1'
    run -3 --separate-stderr ninfer-verify --retries 2 "$NF_PROXY/s/m.ninfer"
    expect_only_codes io
    [[ "$stderr" == *"$NF_PROXY/s/m.ninfer.part-0003: io: "*"its validator went from none to \""* ]]
    nf_proxy_stop px
    # a validator longer than the client keeps is never compared cut short
    nf_proxy_start px 'longetag=300@part-0003'
    run -3 --separate-stderr ninfer-verify --retries 1 "$NF_PROXY/s/m.ninfer"
    expect_only_codes io
    [ "$stderr" = "ninfer-verify: $NF_PROXY/s/m.ninfer.part-0003: /files/3: io: cannot read part 3: a response header too long to keep whole (ETag)" ]
}

@test "503 with Retry-After is retried after it, and counted apart from the requests" {
    nf_proxy_start px 'status=503:1@part-0001x1'
    local t0
    t0=$(date +%s%N)
    NINFER_HTTP_TRACE=1 run -0 --separate-stderr ninfer-verify --json "$NF_PROXY/s/m.ninfer"
    [ "$(json_field retries)" = 1 ]
    [ "$(json_field requests)" = 10 ]
    [[ "$stderr" == *"part-0001 bytes=0-4095: HTTP 503; retry 1 in 1.0 s"* ]]
    # Retry-After: 1 was waited for, not the 0.05 s backoff (a lower bound)
    [ $(($(date +%s%N) - t0)) -ge 1000000000 ]
    # 5xx forever: one clear line after the retries
    nf_proxy_stop px
    nf_proxy_start px 'status=500@part-0001'
    run -3 --separate-stderr ninfer-verify --retries 2 "$NF_PROXY/s/m.ninfer"
    expect_only_codes io
    [[ "$stderr" == *"part-0001: /files/1: io: cannot read part 1: HTTP 500; gave up after 2 retries"* ]]
}

@test "404 on one part is part-missing (3), of the entry io (3); 401 is io, not authorized" {
    nf_proxy_start px 'status=404@part-0003'
    run -3 --separate-stderr ninfer-verify "$NF_PROXY/s/m.ninfer"
    expect_only_codes part-missing
    [[ "$stderr" == *"$NF_PROXY/s/m.ninfer.part-0003: /files/3: part-missing: part 3 is missing (not found (HTTP 404))"* ]]
    run -3 --separate-stderr ninfer-fetch -q "$NF_PROXY/s/m.ninfer" -o out/m.ninfer
    expect_only_codes part-missing
    nothing_published
    nf_proxy_stop px
    nf_proxy_start px 'status=401@part-0001'
    run -3 --separate-stderr ninfer-cat "$NF_PROXY/s/m.ninfer"
    run -3 --separate-stderr ninfer-verify "$NF_PROXY/s/m.ninfer"
    [[ "$stderr" == *"part-0001: /files/1: io: cannot read part 1: not authorized (HTTP 401)"* ]]
    nf_proxy_stop px
    nf_proxy_start px 'status=403@m.ninfer#1'
    run -3 --separate-stderr ninfer-cat --header "$NF_PROXY/s/m.ninfer"
    [ "$stderr" = "ninfer-cat: $NF_PROXY/s/m.ninfer: io: cannot read: not authorized (HTTP 403)" ]
}

@test "a redirect to another host is followed, counted, and gets no token (its log shows none)" {
    nf_proxy_start px "redirect=http://localhost:$NF_HTTP_PORT@part-0002"
    : > "$LOG"
    NINFER_TOKEN=tok-SECRET run -0 --separate-stderr ninfer-verify --json "$NF_PROXY/s/m.ninfer"
    [ "$(json_field digests_checked)" = 24 ]
    # the part's first request was redirected, its later ones go where it led
    [ "$(json_field requests)" = 11 ]
    ! grep -q SECRET <<< "$output$stderr"
    # to the entry's host the token went; to localhost, never
    grep -q 'GET /s/m.ninfer.part-0002 .*auth=present -> 302' px.log
    nf_log_wait "$LOG" 'status=206' 10
    grep -q 'GET /s/m.ninfer.part-0002 .*auth=none status=206 .*host=localhost' "$LOG"
    ! grep -q 'host=localhost' <(grep 'auth=present' "$LOG")
}

@test "a redirect loop (more than 10) and https to http are refused: io (3)" {
    nf_proxy_start px 'loop@part-0001'
    run -3 --separate-stderr ninfer-verify "$NF_PROXY/s/m.ninfer"
    expect_only_codes io
    [[ "$stderr" == *"part-0001: /files/1: io: cannot read part 1: more than 10 redirects (a redirect loop?)"* ]]
    [ "$(grep -c 'part-0001.*-> 302' px.log)" -eq 11 ]
}

@test "a trickle below 1 KiB/s is a stall (--stall-timeout), retried then io (3), in bounded time" {
    nf_proxy_start px 'trickle=100@part-0001'
    local t0=$SECONDS
    run -3 --separate-stderr ninfer-verify --stall-timeout 1 --retries 1 "$NF_PROXY/s/m.ninfer"
    expect_only_codes io
    [[ "$stderr" == *"part-0001: /files/1: io: cannot read part 1: stalled: below 1024 bytes/s for 1 s"*"gave up after 1 retry"* ]]
    [ $((SECONDS - t0)) -lt 20 ]
    nf_proxy_stop px
    nf_proxy_start px 'trickle=100@part-0002'
    run -3 --separate-stderr ninfer-fetch -q --stall-timeout 1 --retries 0 "$NF_PROXY/s/m.ninfer" -o out/m.ninfer
    expect_only_codes io
    nothing_published
}

@test "a rerun after the file set changed at the URL: a part with another validator starts over, another artifact everything" {
    own_set
    # one proxy for every run (the URL names the resume state): the second
    # and sixth requests of part 3 are cut
    nf_proxy_start px 'cut=300000@part-0003#2' 'cut=300000@part-0003#6'
    run -3 --separate-stderr ninfer-fetch -q --retries 0 "$NF_PROXY/$OWN/m.ninfer" -o out/m.ninfer
    nothing_published
    # part 1 served anew (the same bytes, another ETag): it starts over, with
    # what reaches into it; what follows the frontier goes on
    touch -d '2021-02-03' "$W/$OWN/m.ninfer.part-0001"
    : > px.log
    run -0 --separate-stderr ninfer-fetch --json "$NF_PROXY/$OWN/m.ninfer" -o out/m.ninfer
    grep -q 'part-0001 range=bytes=4096-1048575' px.log
    grep -q 'part-0004 range=bytes=4096-' px.log
    for f in m.ninfer m.ninfer.part-0001 m.ninfer.part-0002 m.ninfer.part-0003 m.ninfer.part-0004; do
        cmp "out/$f" "$W/$OWN/$f"
    done
    # another artifact at the URL (a new split: another artifact_id): from scratch
    rm -r out
    run -3 --separate-stderr ninfer-fetch -q --retries 0 "$NF_PROXY/$OWN/m.ninfer" -o out/m.ninfer
    [ -d out/.m.ninfer.ninfer-fetch ]
    rm "$W/$OWN/"*
    ninfer-split -q --max-file-bytes 1M -o "$W/$OWN/m.ninfer" "$BATS_FILE_TMPDIR/one.ninfer"
    run -0 --separate-stderr ninfer-fetch --json "$NF_PROXY/$OWN/m.ninfer" -o out/m.ninfer
    [ "$(json_field resumed_bytes)" = 0 ]
    for f in m.ninfer m.ninfer.part-0001 m.ninfer.part-0002 m.ninfer.part-0003 m.ninfer.part-0004; do
        cmp "out/$f" "$W/$OWN/$f"
    done
}
