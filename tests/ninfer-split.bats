#!/usr/bin/env bats
# ninfer-split: placement (spec 2.3 and 3.3), round trips, streams, digests,
# and the writer's publication rules (DESIGN 3 and 9, spec 11.4): no
# overwrite without --force, leftovers, refusing to write over an input,
# full disks, read-only directories and signals leave no temporaries.

load helper

# the split suite's artifacts carry a 20000-byte payload (nf_payload's size)
export NF_P=20000

# The split catalog: a 20000-byte payload with a tensor w.b [4096, 12288)
# that crosses the 8192 boundary of a 12288-byte limit, and a resource
# [12300, 20000) crossing the next one.
split_source() {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_tensor w.b '[64, 64]' 4096 8192), $(nf_resource r.tok 12300 7700)]" \
    NF_BINDINGS='{"text/a": {"object": "w.a"}, "text/b": {"parts": [{"object": "w.b", "range": [0, 2048]}, {"object": "w.b", "range": [2048, 4096]}]}}' \
    NF_COMPONENTS='{"text": {"config": {"architectures": ["TestForCausalLM"], "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "n": -0}, "resources": {"tokenizer.json": "r.tok"}}}' \
    NF_EXTRA=', "metadata": {"name": "tiny", "score": 0.10, "e": 1E+2}, "provenance": {"converter": {"tool": "hand", "v": [1.0, 2e0]}}' \
        nf_make "$@"
}

# catalog_sans_files ENTRY — the stored catalog without its files member.
catalog_sans_files() {
    ninfer-cat --catalog "$1" | sed 's/"files":\[[^]]*\],\{0,1\}//'
}

# artifact_id ENTRY
artifact_id() {
    ninfer-cat --header "$1" | sed -n 's/.*"artifact_id": *"\([0-9a-f]*\)".*/\1/p'
}

# nothing_named PREFIX — no file in . starts with PREFIX (targets or parts).
nothing_named() {
    local left
    left=$(find . -maxdepth 1 -name "$1*" -print)
    if [ -n "$left" ]; then
        echo "left behind: $left" >&2
        return 1
    fi
}

# ---- placement ---------------------------------------------------------------

@test "spec 3.3 example: --dry-run of a 31,999,938,560-byte payload prints the two-file table" {
    local p=31999938560
    NF_P=$p NF_OBJECTS="[$(nf_resource r.big 0 $p)]" NF_BINDINGS='{}' NF_USES='[]' \
    NF_COMPONENTS='{"text": {"config": {}, "resources": {"blob": "r.big"}}}' \
        nf_catalog > big.json
    nf-mkartifact --catalog big.json --payload zero:$p -o big.ninfer
    run -0 --separate-stderr ninfer-split --json-bytes 65504 --max-file-bytes 32000000000 --dry-run -o out/big.ninfer big.ninfer
    [ "$(tr -d ' \n' <<< "$output")" = '[{"path":null,"payload_bytes":31999934464},{"path":"big.ninfer.part-0001","payload_bytes":4096}]' ]
    [ ! -e out ]
    [ "$(ls -A | grep -v '^separate-stderr' | tr '\n' ' ')" = "big.json big.ninfer " ]
    # the entry would be exactly the limit: 65536 + 31999934464
    [ $((65536 + 31999934464)) -eq 32000000000 ]
}

@test "placement: entry and parts filled to capacity, the last part takes the rest" {
    split_source a.ninfer
    run -0 --separate-stderr ninfer-split --max-file-bytes 12288 -o s.ninfer a.ninfer
    run -0 ninfer-cat --files s.ninfer
    [ "$(tr -d ' \n' <<< "$output")" = '[{"index":0,"path":"s.ninfer","payload_bytes":8192,"logical_offset":0,"file_bytes":12288},{"index":1,"path":"s.ninfer.part-0001","payload_bytes":8192,"logical_offset":8192,"file_bytes":12288},{"index":2,"path":"s.ninfer.part-0002","payload_bytes":3616,"logical_offset":16384,"file_bytes":7712}]' ]
    [ "$(nf_size s.ninfer)" -eq 12288 ]
    [ "$(nf_size s.ninfer.part-0001)" -eq 12288 ]
    [ "$(nf_size s.ninfer.part-0002)" -eq 7712 ]
    [ ! -e s.ninfer.part-0003 ]
    run -0 --separate-stderr ninfer-verify s.ninfer
}

@test "placement: a limit that holds the whole artifact keeps one file" {
    split_source a.ninfer
    run -0 --separate-stderr ninfer-split --max-file-bytes 1M -o s.ninfer a.ninfer
    [ ! -e s.ninfer.part-0001 ]
    run -0 ninfer-cat --files s.ninfer
    [ "$(json_field payload_bytes)" = 20000 ]
}

@test "--dry-run prints the files table the real run writes, and writes nothing" {
    split_source a.ninfer
    run -0 --separate-stderr ninfer-split --dry-run --max-file-bytes 12288 -o s.ninfer a.ninfer
    local planned
    planned=$(tr -d ' \n' <<< "$output")
    nothing_named s.ninfer
    no_temporaries .
    ninfer-split --max-file-bytes 12288 -o s.ninfer a.ninfer
    ninfer-cat --catalog s.ninfer | grep -qF "\"files\":$planned"
}

@test "--json-bytes 65504 reserves the catalog: entry_payload_start 65536" {
    split_source a.ninfer
    run -0 --separate-stderr ninfer-split --json-bytes 65504 -o s.ninfer a.ninfer
    run -0 ninfer-cat --header s.ninfer
    [ "$(json_field json_bytes)" = 65504 ]
    [ "$(json_field entry_payload_start)" = 65536 ]
    [ "$(nf_size s.ninfer)" -eq $((65536 + 20000)) ]
    run -0 --separate-stderr ninfer-verify s.ninfer
}

@test "--json-bytes too small for the catalog -> usage (2), nothing written" {
    split_source a.ninfer
    run -2 --separate-stderr ninfer-split --json-bytes 100 -o s.ninfer a.ninfer
    expect_only_codes usage
    nothing_named s.ninfer
    no_temporaries .
    run -2 ninfer-split --json-bytes 100 --dry-run -o s.ninfer a.ninfer
}

@test "--max-file-bytes too small for the headers -> usage (2)" {
    split_source a.ninfer
    # the entry needs 4096 bytes of header and catalog plus one 4096 block
    run -2 --separate-stderr ninfer-split --max-file-bytes 8191 -o s.ninfer a.ninfer
    expect_only_codes usage
    run -2 ninfer-split --max-file-bytes 4096 -o s.ninfer a.ninfer
    run -2 ninfer-split --max-file-bytes 0 -o s.ninfer a.ninfer
    run -2 ninfer-split --max-file-bytes 12x -o s.ninfer a.ninfer
    nothing_named s.ninfer
    no_temporaries .
    # 8K is the smallest limit that works here: 4 files of 4096 payload bytes + the rest
    run -0 ninfer-split --max-file-bytes 8K -o s.ninfer a.ninfer
    [ -e s.ninfer.part-0004 ]
    run -0 --separate-stderr ninfer-verify s.ninfer
}

@test "sizes as coreutils reads them: K and KiB are 1024s, KB 1000s; a bad size says why (2)" {
    split_source a.ninfer
    local before
    # 12K = 12288: an entry of 8192 payload bytes, then parts; 12KB = 12000:
    # 4096 in each file
    run -0 --separate-stderr ninfer-split --dry-run --max-file-bytes 12K -o s.ninfer a.ninfer
    local k=$output
    run -0 --separate-stderr ninfer-split --dry-run --max-file-bytes 12KiB -o s.ninfer a.ninfer
    [ "$output" = "$k" ]
    run -0 --separate-stderr ninfer-split --dry-run --max-file-bytes 12288 -o s.ninfer a.ninfer
    [ "$output" = "$k" ]
    [[ "$k" == *'"payload_bytes": 8192'* ]]
    run -0 --separate-stderr ninfer-split --dry-run --max-file-bytes 12KB -o s.ninfer a.ninfer
    [ "$output" = "$(ninfer-split --dry-run --max-file-bytes 12000 -o s.ninfer a.ninfer)" ]
    [[ "$output" != *'"payload_bytes": 8192'* ]]
    before=$(nf_snapshot .)
    local arg why
    while IFS='|' read -r arg why; do
        run -2 --separate-stderr ninfer-split --max-file-bytes "$arg" -o s.ninfer a.ninfer
        [ "$stderr" = "ninfer-split: usage: bad --max-file-bytes '$arg': $why (see 'ninfer-split --help')" ] ||
            { echo "$arg: $stderr" >&2; return 1; }
    done <<'EOF2'
|empty
-8K|negative
1.5M|not a whole number
10X|unknown suffix (K M G T, KiB MiB GiB TiB, KB MB GB TB)
10Mb|unknown suffix (K M G T, KiB MiB GiB TiB, KB MB GB TB)
99999999999999999999|too large (over 2^64 - 1 bytes)
16777216T|too large (over 2^64 - 1 bytes)
0|zero (give a positive size)
EOF2
    run -2 --separate-stderr ninfer-cat --range 1KB:x a.ninfer
    [ "$stderr" = "ninfer-cat: usage: bad --range length 'x': not a number (a byte count, optionally with a suffix) (see 'ninfer-cat --help')" ]
    run -2 --separate-stderr ninfer-verify --max-json-bytes 1XB a.ninfer
    [[ "$stderr" == *"bad --max-json-bytes '1XB': unknown suffix"* ]]
    expect_unchanged "$before"
    # --range counts in the same units
    run -0 bash -c 'ninfer-cat --range 1KB:1KiB a.ninfer | cmp - <(ninfer-cat --range 1000:1024 a.ninfer)'
}

# ---- round trips ---------------------------------------------------------

@test "round trip: split (objects cross part boundaries), verify, merge: same payload and catalog" {
    split_source a.ninfer
    ninfer-split -o d.ninfer a.ninfer          # d: one file, with digests
    run -0 --separate-stderr ninfer-split --max-file-bytes 12288 -o s.ninfer d.ninfer
    [ -e s.ninfer.part-0002 ]
    run -0 --separate-stderr ninfer-verify s.ninfer
    [ "$output" = "s.ninfer: OK (3 digests checked)" ]
    run -0 --separate-stderr ninfer-split -o m.ninfer s.ninfer
    [ ! -e m.ninfer.part-0001 ]
    run -0 --separate-stderr ninfer-verify m.ninfer
    ninfer-cat --range 0:20000 m.ninfer | cmp - "$(nf_payload)"
    ninfer-cat --range 0:20000 s.ninfer | cmp - "$(nf_payload)"
    ninfer-cat --object w.b s.ninfer | cmp - <(tail -c +4097 "$(nf_payload)" | head -c 8192)
    # catalogs agree apart from files (and the header's artifact_id)
    catalog_sans_files d.ninfer > d.cat
    catalog_sans_files s.ninfer > s.cat
    catalog_sans_files m.ninfer > m.cat
    cmp d.cat s.cat
    cmp d.cat m.cat
    # config, metadata and provenance keep their number text
    grep -qF '"rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "n": -0' m.cat
    grep -qF '0.10' m.cat
    grep -qF '1E+2' m.cat
    grep -qF '2e0' m.cat
    # every file set has its own artifact_id
    [ "$(artifact_id d.ninfer)" != "$(artifact_id s.ninfer)" ]
    [ "$(artifact_id s.ninfer)" != "$(artifact_id m.ninfer)" ]
}

@test "round trip of a hand-made artifact with odd segments (1,999,...)" {
    nf_make h.ninfer 1 999 19000
    run -0 --separate-stderr ninfer-split --max-file-bytes 12288 -o s.ninfer h.ninfer
    run -0 --separate-stderr ninfer-verify s.ninfer
    run -0 --separate-stderr ninfer-split -o m.ninfer s.ninfer
    ninfer-cat --range 0:20000 m.ninfer | cmp - "$(nf_payload)"
}

@test "digests: missing ones are computed from the objects' bytes; --no-digests writes none" {
    split_source a.ninfer
    ninfer-split -o d.ninfer a.ninfer
    local id h
    for id in w.a w.b r.tok; do
        h=$(ninfer-cat --object "$id" a.ninfer | sha256sum | cut -d' ' -f1)
        ninfer-cat --catalog d.ninfer | grep -qF "\"$id\":\"$h\""
    done
    ninfer-split --no-digests -o n.ninfer d.ninfer
    run -0 ninfer-cat --catalog n.ninfer
    [[ "$output" != *integrity* ]]
    run -0 --separate-stderr ninfer-verify n.ninfer
    [ "$output" = "n.ninfer: OK (0 digests checked)" ]
}

@test "digests: a corrupted object is copied from files, but caught with --verify (1)" {
    split_source a.ninfer
    ninfer-split --max-file-bytes 12288 -o d.ninfer a.ninfer
    nf_flip d.ninfer.part-0001 $((4096 + 100))        # inside w.b
    run -0 --separate-stderr ninfer-split -o c.ninfer d.ninfer
    run -1 --separate-stderr ninfer-verify c.ninfer
    expect_only_codes digest
    local before
    before=$(nf_snapshot .)
    run -1 --separate-stderr ninfer-split --verify -o v.ninfer d.ninfer
    expect_only_codes digest
    # the input whose bytes are bad is named (w.b lies across the entry and
    # part 1: the entry, with both files' ranges), never the output
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ "$stderr" == "ninfer-split: d.ninfer: /objects/1: digest: object \"w.b\": sha256 "*"; its bytes: d.ninfer bytes [8192, +4096), d.ninfer.part-0001 bytes [4096, +4096)" ]]
    [[ "$stderr" != *v.ninfer* ]]
    nothing_named v.ninfer
    no_temporaries .
    expect_unchanged "$before"
}

@test "digests: a corrupted object in a stream fails the run (1), nothing published" {
    split_source a.ninfer
    ninfer-split -o d.ninfer a.ninfer
    ninfer-cat d.ninfer > s
    local eps
    eps=$(ninfer-cat --header d.ninfer | sed -n 's/.*"entry_payload_start": *\([0-9]*\).*/\1/p')
    nf_flip s $((eps + 15000))                         # inside r.tok
    run -1 --separate-stderr ninfer-split --max-file-bytes 12288 -o x.ninfer - < s
    expect_only_codes digest
    # the input, a stream: named as its operand
    [[ "$stderr" == "ninfer-split: -: /objects/2: digest: object \"r.tok\": sha256 "* ]]
    nothing_named x.ninfer
    no_temporaries .
}

# ---- streams -------------------------------------------------------------

@test "stream in and out: ninfer-cat x | ninfer-split -o y -" {
    split_source a.ninfer
    ninfer-split --max-file-bytes 12288 -o x.ninfer a.ninfer
    ninfer-cat x.ninfer | ninfer-split -o y.ninfer -
    run -0 --separate-stderr ninfer-verify y.ninfer
    [ "$output" = "y.ninfer: OK (3 digests checked)" ]
    ninfer-cat --range 0:20000 y.ninfer | cmp - "$(nf_payload)"
    ninfer-cat x.ninfer | ninfer-split --max-file-bytes 12288 -o z.ninfer -
    [ -e z.ninfer.part-0002 ]
    run -0 --separate-stderr ninfer-verify z.ninfer
    [ "$(catalog_sans_files z.ninfer)" = "$(catalog_sans_files x.ninfer)" ]
}

@test "zstd stream in: ninfer-cat --zstd x | ninfer-split -o y -" {
    split_source a.ninfer
    ninfer-split --max-file-bytes 12288 -o x.ninfer a.ninfer
    ninfer-cat --zstd x.ninfer | ninfer-split --max-file-bytes 12288 -o y.ninfer -
    run -0 --separate-stderr ninfer-verify y.ninfer
    ninfer-cat --range 0:20000 y.ninfer | cmp - "$(nf_payload)"
}

@test "stream out on stdout (no -o, and -o -), plain and --zstd" {
    split_source a.ninfer
    ninfer-split --max-file-bytes 12288 -o x.ninfer a.ninfer
    ninfer-split x.ninfer > s1
    run -0 --separate-stderr ninfer-verify s1
    [ "$output" = "s1: OK (3 digests checked)" ]
    ninfer-split -o - x.ninfer > s2
    run -0 --separate-stderr ninfer-verify s2
    ninfer-split --zstd x.ninfer > s3
    [ "$(od -An -tx1 -N4 s3 | tr -d ' \n')" = 28b52ffd ]
    run -0 --separate-stderr ninfer-verify - < s3
    # stream to stream
    ninfer-cat x.ninfer | ninfer-split - > s4
    run -0 --separate-stderr ninfer-verify s4
    ninfer-cat --range 0:20000 s4 | cmp - "$(nf_payload)"
}

@test "a stream that ends early -> length (1), nothing published" {
    split_source a.ninfer
    head -c 9000 a.ninfer > short
    run -1 --separate-stderr ninfer-split -o x.ninfer - < short
    expect_only_codes length
    nothing_named x.ninfer
    no_temporaries .
}

@test "a multi-file catalog on stdin is refused -> files (1)" {
    split_source a.ninfer 8192 11808
    run -1 --separate-stderr ninfer-split -o x.ninfer - < a.ninfer
    expect_only_codes files
    nothing_named x.ninfer
}

@test "usage: --max-file-bytes without -o, --zstd with files, an artifact to a terminal (2)" {
    split_source a.ninfer
    run -2 ninfer-split --max-file-bytes 12288 a.ninfer
    run -2 ninfer-split --zstd -o z.ninfer a.ninfer
    nothing_named z.ninfer
    run -2 ninfer-split --bogus a.ninfer
    run -0 ninfer-split --help
    if command -v script > /dev/null; then
        run -2 script -qec "ninfer-split a.ninfer" /dev/null
    fi
}

@test "an input that breaks a rule -> (1) with its code, nothing written" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource r.tok 8 19992)]" nf_make a.ninfer
    run -1 --separate-stderr ninfer-split -o x.ninfer a.ninfer
    expect_only_codes overlap
    nothing_named x.ninfer
    nf_make b.ninfer 10000 10000
    rm b.ninfer.part-0001
    run -3 --separate-stderr ninfer-split -o y.ninfer b.ninfer
    expect_only_codes part-missing
    nothing_named y.ninfer
    no_temporaries .
}

# ---- publication --------------------------------------------------------------

@test "an existing target is refused (3) and left untouched" {
    split_source a.ninfer
    ninfer-split --max-file-bytes 12288 -o t.ninfer a.ninfer
    local before
    before=$(sha256sum t.ninfer*)
    run -3 --separate-stderr ninfer-split -o t.ninfer a.ninfer
    expect_only_codes io
    [ "$(sha256sum t.ninfer*)" = "$before" ]
    no_temporaries .
}

@test "--force replaces the target and removes the old set's surplus parts" {
    split_source a.ninfer
    ninfer-split --max-file-bytes 8K -o t.ninfer a.ninfer
    [ -e t.ninfer.part-0004 ]
    local old
    old=$(artifact_id t.ninfer)
    run -0 --separate-stderr ninfer-split --force --max-file-bytes 12288 -o t.ninfer a.ninfer
    [ -e t.ninfer.part-0002 ]
    [ ! -e t.ninfer.part-0003 ]
    [ ! -e t.ninfer.part-0004 ]
    [ "$(artifact_id t.ninfer)" != "$old" ]
    run -0 --separate-stderr ninfer-verify t.ninfer
    # and down to one file
    run -0 --separate-stderr ninfer-split --force -o t.ninfer a.ninfer
    [ ! -e t.ninfer.part-0001 ]
    run -0 --separate-stderr ninfer-verify t.ninfer
    no_temporaries .
}

@test "--force that fails while writing leaves the old set intact" {
    need_shim
    split_source a.ninfer
    ninfer-split --max-file-bytes 12288 -o t.ninfer a.ninfer
    local before
    before=$(sha256sum t.ninfer*)
    run -3 --separate-stderr nf_failwrite 5000 ENOSPC ninfer-split --force --max-file-bytes 8K -o t.ninfer a.ninfer
    expect_only_codes io
    [ "$(sha256sum t.ninfer*)" = "$before" ]
    no_temporaries .
}

@test "leftover parts without an entry are replaced, with a warning" {
    split_source a.ninfer
    ninfer-split --max-file-bytes 12288 -o t.ninfer a.ninfer
    rm t.ninfer
    run -0 --separate-stderr ninfer-split --max-file-bytes 12288 -o t.ninfer a.ninfer
    grep -q 'leftover' <<< "$stderr"
    grep -qF 't.ninfer.part-0001' <<< "$stderr"
    run -0 --separate-stderr ninfer-verify t.ninfer
    no_temporaries .
}

@test "-o naming the input's entry is refused before writing (2), input intact" {
    split_source a.ninfer
    local before
    before=$(nf_sha256 a.ninfer)
    run -2 --separate-stderr ninfer-split -o a.ninfer a.ninfer
    expect_only_codes usage
    run -2 --separate-stderr ninfer-split --force -o a.ninfer a.ninfer
    expect_only_codes usage
    mkdir sub
    run -2 --separate-stderr ninfer-split --force -o ./sub/../a.ninfer a.ninfer
    [ "$(nf_sha256 a.ninfer)" = "$before" ]
    no_temporaries .
}

@test "-o naming one of the input's parts is refused before writing (2), input intact" {
    split_source a.ninfer
    ninfer-split --max-file-bytes 12288 -o p.ninfer a.ninfer
    local before
    before=$(sha256sum p.ninfer*)
    run -2 --separate-stderr ninfer-split --force -o p.ninfer.part-0002 p.ninfer
    expect_only_codes usage
    run -2 --separate-stderr ninfer-split --force --max-file-bytes 12288 -o p.ninfer.part-0001 p.ninfer
    expect_only_codes usage
    [ "$(sha256sum p.ninfer*)" = "$before" ]
    run -0 --separate-stderr ninfer-verify p.ninfer
}

@test "-o reaching an input through a symlink or a hard link is refused (2)" {
    split_source a.ninfer
    local before
    before=$(nf_sha256 a.ninfer)
    ln -s a.ninfer sym.ninfer
    run -2 --separate-stderr ninfer-split --force -o sym.ninfer a.ninfer
    expect_only_codes usage
    ln a.ninfer hard.ninfer
    run -2 --separate-stderr ninfer-split --force -o hard.ninfer a.ninfer
    expect_only_codes usage
    [ "$(nf_sha256 a.ninfer)" = "$before" ]
}

@test "the target's directory is created when missing" {
    split_source a.ninfer
    run -0 --separate-stderr ninfer-split --max-file-bytes 12288 -o new/dir/t.ninfer a.ninfer
    run -0 --separate-stderr ninfer-verify new/dir/t.ninfer
}

# ---- faults ---------------------------------------------------------------------

@test "full disk: a stream to /dev/full -> io (3)" {
    split_source a.ninfer
    run -3 --separate-stderr bash -c 'ninfer-split -o - a.ninfer > /dev/full'
    expect_only_codes io
    run -3 --separate-stderr bash -c 'ninfer-split a.ninfer > /dev/full'
    expect_only_codes io
    run -3 --separate-stderr bash -c 'ninfer-cat a.ninfer | ninfer-split - > /dev/full'
    expect_only_codes io
}

@test "full disk: --dry-run's table to /dev/full -> (3)" {
    split_source a.ninfer
    run -3 bash -c 'ninfer-split --dry-run -o t.ninfer a.ninfer > /dev/full'
}

@test "full disk (write shim, ENOSPC after 5000 bytes) -> io (3), no temporaries, no targets" {
    need_shim
    split_source a.ninfer
    run -3 --separate-stderr nf_failwrite 5000 ENOSPC ninfer-split -o t.ninfer a.ninfer
    expect_only_codes io
    grep -q 'No space left on device' <<< "$stderr"
    no_temporaries .
    nothing_named t.ninfer
    run -3 --separate-stderr nf_failwrite 5000 ENOSPC ninfer-split --max-file-bytes 12288 -o t.ninfer a.ninfer
    expect_only_codes io
    no_temporaries .
    nothing_named t.ninfer
}

@test "write errors EIO and EFBIG (shim) in later parts -> io (3), nothing left" {
    need_shim
    split_source a.ninfer
    run -3 --separate-stderr nf_failwrite 15000 EIO ninfer-split --max-file-bytes 8K -o t.ninfer a.ninfer
    expect_only_codes io
    no_temporaries .
    nothing_named t.ninfer
    run -3 --separate-stderr nf_failwrite 20000 EFBIG ninfer-split --verify --max-file-bytes 8K -o t.ninfer a.ninfer
    expect_only_codes io
    no_temporaries .
    nothing_named t.ninfer
    # from a stream as well
    ninfer-cat a.ninfer > s
    run -3 --separate-stderr nf_failwrite 10000 ENOSPC ninfer-split --max-file-bytes 8K -o t.ninfer - < s
    expect_only_codes io
    no_temporaries .
    nothing_named t.ninfer
}

@test "read-only target directory -> io (3), clean" {
    split_source a.ninfer
    mkdir ro
    if [ "$(id -u)" -ne 0 ]; then
        chmod 555 ro
        run -3 --separate-stderr ninfer-split -o ro/t.ninfer a.ninfer
        chmod 755 ro
    else
        # root ignores the mode bits: try as nobody, else skip
        command -v setpriv > /dev/null || skip "running as root without setpriv(1)"
        local d
        d=$(mktemp -d /tmp/nf-split-ro.XXXXXX)
        chmod 755 "$d"
        cp a.ninfer "$d/"
        chmod 644 "$d/a.ninfer"
        mkdir "$d/ro"
        chmod 555 "$d/ro"
        if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$NF_BIN/ninfer-split" ||
            ! setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$d/a.ninfer"; then
            rm -rf "$d"
            skip "running as root and nobody cannot reach the binaries"
        fi
        run -3 --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
            ${NF_WRAPPER:-} "$NF_BIN/ninfer-split" -o "$d/ro/t.ninfer" "$d/a.ninfer"
        local listing
        listing=$(ls -A "$d/ro")
        rm -rf "$d"
        [ -z "$listing" ]
    fi
    expect_only_codes io
    [ -z "$(ls -A ro)" ]
}

# interrupt SIGNAL — start a split (into two parts) of a stream that the
# test feeds only to the middle of its payload, so the split is held there
# with its temporaries (issue 12: a known point, no race with the clock);
# send SIGNAL: it dies of it and leaves nothing behind.
interrupt() {
    local sig=$1 p=$((3 * 1024 * 1024))
    printf '{"components": {"text": {"config": {}, "resources": {"blob": "r.big"}}}, "objects": [%s], "bindings": {}, "uses": [], "files": [{"path": null, "payload_bytes": %d}]}' \
        "$(nf_resource r.big 0 $p)" "$p" > big.json
    nf-mkartifact --catalog big.json --payload zero:$p -o big.ninfer
    mkdir out
    stall_start big.ninfer $((p / 2)) ninfer-split --no-sync --max-file-bytes 2M -o out/big.ninfer -
    wait_until "the split holds its temporaries" temps_in out 2
    # the job's own process group: the program, and any NF_WRAPPER around it
    stall_signal "$sig"
    echo "status $STALL_STATUS"
    [ "$STALL_STATUS" -eq $((128 + $(kill -l "$sig"))) ]
    no_temporaries out
    [ -z "$(ls -A out)" ]
}

@test "SIGINT during a large split leaves no temporaries" {
    interrupt INT
}

@test "SIGTERM during a large split leaves no temporaries" {
    interrupt TERM
}

@test "SIGHUP during a large split leaves no temporaries" {
    interrupt HUP
}

@test "temporaries of a killed earlier run are removed once their process is gone" {
    split_source a.ninfer
    local dead live
    sh -c 'exit 0' &
    dead=$!
    wait "$dead"
    live=$BASHPID
    : > ".t.ninfer.tmp-$dead-AbCdEf"
    : > ".t.ninfer.part-0001.tmp-$dead-GhIjKl"
    : > ".t.ninfer.tmp-$live-MnOpQr"          # a live writer's: kept
    : > ".other.ninfer.tmp-$dead-StUvWx"      # another target's: kept
    run -0 --separate-stderr ninfer-split --max-file-bytes 12288 -o t.ninfer a.ninfer
    [ ! -e ".t.ninfer.tmp-$dead-AbCdEf" ]
    [ ! -e ".t.ninfer.part-0001.tmp-$dead-GhIjKl" ]
    [ -e ".t.ninfer.tmp-$live-MnOpQr" ]
    [ -e ".other.ninfer.tmp-$dead-StUvWx" ]
    run -0 --separate-stderr ninfer-verify t.ninfer
}

@test "SIGKILL leaves temporaries behind; the next run to that target removes them" {
    local p=$((3 * 1024 * 1024))
    printf '{"components": {"text": {"config": {}, "resources": {"blob": "r.big"}}}, "objects": [%s], "bindings": {}, "uses": [], "files": [{"path": null, "payload_bytes": %d}]}' \
        "$(nf_resource r.big 0 $p)" "$p" > big.json
    nf-mkartifact --catalog big.json --payload zero:$p -o big.ninfer
    split_source a.ninfer
    mkdir out
    stall_start big.ninfer $((p / 2)) ninfer-split --no-sync --max-file-bytes 2M -o out/t.ninfer -
    wait_until "the split holds its temporaries" temps_in out 2
    stall_signal KILL
    [ -n "$(find out -name '.t.ninfer*tmp*' -print -quit)" ]
    run -0 --separate-stderr ninfer-split -o out/t.ninfer a.ninfer
    no_temporaries out
    [ "$(ls -A out)" = t.ninfer ]
}
