#!/usr/bin/env bats
# Standard output appended or redirected onto an input (issue 17 item 3;
# DESIGN 3): every command that writes to standard output refuses (usage,
# exit 2) when it is a regular file that is the artifact's entry, one of its
# parts, the file standard input reads, or another file read (a sums file),
# before it writes a byte; a pipe or another file is fine. Each case checks
# the exact diagnostic and, with a SHA-256 of every file, that nothing
# changed.

load helper

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    # w.a and r.tok in the entry, the rest of r.tok in part 1
    NF_P=1000 nf_make a.ninfer 500 500
    NF_P=1000 nf_make s.ninfer
    ninfer-verify --sums a.ninfer > SUMS
}

# refused TARGET SHOWN CMD... — CMD >> TARGET and CMD 1<> TARGET exit 2 with
# the one diagnostic naming SHOWN, and change nothing.
refused() {
    local target=$1 shown=$2 before prog
    shift 2
    prog=$1
    before=$(nf_snapshot .)
    run -2 --separate-stderr bash -c '"$@" >> "$0"' "$target" "$@"
    [ "$stderr" = "$prog: (stdout): usage: standard output names an input file ($shown); refusing to write" ] ||
        { echo "$* >> $target: $stderr" >&2; return 1; }
    expect_unchanged "$before"
    run -2 --separate-stderr bash -c '"$@" 1<> "$0"' "$target" "$@"
    expect_only_codes usage
    expect_unchanged "$before"
}

@test "ninfer-cat onto its artifact's entry or a part: every selector, --zstd too, refused (2)" {
    local t sel
    for t in a.ninfer ./a.ninfer.part-0001; do
        for sel in "" --zstd --header --catalog --files --manifest "--object w.a" \
            "--range 0:10" "--resource tokenizer.json" "--zstd --object w.a"; do
            # shellcheck disable=SC2086
            refused "$t" "${t#./}" ninfer-cat $sel a.ninfer
        done
    done
    # a stream on standard input redirected from the file written to
    refused s.ninfer "standard input" ninfer-cat - < s.ninfer
    # a pipe and another file are fine
    run -0 bash -c 'ninfer-cat a.ninfer | ninfer-verify -q -'
    run -0 bash -c 'ninfer-cat --object w.a a.ninfer >> other.bin'
    [ "$(nf_size other.bin)" -eq 16 ]
}

@test "ninfer-bind onto its artifact: list, --plan, --extract, --check, --json (2)" {
    refused a.ninfer a.ninfer ninfer-bind a.ninfer
    refused ./a.ninfer.part-0001 a.ninfer.part-0001 ninfer-bind --plan a.ninfer
    refused a.ninfer a.ninfer ninfer-bind --extract text/a a.ninfer
    refused a.ninfer a.ninfer ninfer-bind --check --json a.ninfer
    # several operands: refused before the first one's record
    refused a.ninfer a.ninfer ninfer-bind --check --json s.ninfer a.ninfer
}

@test "ninfer-verify onto what it reads: an operand, a part, --sums, --json, the --check-sums file (2)" {
    refused a.ninfer a.ninfer ninfer-verify a.ninfer
    refused ./a.ninfer.part-0001 a.ninfer.part-0001 ninfer-verify --sums a.ninfer
    refused a.ninfer a.ninfer ninfer-verify --json a.ninfer
    refused SUMS SUMS ninfer-verify --check-sums SUMS a.ninfer
    # several operands: nothing for the first either
    refused a.ninfer a.ninfer ninfer-verify s.ninfer a.ninfer
    # an operand that cannot even be opened still gets nothing written
    printf 'NINFER\0\3junk' > broken.ninfer
    refused broken.ninfer broken.ninfer ninfer-verify --json broken.ninfer
    # stdin
    refused s.ninfer "standard input" ninfer-verify - < s.ninfer
    run -0 bash -c 'ninfer-verify --sums a.ninfer >> SUMS2'
    [ "$(cat SUMS2)" = "$(cat SUMS)" ]
}

@test "ninfer-run and ninfer-bench onto their artifact (2)" {
    refused a.ninfer a.ninfer ninfer-run --device cpu a.ninfer
    refused ./a.ninfer.part-0001 a.ninfer.part-0001 ninfer-bench a.ninfer
}

@test "pack --report, pack --dry-run and split --dry-run onto what they read: refused (2), nothing written" {
    ninfer-cat --manifest a.ninfer > m.json
    local t shown
    # pack's inputs: the manifest and every file of its sources (named by
    # the path the packer resolved)
    for t in m.json a.ninfer a.ninfer.part-0001; do
        shown=$t
        [ "$t" = m.json ] || shown=$PWD/$t
        refused "$t" "$shown" ninfer-pack -q --report -o out.ninfer m.json
        refused "$t" "$shown" ninfer-pack -q --dry-run -o out.ninfer m.json
        refused "$t" "$shown" ninfer-pack -q --dry-run m.json
    done
    [ ! -e out.ninfer ]
    refused m.json "standard input" ninfer-pack -q --dry-run -o out.ninfer - < m.json
    # split's: the input's entry and parts, or the file on standard input
    refused a.ninfer a.ninfer ninfer-split --dry-run -o out.ninfer a.ninfer
    refused ./a.ninfer.part-0001 a.ninfer.part-0001 ninfer-split --dry-run --max-file-bytes 8K -o out.ninfer a.ninfer
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr bash -c 'ninfer-split --dry-run -o out.ninfer - < s.ninfer >> s.ninfer'
    [ "$stderr" = "ninfer-split: (stdout): usage: standard output names an input file (standard input); refusing to write" ]
    expect_unchanged "$before"
    # another file is fine: the plan, or the report's header line
    run -0 bash -c 'ninfer-split --dry-run -o out.ninfer a.ninfer >> plan.json'
    grep -qF '"payload_bytes"' plan.json
    run -0 bash -c 'ninfer-pack -q --report -o out.ninfer m.json >> report.txt'
    [ "$(head -c 7 report.txt)" = object$'\t' ]
}
