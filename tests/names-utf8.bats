#!/usr/bin/env bats
# File names that are not valid UTF-8 (legal on Linux) and the JSON the
# tools write (E14): JSON holds only UTF-8, so
#   - a writer of JSON that must name a file exactly (a manifest's source
#     paths: cat --manifest, import; a catalog's part names: split, pack
#     with parts) refuses such a name (usage, exit 2) before writing;
#   - a report (--json, --files) writes each byte that is not UTF-8 as the
#     text \xHH, as the diagnostics on stderr do, and stays valid JSON.

load helper

# utf8_ok FILE — FILE is valid UTF-8 (iconv refuses anything else).
utf8_ok() {
    iconv -f UTF-8 -t UTF-8 "$1" > /dev/null
}

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    BAD=$(printf 'b\xffd')
    NF_P=20000 nf_make a.ninfer
}

@test "split and pack: parts of an entry whose name is not UTF-8 are refused before writing; one file is fine" {
    mkdir out
    run -2 --separate-stderr ninfer-split --max-file-bytes 8K -o "out/$BAD.ninfer" a.ninfer
    expect_only_codes usage
    [ "$stderr" = 'ninfer-split: out/b\xffd.ninfer: usage: the part names derive from the entry'"'"'s name, which is not valid UTF-8: the catalog'"'"'s files table cannot hold them (name the output in UTF-8)' ]
    [ -z "$(ls -A out)" ]
    ninfer-cat --manifest a.ninfer > m.json
    run -2 --separate-stderr ninfer-pack --max-file-bytes 8K -o "out/$BAD.ninfer" m.json
    expect_only_codes usage
    [ -z "$(ls -A out)" ]
    # one file: the catalog names no part, the artifact is valid
    run -0 ninfer-split -q -o "out/$BAD.ninfer" a.ninfer
    run -0 ninfer-verify -q "out/$BAD.ninfer"
}

@test "cat --manifest of an artifact whose path is not UTF-8 is refused (2), nothing on stdout" {
    cp a.ninfer "$BAD.ninfer"
    run -2 --separate-stderr ninfer-cat --manifest "$BAD.ninfer"
    expect_only_codes usage
    [[ "$stderr" == *'/b\xffd.ninfer: usage: --manifest names the artifact by this path, which is not valid UTF-8: a manifest cannot hold it (rename the artifact)' ]]
    [ -z "$output" ]
    # through a UTF-8 link the manifest names the link's target, still not UTF-8
    ln -s "$BAD.ninfer" link.ninfer
    run -2 --separate-stderr ninfer-cat --manifest link.ninfer
    expect_only_codes usage
}

@test "import of a checkpoint under a directory whose name is not UTF-8: usage (2), nothing written" {
    mkdir "$BAD"
    nf-mkckpt "$BAD/ck" > /dev/null
    run -2 --separate-stderr ninfer-import -o m.json "$BAD/ck"
    expect_only_codes usage
    [[ "$stderr" == *'b\xffd/ck/config.json: usage: this path is not valid UTF-8: a manifest cannot name it (rename it)' ]]
    [ ! -e m.json ]
    # a GGUF under such a directory: its resources are ranges of it, refused alike
    nf-mkarch --arch llama ll > /dev/null
    nf-mkgguf ll "$BAD/ll.gguf"
    run -2 --separate-stderr ninfer-import -o m.json "$BAD/ll.gguf"
    expect_only_codes usage
    [ ! -e m.json ]
}

@test "--json reports and --files write a name that is not UTF-8 as \\xHH: valid JSON" {
    cp a.ninfer "$BAD.ninfer"
    ninfer-verify --json "$BAD.ninfer" > v.json
    utf8_ok v.json
    grep -qF '"path":"b\\xffd.ninfer"' v.json
    grep -qF '"file":"b\\xffd.ninfer","exit":0' v.json
    ninfer-cat --files "$BAD.ninfer" > f.json
    utf8_ok f.json
    grep -qF '"path": "b\\xffd.ninfer"' f.json
    # a diagnostic naming the file, in the record
    run -3 ninfer-verify --json "missing-$BAD.ninfer"
    printf '%s\n' "$output" > m.json
    utf8_ok m.json
    grep -qF '"file":"missing-b\\xffd.ninfer"' m.json
    # the same name on stderr, as every diagnostic writes it
    run -3 --separate-stderr ninfer-verify "missing-$BAD.ninfer"
    [[ "$stderr" == 'ninfer-verify: missing-b\xffd.ninfer: io: '* ]]
}
