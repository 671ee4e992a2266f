#!/usr/bin/env bats
# One rule for every output (issue 11 items 14 and 15; DESIGN 3): pack,
# split, import and quant alike refuse to replace an existing regular file
# without --force and create a missing output directory; binary output is
# refused on a terminal (exit 2) by every command; a quant rule that
# matches no parameter is a usage error naming it, so a typo never ships an
# unquantized manifest.

load helper

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    nf-mkckpt ck > /dev/null
    ninfer-import -q ck > m.json
}

@test "import and quant keep an existing output (io, 3) and replace it with --force" {
    echo "keep me" > out.json
    local before
    before=$(nf_snapshot .)
    run -3 --separate-stderr ninfer-import -q -o out.json ck
    expect_only_codes io
    grep -qF 'out.json: io: output exists; use --force to replace it' <<< "$stderr"
    run -3 --separate-stderr ninfer-quant -i m.json -o out.json 'text/*=q8_g32_fp16'
    expect_only_codes io
    expect_unchanged "$before"
    run -0 --separate-stderr ninfer-import -q --force -o out.json ck
    cmp m.json out.json
    run -0 --separate-stderr ninfer-quant --force -i m.json -o out.json 'text/*=q8_g32_fp16'
    grep -q '"format": "q8_g32_fp16"' out.json
    no_temporaries .
}

@test "pack and split keep an existing entry (io, 3): the same rule" {
    ninfer-pack -q -o a.ninfer m.json
    local before
    before=$(nf_snapshot .)
    run -3 --separate-stderr ninfer-pack -q -o a.ninfer m.json
    expect_only_codes io
    run -0 --separate-stderr ninfer-split -o a.ninfer.copy a.ninfer
    run -3 --separate-stderr ninfer-split -o a.ninfer.copy a.ninfer
    expect_only_codes io
    echo "a user's file" > u.ninfer
    before=$(nf_snapshot .)
    run -3 --separate-stderr ninfer-split -o u.ninfer a.ninfer
    expect_only_codes io
    expect_unchanged "$before"
}

@test "--force through a symlink to a regular file: the link stays, the file it names is replaced" {
    mkdir real
    echo old > real/out.json
    ln -s real/out.json link.json
    run -0 --separate-stderr ninfer-import -q --force -o link.json ck
    [ -L link.json ]
    cmp m.json real/out.json
    run -0 --separate-stderr ninfer-quant --force -i m.json -o link.json 'text/*=q4_g64_fp16'
    [ -L link.json ]
    grep -q q4_g64_fp16 real/out.json
    no_temporaries .
    no_temporaries real
}

@test "a missing output directory is created: import, quant, pack and split alike" {
    run -0 --separate-stderr ninfer-import -q -o d1/e/m.json ck
    # the same manifest, but provenance names the checkpoint from where it is
    grep -qxF '        "path": "../../ck",' d1/e/m.json
    cmp m.json <(sed 's|^        "path": "../../ck",$|        "path": "ck",|' d1/e/m.json)
    run -0 --separate-stderr ninfer-quant -i m.json -o d2/e/q.json 'text/*=q8_g32_fp16'
    grep -q q8_g32_fp16 d2/e/q.json
    run -0 --separate-stderr ninfer-pack -q -o d3/e/m.ninfer m.json
    run -0 --separate-stderr ninfer-split -o d4/e/m.ninfer d3/e/m.ninfer
    run -0 --separate-stderr ninfer-verify d4/e/m.ninfer
}

@test "a GGUF import writes its manifest and nothing else: an existing manifest is kept without --force" {
    nf-mkarch --arch llama ckg
    nf-mkgguf --alignment 64 ckg g.gguf
    mkdir w && cd w
    run -0 --separate-stderr ninfer-import -q -o gm.json ../g.gguf
    [ "$(ls -A)" = gm.json ]
    local before
    before=$(nf_snapshot .)
    run -3 --separate-stderr ninfer-import -q -o gm.json ../g.gguf
    expect_only_codes io
    expect_unchanged "$before"
    run -0 --separate-stderr ninfer-import -q --force -o gm.json ../g.gguf
    [ "$(ls -A)" = gm.json ]
    grep -qF '"gguf.prefix": "r.gguf.prefix"' gm.json
}

# on_tty CMD — run CMD with standard output on a pseudo-terminal (script(1));
# its exit status is CMD's.
on_tty() {
    command -v script > /dev/null || skip "script(1) is missing (util-linux)"
    script -qec "$*" /dev/null
}

@test "binary output to a terminal is refused (usage, 2) by every command; text prints there" {
    ninfer-pack -q -o a.ninfer m.json
    local id
    id=$(ninfer-cat --catalog a.ninfer | grep -o '"id":"[^"]*"' | head -n1 | sed 's/"id":"//; s/"//')
    local cmd
    for cmd in "ninfer-cat a.ninfer" "ninfer-cat --object $id a.ninfer" \
        "ninfer-cat --range 0:16 a.ninfer" \
        "ninfer-cat --zstd --catalog a.ninfer" "ninfer-cat --zstd --header a.ninfer" \
        "ninfer-split a.ninfer" "ninfer-pack -q m.json" \
        "ninfer-bind --extract text/final_norm a.ninfer"; do
        run -2 on_tty "$cmd"
        [[ "$output" == *"terminal"* ]]
    done
    for cmd in "ninfer-cat --catalog a.ninfer" "ninfer-cat --header a.ninfer" \
        "ninfer-cat --files a.ninfer" "ninfer-cat --manifest a.ninfer"; do
        run -0 on_tty "$cmd"
    done
    # a resource that is text shows there, byte for byte (red-team E27); one
    # that is not, or one read from a stream, is refused as binary output
    run -0 on_tty "ninfer-cat --resource tokenizer.json a.ninfer"
    [ "$(printf '%s' "$output" | tr -d '\r')" = "$(tr -d '\r' < ck/tokenizer.json)" ]
    printf 'sp\0\1\2model' > ck/tokenizer.model
    ninfer-import -q --force -o m2.json ck
    ninfer-pack -q -o b.ninfer m2.json
    run -2 on_tty "ninfer-cat --resource tokenizer.model b.ninfer"
    [[ "$output" == *'resource "'*'" is not text: refusing to write binary data to a terminal (redirect it)'* ]]
    run -0 on_tty "ninfer-cat --resource tokenizer.json b.ninfer"
    run -2 on_tty "ninfer-cat --resource tokenizer.json - < b.ninfer"
    [[ "$output" == *'comes from a stream, unseen: refusing to write binary data to a terminal'* ]]
}

@test "quant: a rule that matches no parameter is a usage error naming it (2); nothing is written" {
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr ninfer-quant -i m.json -o q.json 'text/*=q8_g32_fp16' 'text/layer/*/mlp/*=q4_g64_fp16'
    expect_only_codes usage
    grep -qF "rule 2 ('text/layer/*/mlp/*=q4_g64_fp16') matches no parameter" <<< "$stderr"
    [ ! -e q.json ]
    # from a recipe the same
    printf '{"rules": [{"match": "txet/*", "format": "q8_g32_fp16"}]}' > r.json
    before=$(nf_snapshot .)
    run -2 --separate-stderr ninfer-quant -r r.json -i m.json
    expect_only_codes usage
    [ -z "$output" ]
    expect_unchanged "$before"
    # --allow-unmatched: the unmatched rule changes nothing, the rest applies
    run -0 --separate-stderr ninfer-quant --allow-unmatched -i m.json -o q.json 'text/*=q8_g32_fp16' 'text/layer/*/mlp/*=q4_g64_fp16'
    [ "$(grep -c '"format": "q8_g32_fp16"' q.json)" -gt 0 ]
    [ "$(grep -c '"format": "q4_g64_fp16"' q.json)" -eq 0 ]
}
