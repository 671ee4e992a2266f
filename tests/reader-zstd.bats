#!/usr/bin/env bats
# Compressed and plain streams that are broken (issue 11 items 8 and 11;
# DESIGN 3, 4): a corrupt zstd frame is a rule broken (`zstd`, exit 1), a
# stream that ends early or carries bytes after its end is `length` (exit
# 1), never an I/O error (3); and a catalog padded with spaces costs no
# memory for its padding, so the catalog cap bounds what a stream costs.

load helper

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    NF_P=300000 nf_make a.ninfer
    ninfer-cat --zstd a.ninfer > a.zst
    [ "$(nf_size a.zst)" -gt 1000 ]
}

# every_reader STATUS CODE FILE — every command that reads a stream exits
# STATUS naming only CODE when FILE is its standard input; split writes
# nothing.
every_reader() {
    local want=$1 code=$2 f=$3 cmd
    mkdir -p out
    for cmd in "ninfer-verify -" "ninfer-cat -" "ninfer-cat --object r.tok -" \
        "ninfer-split -o out/s.ninfer -" "ninfer-split -o - -"; do
        run -"$want" --separate-stderr bash -c "$cmd < $f > /dev/null"
        echo "$cmd: $stderr"
        expect_only_codes "$code"
    done
    [ ! -e out/s.ninfer ]
    no_temporaries out
}

@test "a corrupt zstd frame: zstd (1) for every reader" {
    cp a.zst bad.zst
    nf_flip bad.zst $(($(nf_size bad.zst) / 2))
    every_reader 1 zstd bad.zst
    grep -qF ': zstd: corrupt zstd stream' <<< "$stderr"
}

@test "a zstd stream cut short, inside the catalog or inside the payload: length (1)" {
    head -c $(($(nf_size a.zst) - 20)) a.zst > cut.zst
    every_reader 1 length cut.zst
    # the frame's checksum missing only: the payload is whole, the frame is not
    head -c $(($(nf_size a.zst) - 4)) a.zst > cut4.zst
    every_reader 1 length cut4.zst
}

@test "bytes after the zstd frame: length (1), garbage or a second frame alike" {
    cp a.zst trail.zst
    printf 'garbage' >> trail.zst
    every_reader 1 length trail.zst
    grep -qF 'bytes after the end of the zstd frame' <<< "$stderr"
    # a second whole frame decompresses to bytes past the payload
    cat a.zst a.zst > two.zst
    every_reader 1 length two.zst
}

@test "plain streams: cut short or with bytes after them, length (1)" {
    head -c 200000 a.ninfer > cut.ninfer
    every_reader 1 length cut.ninfer
    cp a.ninfer trail.ninfer
    printf 'x' >> trail.ninfer
    every_reader 1 length trail.ninfer
}

@test "the intact stream reads clean through every reader (the cases above can fail)" {
    run -0 --separate-stderr ninfer-verify - < a.zst
    run -0 --separate-stderr bash -c 'ninfer-cat - < a.zst | cmp - a.ninfer'
    run -0 --separate-stderr ninfer-split -o s.ninfer - < a.zst
    run -0 --separate-stderr ninfer-verify s.ninfer
}

@test "a zstd stream that begins with a skippable frame (pzstd, the seekable format) is zstd (red-team E21)" {
    # a skippable frame of 4 bytes (magic 0x184D2A5E, size 4), then the frames
    { printf '\x5e\x2a\x4d\x18\x04\x00\x00\x00abcd'; cat a.zst; } > skip.zst
    run -0 --separate-stderr ninfer-verify - < skip.zst
    run -0 --separate-stderr bash -c 'ninfer-cat - < skip.zst | cmp - a.ninfer'
    if command -v pzstd > /dev/null; then
        pzstd -q -p 2 -c < a.ninfer > p.zst
        run -0 --separate-stderr bash -c 'ninfer-cat - < p.zst | cmp - a.ninfer'
    fi
    # given as a path instead: the magic diagnostic says to read it as a stream
    run -1 --separate-stderr ninfer-verify skip.zst
    [[ "$stderr" == *'this is a zstd-compressed file (a compressed stream is read from standard input'* ]]
}

need_time() {
    [ -x /usr/bin/time ] || skip "/usr/bin/time is missing (Debian package time)"
    [ -z "${NF_WRAPPER:-}" ] || skip "memory is not measured under NF_WRAPPER"
}

@test "a few KB of zstd whose catalog is 120 MiB of spaces: the padding costs no memory" {
    need_time
    local pad=$((120 * 1024 * 1024)) kb limit
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [1], "format": "bf16", "layout": "contiguous_le_v1", "offset": 0, "bytes": 2}], "bindings": {}, "uses": [], "files": [{"path": null, "payload_bytes": 2}]}' > pad.json
    head -c 2 /dev/zero > pay2
    nf-mkartifact --catalog pad.json --payload pay2 --json-bytes $pad -o pad.ninfer
    zstd -q -19 pad.ninfer -o pad.zst 2> /dev/null || ninfer-cat --zstd=19 pad.ninfer > pad.zst
    rm pad.ninfer
    [ "$(nf_size pad.zst)" -lt 65536 ]
    limit=65536
    [ -z "${NF_SANITIZE:-}" ] || limit=400000
    local cmd
    for cmd in "$NF_BIN/ninfer-verify -" "$NF_BIN/ninfer-cat --catalog -" "$NF_BIN/ninfer-split -o s.ninfer -"; do
        rm -f s.ninfer
        /usr/bin/time -f '%M' -o rss bash -c "exec $cmd < pad.zst > /dev/null"
        kb=$(tail -n1 rss)
        echo "# $cmd: peak RSS $kb KiB for a $pad-byte catalog" >&3
        [ "$kb" -lt "$limit" ]
    done
    # and the padding survives byte for byte
    run -0 --separate-stderr bash -c 'ninfer-cat - < pad.zst | wc -c'
    [ "$output" -eq $(((32 + pad + 4095) / 4096 * 4096 + 2)) ]
}

@test "a zstd stream made with --long=31 (a 2 GiB window): unsupported (4) saying so, not a corrupt frame (red-team E2)" {
    # from a pipe (of a file zstd sizes itself, it takes a smaller window)
    zstd -q --long=31 -c < <(cat a.ninfer) > long31.zst
    every_reader 4 unsupported long31.zst
    run -4 --separate-stderr ninfer-verify - < long31.zst
    [ "$stderr" = "ninfer-verify: -: unsupported: zstd stream in the header: the frame needs a 2048 MiB window (zstd --long=31); this reader allows 128 MiB (decompress it first: zstd -d --long=31)" ]
    # a second frame with a long window, after a plain one: said where it is
    { head -c 100000 a.ninfer | zstd -q -c; tail -c +100001 a.ninfer | cat | zstd -q --long=29 -c; } > mixed.zst
    run -4 --separate-stderr ninfer-verify - < mixed.zst
    [[ "$stderr" == *"unsupported: zstd stream "*": the frame needs a 512 MiB window (zstd --long=29); this reader allows 128 MiB (decompress it first: zstd -d --long=29)" ]]
    # --long=27 is within the window: it reads
    zstd -q --long=27 -c < <(cat a.ninfer) > long27.zst
    run -0 --separate-stderr ninfer-verify - < long27.zst
}
