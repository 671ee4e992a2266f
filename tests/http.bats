#!/usr/bin/env bats
# http.bats — every reading command on an artifact at a URL (ninfer(5)
# Artifacts over HTTP), against a real nginx that this file starts on a free
# loopback port (config, pid, logs and temp paths under the suite's own
# directory), over http and over https with a certificate made here by
# openssl. One nginx for the whole file (setup_file / teardown_file).
#
# Request accounting: NINFER_HTTP_TRACE=1 prints one line per request
# ("http: GET URL bytes=A-B STATUS"); a 206 line delivered exactly B-A+1
# body bytes, so the traces give both the request count and the body bytes.

load helper
. "$BATS_TEST_DIRNAME/lib/nginx.bash"

setup_file() {
    nf_nginx_available || return 0
    local d=$BATS_FILE_TMPDIR w
    w=$d/ng/www
    mkdir -p "$d/ng" "$w/s" "$w/one" "$w/big" "$w/comp" "$w/far" "$w/odd name"
    nf_nginx_cert "$d/ng" || return 1
    (
        cd "$d" || exit 1
        nf-mkckpt ck > /dev/null && ninfer-import ck > m.json &&
            ninfer-pack -q -o one.ninfer m.json &&
            cp one.ninfer "$w/one/m.ninfer" &&
            ninfer-split -q --max-file-bytes 1M -o "$w/s/m.ninfer" one.ninfer &&
            ninfer-pack -q --json-bytes 100K -o "$w/big/m.ninfer" m.json &&
            ninfer-split -q --max-file-bytes 1M -o "$w/odd name/m é.ninfer" one.ninfer
        # two components: "extra"'s resource lives in parts that text never needs
        head -c 3000000 /dev/zero | openssl enc -aes-128-ctr -nosalt \
            -K 000102030405060708090a0b0c0d0e0f -iv 0 > pay.bin 2> /dev/null
        printf '%s' '{"components":{"text":{"config":{},"resources":{"tok":"r.tok"}},' \
            '"extra":{"config":{},"resources":{"x":"r.x"}}},"objects":[' \
            '{"id":"r.tok","kind":"resource","encoding":"raw_bytes_v1","bytes":1500000,"source":{"file":"pay.bin","offset":0}},' \
            '{"id":"r.x","kind":"resource","encoding":"raw_bytes_v1","bytes":1500000,"source":{"file":"pay.bin","offset":1500000}}' \
            '],"bindings":{},"uses":[]}' > comp.json
        ninfer-pack -q --max-file-bytes 1M -o "$w/comp/c.ninfer" comp.json
        # objects at chosen places in 3 MiB files: c 0.5 MiB into part 2,
        # dd 2.5 MiB into part 2, b across the entry and parts 1 and 2
        head -c 9962472 /dev/zero | openssl enc -aes-128-ctr -nosalt \
            -K 000102030405060708090a0b0c0d0e0f -iv 0 > far.bin 2> /dev/null
        local o=0 first=1 id n
        printf '{"components":{"text":{"config":{}}},"objects":[' > far.json
        for id_n in a:2621440 b:4194304 c:1000 e:2096152 dd:1000 f:1048576; do
            id=${id_n%%:*} n=${id_n#*:}
            [ $first = 1 ] || printf ',' >> far.json
            first=0
            printf '{"id":"%s","kind":"resource","encoding":"raw_bytes_v1","bytes":%s,"source":{"file":"far.bin","offset":%s}}' \
                "$id" "$n" "$o" >> far.json
            o=$((o + n))
        done
        printf '],"bindings":{},"uses":[]}\n' >> far.json
        ninfer-pack -q --max-file-bytes 3M -o "$w/far/f.ninfer" far.json
    ) || return 1
    nf_nginx_start "$d/ng" || return 1
    printf '%s\n%s\n' "$NF_HTTP_PORT" "$NF_HTTPS_PORT" > "$d/ports"
}

teardown_file() {
    nf_nginx_stop "$BATS_FILE_TMPDIR/ng"
}

teardown() {
    nf_proxy_stop "$BATS_TEST_TMPDIR/px"
}

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    nf_nginx_available || skip "nginx is not installed (Debian package nginx-light)"
    W=$BATS_FILE_TMPDIR/ng/www
    P=$(sed -n 1p "$BATS_FILE_TMPDIR/ports")
    PS=$(sed -n 2p "$BATS_FILE_TMPDIR/ports")
    H=http://127.0.0.1:$P
    HS=https://127.0.0.1:$PS
    CA=$BATS_FILE_TMPDIR/ng/ca.pem
    unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY NINFER_TOKEN
}

# requests ERRFILE — the requests a traced run made; bytes ERRFILE — their
# body bytes (every line a complete 206: the range's length)
requests() { grep -c ': http: GET ' "$1"; }
bytes() {
    sed -n 's/.*: http: GET [^ ]* bytes=\([0-9]*\)-\([0-9]*\) 206$/\1 \2/p' "$1" |
        awk '{ s += $2 - $1 + 1 } END { print s + 0 }'
}

@test "--header, --catalog, --files of a URL: what the file gives, in one request (two for a catalog over 64 KiB)" {
    local sel
    for sel in --header --catalog --files; do
        NINFER_HTTP_TRACE=1 ninfer-cat $sel "$H/s/m.ninfer" > got 2> err
        ninfer-cat $sel "$W/s/m.ninfer" > want
        if [ "$sel" = --files ]; then cmp got want; else cmp got want; fi
        [ "$(requests err)" -eq 1 ]
        grep -q "http: GET $H/s/m.ninfer bytes=0-65535 206" err
    done
    # json_bytes 102400: 32 + json_bytes is over 64 KiB, one more request
    NINFER_HTTP_TRACE=1 ninfer-cat --catalog "$H/big/m.ninfer" > got 2> err
    ninfer-cat --catalog "$W/big/m.ninfer" | cmp - got
    [ "$(requests err)" -eq 2 ]
    NINFER_HTTP_TRACE=1 ninfer-cat --header "$H/big/m.ninfer" > /dev/null 2> err
    [ "$(requests err)" -eq 2 ]
}

@test "--object of a URL: one request per file it touches, a part's header riding along within 1 MiB" {
    local eps obj
    eps=$(ninfer-cat --header "$W/far/f.ninfer" | sed -n 's/.*"entry_payload_start": \([0-9]*\).*/\1/p')
    # dd: 2.5 MiB into part 2: the first request, part 2's header (4 KiB), the object
    NINFER_HTTP_TRACE=1 ninfer-cat --object dd "$H/far/f.ninfer" > got 2> err || { cat err; false; }
    ninfer-cat --object dd "$W/far/f.ninfer" | cmp - got
    [ "$(requests err)" -eq 3 ]
    grep -q 'f.ninfer.part-0002 bytes=0-31 206' err
    [ "$(bytes err)" -le $((eps + 1000 + 65536 + 4096)) ]
    # b: across the entry, part 1 and part 2, each part read from its byte 0
    NINFER_HTTP_TRACE=1 ninfer-cat --object b "$H/far/f.ninfer" > got 2> err || { cat err; false; }
    ninfer-cat --object b "$W/far/f.ninfer" | cmp - got
    [ "$(requests err)" -eq 4 ]
    [ "$(bytes err)" -le $((eps + 4194304 + 65536 + 2 * 4096)) ]
    # c: 0.5 MiB into part 2: part 2 from its byte 0 (header and object in
    # one request, ranges closer than 1 MiB are merged)
    NINFER_HTTP_TRACE=1 ninfer-cat --object c "$H/far/f.ninfer" > got 2> err || { cat err; false; }
    ninfer-cat --object c "$W/far/f.ninfer" | cmp - got
    [ "$(requests err)" -eq 2 ]
    grep -q 'f.ninfer.part-0002 bytes=0-537575 206' err
    # an object inside the first 64 KiB of a one-file entry: no request more
    mkdir -p "$W/small$BATS_TEST_NUMBER"
    printf 'small resource bytes' > r.bin
    printf '%s' '{"components":{"text":{"config":{}}},"objects":[{"id":"r","kind":"resource",' \
        '"encoding":"raw_bytes_v1","bytes":20,"source":{"file":"r.bin","offset":0}}],' \
        '"bindings":{},"uses":[]}' > small.json
    ninfer-pack -q -o "$W/small$BATS_TEST_NUMBER/m.ninfer" small.json
    NINFER_HTTP_TRACE=1 ninfer-cat --object r "$H/small$BATS_TEST_NUMBER/m.ninfer" > got 2> err
    cmp got r.bin
    [ "$(requests err)" -eq 1 ]
    [ "$(bytes err)" -le 65536 ]
}

@test "every selector of ninfer-cat on a URL gives what it gives on the file, over http and https" {
    local sel url
    for url in "$H/s/m.ninfer" "$HS/s/m.ninfer"; do
        for sel in --header --catalog --files "--object lm_head.weight" "--range 1000:70000" \
            "--resource tokenizer.json" "--files --component text"; do
            ninfer-cat --cacert "$CA" $sel "$url" > got
            ninfer-cat $sel "$W/s/m.ninfer" > want
            cmp got want
        done
        # the whole artifact as a stream: the same bytes after its new artifact_id
        ninfer-cat --cacert "$CA" "$url" > got
        ninfer-cat "$W/s/m.ninfer" > want
        cmp <(tail -c +33 got) <(tail -c +33 want)
        # a one-file artifact streams byte for byte
        ninfer-cat --cacert "$CA" "${url%/s/m.ninfer}/one/m.ninfer" | cmp - "$W/one/m.ninfer"
    done
    # --manifest names the URL; ninfer-pack reads the objects from it
    ninfer-cat --manifest "$H/s/m.ninfer" > man.json
    grep -q "\"artifact\": \"$H/s/m.ninfer\"" man.json
    ninfer-pack -q -o copy.ninfer man.json
    ninfer-cat --object lm_head.weight copy.ninfer | cmp - <(ninfer-cat --object lm_head.weight "$W/s/m.ninfer")
}

@test "ninfer-verify of a URL: digests as the ranges arrive, --json counts requests, --sums as for the files" {
    mkdir w && cd w
    run -0 --separate-stderr ninfer-verify "$H/s/m.ninfer"
    [ "$output" = "$H/s/m.ninfer: OK (24 digests checked)" ]
    run -0 --separate-stderr ninfer-verify --json "$H/s/m.ninfer"
    [ "$(json_field exit)" = 0 ]
    [ "$(json_field digests_checked)" = 24 ]
    # the first request, four part headers, the entry's payload, four parts
    [ "$(json_field requests)" = 10 ]
    [ "$(json_field retries)" = 0 ]
    [ "$(json_field file)" = "$H/s/m.ninfer" ]
    # --sums: the files' digests from the same bytes, names as on disk
    run -0 ninfer-verify --sums "$HS/s/m.ninfer" --cacert "$CA"
    [ "$output" = "$(cd "$W/s" && sha256sum m.ninfer m.ninfer.part-000*)" ]
    run -0 ninfer-verify --sums "$H/odd%20name/m%20%C3%A9.ninfer"
    [ "$output" = "$(cd "$W/odd name" && sha256sum "m é.ninfer" "m é.ninfer".part-000*)" ]
    # nothing was written
    [ -z "$(ls -A)" ]
}

@test "ninfer-verify --component text of a URL transfers only the files text needs" {
    local need
    need=$(ninfer-cat --files --component text "$W/comp/c.ninfer" | grep -c '"index"')
    [ "$need" -ge 2 ]
    NINFER_HTTP_TRACE=1 run -0 --separate-stderr ninfer-verify --component text "$H/comp/c.ninfer"
    [ "$output" = "$H/comp/c.ninfer: OK (1 digests checked)" ]
    # the files text needs, and no other
    local f
    for f in $(ninfer-cat --files "$W/comp/c.ninfer" | sed -n 's/.*"path": "\(.*\)".*/\1/p'); do
        if ninfer-cat --files --component text "$W/comp/c.ninfer" | grep -q "\"$f\""; then
            grep -q "/comp/$f bytes=" <<< "$stderr"
        else
            ! grep -q "/comp/$f bytes=" <<< "$stderr"
        fi
    done
    # the whole set needs them all
    NINFER_HTTP_TRACE=1 run -0 --separate-stderr ninfer-verify "$H/comp/c.ninfer"
    grep -q "c.ninfer.part-0002 bytes=" <<< "$stderr"
}

@test "ninfer-bind --check, --plan, --extract; ninfer-run and ninfer-bench on a URL" {
    run -0 ninfer-bind --check "$H/s/m.ninfer"
    [ "$output" = "$H/s/m.ninfer: OK (21 parameters, 16 uses)" ]
    # the same plan, the files named by their URLs
    ninfer-bind --plan "$H/s/m.ninfer" | cmp - <(ninfer-bind --plan "$W/s/m.ninfer" | sed "s|$W|$H|g")
    ninfer-bind --extract text/layers/1/mlp/down "$H/s/m.ninfer" |
        cmp - <(ninfer-bind --extract text/layers/1/mlp/down "$W/s/m.ninfer")
    ninfer-bind "$H/s/m.ninfer" | cmp - <(ninfer-bind "$W/s/m.ninfer")
    run -0 ninfer-run --device cpu --iters 1 "$H/s/m.ninfer"
    [[ "$output" == *"text/head"*" ok"* ]]
    run -0 ninfer-bench --iters 1 --param 'text/layers/0/mlp/down' "$H/s/m.ninfer"
    [[ "$output" == *"model.layers.0.mlp.down_proj.weight"* ]]
}

@test "ninfer-split of a URL: fetched and resharded in one pass, the digests checked as they pass" {
    run -0 ninfer-split -q --verify --max-file-bytes 2M -o out/m.ninfer "$H/s/m.ninfer"
    ninfer-split -q --max-file-bytes 2M -o want/m.ninfer "$W/s/m.ninfer"
    run -0 ninfer-verify -q out/m.ninfer
    cmp <(ninfer-cat --files out/m.ninfer) <(ninfer-cat --files want/m.ninfer)
    cmp <(ninfer-cat out/m.ninfer | tail -c +33) <(ninfer-cat want/m.ninfer | tail -c +33)
    # into a stream
    ninfer-split -o - "$H/one/m.ninfer" | cmp - <(ninfer-split -o - "$W/one/m.ninfer" | cat) ||
        cmp <(ninfer-split -o - "$H/one/m.ninfer" | tail -c +33) \
            <(ninfer-split -o - "$W/one/m.ninfer" | tail -c +33)
}

@test "parts from --urls: any names, entry first; a count that differs from the files table is usage (2)" {
    mkdir -p "$W/urls"
    cp "$W/s/m.ninfer" "$W/urls/entry.bin"
    local i
    for i in 1 2 3 4; do cp "$W/s/m.ninfer.part-000$i" "$W/urls/p$i.bin"; done
    {
        echo "$H/urls/entry.bin?sig=secret1"
        for i in 1 2 3 4; do echo "$H/urls/p$i.bin?sig=secret$i"; done
    } > urls.txt
    run -0 --separate-stderr ninfer-verify --urls urls.txt "$H/urls/entry.bin?sig=secret1"
    [ "$output" = "$H/urls/entry.bin: OK (24 digests checked)" ]
    head -n 3 urls.txt > short.txt
    run -2 --separate-stderr ninfer-verify --urls short.txt "$H/urls/entry.bin?sig=secret1"
    expect_code usage
    [[ "$stderr" == *"--urls gives 3 URLs, but the catalog lists 5 files"* ]]
    run -2 --separate-stderr ninfer-verify --urls urls.txt "$H/s/m.ninfer"
    expect_code usage
    ! grep -q secret <<< "$stderr$output"
}

@test "https: the CA given by --cacert is trusted, another CA or none fails (3), no option turns it off" {
    run -0 ninfer-cat --cacert "$CA" --header "$HS/s/m.ninfer"
    run -3 --separate-stderr ninfer-cat --cacert "$BATS_FILE_TMPDIR/ng/other-ca.pem" --header "$HS/s/m.ninfer"
    expect_only_codes io
    [[ "$stderr" == "ninfer-cat: $HS/s/m.ninfer: io: cannot read: SSL certificate problem"* ]]
    run -3 --separate-stderr ninfer-cat --header "$HS/s/m.ninfer"
    expect_only_codes io
    run -2 --separate-stderr ninfer-cat --insecure --header "$HS/s/m.ninfer"
    run -2 --separate-stderr ninfer-cat -k --header "$HS/s/m.ninfer"
}

@test "a missing entry is io (3), a missing part part-missing (3), a foreign part artifact-id (1), a short entry incomplete (1)" {
    run -3 --separate-stderr ninfer-verify "$H/none/m.ninfer"
    [ "$stderr" = "ninfer-verify: $H/none/m.ninfer: io: cannot read: not found (HTTP 404)" ]
    mkdir -p "$W/t1"
    cp "$W/s/"m.ninfer* "$W/t1/"
    rm "$W/t1/m.ninfer.part-0002"
    run -3 --separate-stderr ninfer-verify "$H/t1/m.ninfer"
    expect_only_codes part-missing
    [[ "$stderr" == *"$H/t1/m.ninfer.part-0002: /files/2: part-missing: part 2 is missing (not found (HTTP 404))"* ]]
    # another artifact's part in its place
    ninfer-split -q --max-file-bytes 1M -o other/m.ninfer "$BATS_FILE_TMPDIR/one.ninfer"
    cp other/m.ninfer.part-0002 "$W/t1/"
    run -1 --separate-stderr ninfer-verify "$H/t1/m.ninfer"
    expect_code artifact-id
    run -1 --separate-stderr ninfer-cat "$H/t1/m.ninfer"
    # an entry cut short on the server: incomplete, as for a file
    mkdir -p "$W/t2"
    head -c 1000000 "$W/one/m.ninfer" > "$W/t2/m.ninfer"
    run -1 --separate-stderr ninfer-verify "$H/t2/m.ninfer"
    expect_code incomplete
    run -1 --separate-stderr ninfer-verify "$W/t2/m.ninfer"
    expect_code incomplete
}

@test "diagnostics, --json and traces name URLs without query strings and credentials" {
    run -3 --separate-stderr env NINFER_HTTP_TRACE=1 ninfer-verify --json "http://user:pw@127.0.0.1:$P/none/m.ninfer?sig=SECRET&x=1"
    ! grep -qi 'secret\|pw@\|user:' <<< "$output$stderr"
    [ "$(json_field file)" = "$H/none/m.ninfer" ]
    grep -q "http: GET $H/none/m.ninfer bytes=0-65535 404" <<< "$stderr"
}

@test "a bearer token goes to the entry's host over https and to loopback http, and is never printed" {
    local log=$BATS_FILE_TMPDIR/ng/logs/access.log
    NINFER_TOKEN=tok-SECRET run -0 --separate-stderr env NINFER_HTTP_TRACE=1 \
        ninfer-verify --json --cacert "$CA" "$HS/s/m.ninfer"
    ! grep -q SECRET <<< "$output$stderr"
    nf_log_wait "$log" 'GET /s/m.ninfer.part-0004 range=bytes=4096-.*auth=present'
    NINFER_TOKEN=tok-SECRET run -0 ninfer-cat --header "$H/one/m.ninfer"
    nf_log_wait "$log" 'GET /one/m.ninfer range=bytes=0-65535 .*auth=present'
    # without a token, no Authorization header at all
    : > "$log"
    run -0 ninfer-cat --header "$H/one/m.ninfer"
    nf_log_wait "$log" 'GET /one/m.ninfer range=bytes=0-65535 '
    ! grep -q 'auth=present' "$log"
}

@test "part names are percent-encoded into the URL; an odd entry name works" {
    NINFER_HTTP_TRACE=1 run -0 --separate-stderr ninfer-verify "$H/odd%20name/m%20%C3%A9.ninfer"
    grep -q "http: GET $H/odd%20name/m%20%C3%A9.ninfer.part-0001 bytes=" <<< "$stderr"
}

@test "usage: --urls without a URL operand, bad --jobs, --retries, --stall-timeout (2)" {
    echo "$H/s/m.ninfer" > u.txt
    run -2 --separate-stderr ninfer-verify --urls u.txt "$W/s/m.ninfer"
    expect_code usage
    run -2 --separate-stderr ninfer-cat --jobs 0 --header "$H/s/m.ninfer"
    run -2 --separate-stderr ninfer-cat --retries x --header "$H/s/m.ninfer"
    run -2 --separate-stderr ninfer-cat --stall-timeout -1 --header "$H/s/m.ninfer"
    run -0 ninfer-cat --jobs 2 --retries 0 --stall-timeout 5 --header "$H/s/m.ninfer"
}

@test "https to http is refused; a URL's password goes nowhere but https or loopback" {
    run -3 --separate-stderr ninfer-cat --cacert "$CA" --header "$HS/to-http/s/m.ninfer"
    [ "$stderr" = "ninfer-cat: $HS/to-http/s/m.ninfer: io: cannot read: refusing a redirect from https to http" ]
    # no request is made with a password over plain http to another host
    run -3 --separate-stderr ninfer-cat --retries 0 --header "http://u:pw@192.0.2.1:9/m.ninfer"
    [ "$stderr" = "ninfer-cat: http://192.0.2.1:9/m.ninfer: io: cannot read: refusing to send the user name and password of http://192.0.2.1:9/m.ninfer over plain http" ]
}

@test "HTTP/2 over https, keep-alive over http: one connection serves many requests" {
    local log=$BATS_FILE_TMPDIR/ng/logs/access.log
    : > "$log"
    run -0 ninfer-verify --cacert "$CA" "$HS/s/m.ninfer"
    nf_log_wait "$log" 'GET /s/m.ninfer.part-0004 .*proto=HTTP/2.0'
    ! grep -q 'proto=HTTP/1' "$log"
    : > "$log"
    run -0 ninfer-verify --jobs 1 "$H/s/m.ninfer"
    # ten requests over one connection
    nf_log_wait "$log" 'proto=HTTP/1.1' 10
    [ "$(grep -c 'proto=HTTP/1.1' "$log")" -eq 10 ]
    [ "$(sed -n 's/.* conn=\([0-9]*\)\/.*/\1/p' "$log" | sort -u | wc -l)" -eq 1 ]
}

@test "proxies as libcurl reads them; no token over plain http to a host that is no loopback" {
    . "$BATS_TEST_DIRNAME/lib/nginx.bash"
    NF_HTTP_PORT=$P nf_proxy_start px
    # the proxy forwards to this file's nginx, whatever host the URL names
    NINFER_TOKEN=tok-SECRET http_proxy=$NF_PROXY run -0 --separate-stderr \
        ninfer-verify "http://proxied.invalid/s/m.ninfer"
    [ "$output" = "http://proxied.invalid/s/m.ninfer: OK (24 digests checked)" ]
    grep -q '^GET http://proxied.invalid/s/m.ninfer.part-0004 range=bytes=4096-' px.log
    ! grep -q 'auth=present' px.log
    nf_proxy_stop px
}

@test "a process that holds a token makes no core dump" {
    . "$BATS_TEST_DIRNAME/lib/nginx.bash"
    NF_HTTP_PORT=$P nf_proxy_start px 'trickle=50@one/m.ninfer'
    NINFER_TOKEN=tok-SECRET ninfer-cat --header "$NF_PROXY/one/m.ninfer" > /dev/null 2>&1 &
    local pid=$! i
    for i in $(seq 200); do grep -q 'one/m.ninfer' px.log 2> /dev/null && break; sleep 0.05; done
    grep -q 'one/m.ninfer' px.log
    grep -E '^Max core file size +0 +' "/proc/$pid/limits"
    kill "$pid"
    wait "$pid" || true
    nf_proxy_stop px
    # without a token the limit is the caller's (AddressSanitizer sets it to 0 itself)
    [ -z "${NF_SANITIZE:-}" ] || return 0
    ulimit -c unlimited 2> /dev/null || skip "cannot raise the core limit here"
    rm -f px.log # the first proxy's line would end the wait below at once
    NF_HTTP_PORT=$P nf_proxy_start px 'trickle=50@one/m.ninfer'
    ninfer-cat --header "$NF_PROXY/one/m.ninfer" > /dev/null 2>&1 &
    pid=$!
    for i in $(seq 200); do grep -q 'one/m.ninfer' px.log 2> /dev/null && break; sleep 0.05; done
    grep -E '^Max core file size +unlimited' "/proc/$pid/limits"
    kill "$pid"
    wait "$pid" || true
    nf_proxy_stop px
}

@test "~/.netrc credentials go to their host (loopback http here) and nowhere else" {
    local log=$BATS_FILE_TMPDIR/ng/logs/access.log
    mkdir home
    printf 'machine 127.0.0.1 login u password netrc-SECRET\n' > home/.netrc
    chmod 600 home/.netrc
    : > "$log"
    HOME=$PWD/home run -0 --separate-stderr env NINFER_HTTP_TRACE=1 ninfer-cat --header "$H/one/m.ninfer"
    nf_log_wait "$log" 'GET /one/m.ninfer range=bytes=0-65535 .*auth=present'
    ! grep -q SECRET <<< "$output$stderr"
    # to localhost (another host name) the file has no entry: nothing sent
    : > "$log"
    HOME=$PWD/home run -0 ninfer-cat --header "http://localhost:$P/one/m.ninfer"
    nf_log_wait "$log" 'GET /one/m.ninfer range=bytes=0-65535 '
    ! grep -q 'auth=present' "$log"
}

@test "ninfer-run over a URL reads only the parents it needs: the part with mtp's objects is never requested" {
    # the fixture of ninfer-run.bats: every mtp-private object in the last part
    nf-mkarch --arch qwen3next --mtp mck > /dev/null 2>&1
    ninfer-import -q mck > m0.json
    ninfer-pack -q --no-sync -o m0.ninfer m0.json
    local nat off
    nat=$(ninfer-cat --catalog m0.ninfer | grep -o '"id":"mtp\.pre_fc_norm_embedding\.weight"[^}]*"offset":[0-9]*' |
        sed 's/.*"offset"://')
    off=$(((nat + 4095) / 4096 * 4096))
    sed "s|^\(      \"id\": \"mtp.pre_fc_norm_embedding.weight\",\)\$|\1\n      \"offset\": $off,|" \
        m0.json > mtp.json
    mkdir -p "$W/mtp"
    ninfer-pack -q --no-sync --json-bytes 69600 --max-file-bytes $((69632 + off)) \
        -o "$W/mtp/m.ninfer" mtp.json
    [ -e "$W/mtp/m.ninfer.part-0001" ]
    NINFER_HTTP_TRACE=1 run -0 --separate-stderr ninfer-run --device cpu --iters 1 --component text "$H/mtp/m.ninfer"
    ! grep -q 'part-0001' <<< "$stderr"
    grep -q "http: GET $H/mtp/m.ninfer bytes=" <<< "$stderr"
    NINFER_HTTP_TRACE=1 run -0 --separate-stderr ninfer-run --device cpu --iters 1 --component mtp "$H/mtp/m.ninfer"
    grep -q 'm.ninfer.part-0001 bytes=' <<< "$stderr"
}

@test "one client, many threads: streamed, cancelled and parallel reads of one file at once, every byte right" {
    run -0 nf-httpstress "$H/one/m.ninfer" "$W/one/m.ninfer" 8 45
    [[ "$output" == *" requests, every byte right" ]]
}

@test "a streamed request with a buffer under 16 KiB fails at once, saying so (it could stall for ever: libcurl hands over up to 16 KiB at a time)" {
    NF_STRESS_WINDOW=4096 run -1 timeout 300 nf-httpstress "$H/one/m.ninfer" "$W/one/m.ninfer" 1 30
    [[ "$output" == *"a streamed request needs a buffer of at least 16384 bytes, not 4096"* ]]
    NF_STRESS_WINDOW=16384 run -0 timeout 300 nf-httpstress "$H/one/m.ninfer" "$W/one/m.ninfer" 4 30
    [[ "$output" == *" requests, every byte right" ]]
}

@test "a request freed while the I/O thread is still finishing its transfer waits for it (as a read of an object's last file does)" {
    run -0 nf-httpstress --free-late "$H/one/m.ninfer" "$W/one/m.ninfer" 20
    [ "$output" = "20 requests freed late, every byte right" ]
}
