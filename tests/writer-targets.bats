#!/usr/bin/env bats
# Outputs that are not regular files (issue 11 item 3; DESIGN 3): a
# single-file output (ninfer-import -o, ninfer-quant -o) to a character
# device, FIFO or a symlink to one is written through; a writer of file
# sets (pack, split) refuses such a target (usage, exit 2); no writer ever
# replaces a device, FIFO or directory. The devices are made with mknod in
# the test's own directory (skipped where that is not permitted), never
# /dev itself; every case checks that nothing else changed.

load helper

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    nf_make a.ninfer
    nf-mkckpt ck > /dev/null
}

# writers_refuse PATH — split and pack, with and without --force, refuse
# -o PATH with usage (2); nothing in the directory changes.
writers_refuse() {
    local before
    nf_bytes 16 w.bin
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [2, 4], "format": "bf16", "layout": "contiguous_le_v1", "source": {"file": "w.bin"}}], "bindings": {}, "uses": []}' > m.json
    before=$(nf_snapshot .)
    local force
    for force in "" --force; do
        run -2 --separate-stderr ninfer-split $force -o "$1" a.ninfer
        expect_only_codes usage
        expect_unchanged "$before"
        run -2 --separate-stderr ninfer-pack $force -o "$1" m.json
        expect_only_codes usage
        expect_unchanged "$before"
    done
    no_temporaries .
}

@test "split and pack -o a character device (mknod, like /dev/null): usage (2), still a device" {
    nf_mknod_null null
    writers_refuse null
    [ -c null ]
    grep -qF 'output is a character device' <<< "$stderr"
}

@test "split and pack -o a FIFO, a symlink to a device, a directory: usage (2), nothing replaced" {
    mkfifo fifo
    writers_refuse fifo
    [ -p fifo ]
    mkdir dir.ninfer
    writers_refuse dir.ninfer
    [ -d dir.ninfer ]
    nf_mknod_null null
    ln -s null link
    writers_refuse link
    [ -L link ]
    [ -c null ]
}

@test "a part path that is a FIFO, a device or a directory: usage (2), nothing replaced" {
    NF_P=12000 nf_make big.ninfer
    mkfifo t.ninfer.part-0001
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr ninfer-split --force --max-file-bytes 8K -o t.ninfer big.ninfer
    expect_only_codes usage
    expect_unchanged "$before"
    rm t.ninfer.part-0001
    mkdir t.ninfer.part-0002
    before=$(nf_snapshot .)
    run -2 --separate-stderr ninfer-split --force --max-file-bytes 8K -o t.ninfer big.ninfer
    expect_only_codes usage
    expect_unchanged "$before"
    rmdir t.ninfer.part-0002
    nf_mknod_null t.ninfer.part-0001
    before=$(nf_snapshot .)
    run -2 --separate-stderr ninfer-split --force --max-file-bytes 8K -o t.ninfer big.ninfer
    expect_only_codes usage
    expect_unchanged "$before"
    [ -c t.ninfer.part-0001 ]
    no_temporaries .
}

# fifo_read FIFO OUT — read FIFO into OUT in the background (PID in $READER;
# a writer that never opens the FIFO lets it give up after 60 s).
fifo_read() {
    timeout 60 cat "$1" > "$2" 3>&- &
    READER=$!
}

@test "ninfer-import -o a FIFO writes through it; the FIFO stays a FIFO" {
    ninfer-import -q ck > want.json
    mkfifo fifo
    fifo_read fifo got.json
    run -0 --separate-stderr ninfer-import -q -o fifo ck
    wait "$READER"
    cmp want.json got.json
    [ -p fifo ]
    # through a symlink too
    ln -s fifo link
    fifo_read link got2.json
    run -0 --separate-stderr ninfer-import -q -o link ck
    wait "$READER"
    cmp want.json got2.json
    [ -L link ]
    [ -p fifo ]
    no_temporaries .
}

@test "ninfer-import and ninfer-quant -o a character device (mknod null): written through, still a device" {
    nf_mknod_null null
    ninfer-import -q ck > m.json
    local before
    before=$(nf_snapshot .)
    run -0 --separate-stderr ninfer-import -q -o null ck
    [ -c null ]
    run -0 --separate-stderr ninfer-import -q --force -o null ck
    [ -c null ]
    run -0 --separate-stderr ninfer-quant -i m.json -o null 'text/*=q8_g32_fp16'
    [ -c null ]
    expect_unchanged "$before"
    no_temporaries .
}

@test "-o a link to /proc/self/fd/1 (what /dev/stdout is): into the file or pipe standard output already is" {
    # a link of our own, never /dev/stdout itself: a writer that replaced
    # the link would replace only this one
    ln -s /proc/self/fd/1 stdout
    ninfer-import -q ck > want.json
    # standard output a regular file: the bytes land in it
    run -0 bash -c 'ninfer-import -q -o stdout ck > got.json'
    cmp want.json got.json
    [ -L stdout ]
    # a pipe
    run -0 bash -c 'ninfer-import -q -o stdout ck | cat > got2.json'
    cmp want.json got2.json
    [ -L stdout ]
    run -0 bash -c 'ninfer-quant -i want.json -o stdout "text/*=q8_g32_fp16" > q.json'
    grep -q q8_g32_fp16 q.json
    [ "$(readlink stdout)" = /proc/self/fd/1 ]
}

@test "import and quant -o a directory: usage (2), nothing written" {
    mkdir out
    ninfer-import -q ck > m.json
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr ninfer-import -q -o out ck
    expect_only_codes usage
    run -2 --separate-stderr ninfer-quant -i m.json -o out 'text/*=q8_g32_fp16'
    expect_only_codes usage
    run -2 --separate-stderr ninfer-import -q -o out/ ck
    expect_only_codes usage
    expect_unchanged "$before"
}

@test "import and quant -o naming an input: usage (2), the input intact" {
    ninfer-import -q ck > m.json
    ln -s m.json link.json
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr ninfer-quant --force -i m.json -o m.json 'text/*=q8_g32_fp16'
    expect_only_codes usage
    run -2 --separate-stderr ninfer-quant --force -i m.json -o link.json 'text/*=q8_g32_fp16'
    expect_only_codes usage
    run -2 --separate-stderr ninfer-import -q --force -o ck/model.safetensors ck/model.safetensors --config ck/config.json
    expect_only_codes usage
    expect_unchanged "$before"
}

@test "--json-bytes above --max-json-bytes is usage (2) before any work: no catalog every reader refuses, no N-byte allocation (red-team E9)" {
    local before cmd
    nf_bytes 16 w.bin
    printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [2, 4], "format": "bf16", "layout": "contiguous_le_v1", "source": {"file": "w.bin"}}], "bindings": {}, "uses": []}' > m.json
    before=$(nf_snapshot .)
    for cmd in "ninfer-pack -o x.ninfer m.json" "ninfer-split -o x.ninfer a.ninfer"; do
        run -2 --separate-stderr $cmd --json-bytes 300M
        [ "$stderr" = "${cmd%% *}: usage: --json-bytes 314572800 is over --max-json-bytes 268435456: readers refuse such a catalog with their default cap (raise --max-json-bytes here and in every reader) (see '${cmd%% *} --help')" ]
        run -2 --separate-stderr $cmd --json-bytes 1T
        [[ "$stderr" == *"usage: --json-bytes 1099511627776 is over --max-json-bytes 268435456"* ]]
        run -2 --separate-stderr $cmd --max-json-bytes 64K --json-bytes 65537
        [[ "$stderr" == *"usage: --json-bytes 65537 is over --max-json-bytes 65536"* ]]
    done
    expect_unchanged "$before"
    # at the cap it is written, and read back with the default cap
    run -0 --separate-stderr ninfer-pack -o y.ninfer --json-bytes 64K --max-json-bytes 64K m.json
    run -0 --separate-stderr ninfer-cat --header y.ninfer
    [[ "$output" == *'"json_bytes": 65536'* ]]
    run -0 --separate-stderr ninfer-verify y.ninfer
}

@test "a writer that fails removes the directories it made for the output, and only those (red-team E28)" {
    ninfer-cat a.ninfer > s.ninfer
    head -c $(($(nf_size s.ninfer) - 100)) s.ninfer > cut.ninfer
    mkdir keep
    local before
    before=$(nf_snapshot .)
    run -1 --separate-stderr ninfer-split -o new/a/b/x.ninfer - < cut.ninfer
    expect_only_codes length
    run -1 --separate-stderr ninfer-split --max-file-bytes 8K -o keep/sub/x.ninfer - < cut.ninfer
    expect_only_codes length
    [ ! -e new ]
    [ ! -e keep/sub ]
    [ -d keep ]
    [ "$(find . -type d | sort)" = "$(printf '.\n./ck\n./keep')" ]
    expect_unchanged "$before"
    # a success keeps the directories it made
    run -0 --separate-stderr ninfer-split -q -o new/a/x.ninfer - < s.ninfer
    [ -f new/a/x.ninfer ]
}
