#!/usr/bin/env bats
# Standard output that cannot be written (DESIGN 3): every command, every
# output mode, --help and --version included, exits 3 with the one
# diagnostic
#   PROG: (stdout): io: write error: <strerror>
# and nothing else (a truncated plan on a full disk is never a success).
# /dev/full gives ENOSPC on every write; `>&-` (a closed standard output)
# gives EBADF once something is written, and is no error when nothing is.
#
# Fixtures (setup_file): the small Llama checkpoint of nf-mkckpt, its
# manifest (ninfer-import) and artifact (ninfer-pack), so that bind and run
# have an architecture to bind.

load helper

setup_file() {
    cd "$BATS_FILE_TMPDIR" || return 1
    nf-mkckpt ckpt > /dev/null 2>&1 || return 1
    ninfer-import -q ckpt > m.json || return 1
    ninfer-pack -q --no-sync -o a.ninfer m.json || return 1
}

FULL="No space left on device"

# full CMD... — run CMD with standard output on /dev/full: exit 3 and exactly
# one line on stderr, the write error.
full() {
    run -3 --separate-stderr bash -c '"$@" > /dev/full' _ "$@"
    local prog=${1##*/}
    if [ "$stderr" != "$prog: (stdout): io: write error: $FULL" ]; then
        echo "$*: stderr:" >&2
        echo "$stderr" >&2
        return 1
    fi
}

@test "--help and --version to /dev/full: exit 3, one write error, for every command" {
    local c
    for c in bench bind cat fetch import pack quant run split verify; do
        full "ninfer-$c" --help
        full "ninfer-$c" --version
        # and they still work where stdout is writable
        run -0 "ninfer-$c" --version
        [[ "$output" == "ninfer-$c "* ]]
    done
}

@test "--help fits 80 columns, for every command" {
    local c
    for c in bench bind cat export import pack quant run split verify; do
        run -0 "ninfer-$c" --help
        if awk 'length($0) > 80 { bad = 1; print FILENAME ": " length($0) ": " $0 > "/dev/stderr" } END { exit bad }' <<< "$output"; then
            :
        else
            echo "ninfer-$c --help has lines over 80 columns" >&2
            return 1
        fi
    done
}

@test "ninfer-bind --plan, --check (text and --json), the listing: exit 3 on a full disk" {
    local a="$BATS_FILE_TMPDIR/a.ninfer"
    full ninfer-bind --plan "$a"
    full ninfer-bind --check "$a"
    full ninfer-bind --check --json "$a"
    full ninfer-bind "$a"
    full ninfer-bind --json "$a"
    # several operands: still one message (told once, not once per operand)
    full ninfer-bind --check --json "$a" "$a"
    # a broken rule still ranks first (1 beats 3), with the write error told too
    run -1 --separate-stderr bash -c 'ninfer-bind --check "$1" missing-is-not-it.ninfer "$2" > /dev/full' \
        _ "$a" "$BATS_FILE_TMPDIR/m.json"
    [[ "$stderr" == *"ninfer-bind: (stdout): io: write error: $FULL"* ]]
}

@test "ninfer-run (table and --json) and ninfer-bench (table, --json, --csv): exit 3 on a full disk" {
    local a="$BATS_FILE_TMPDIR/a.ninfer"
    full ninfer-run --device cpu --iters 1 "$a"
    full ninfer-run --device cpu --iters 1 --json "$a"
    full ninfer-bench --format q4_g64_fp16 --shape 64x256 --iters 2 --warmup 1
    full ninfer-bench --json --format q4_g64_fp16 --shape 64x256 --iters 2 --warmup 1
    full ninfer-bench --csv --format q4_g64_fp16 --shape 64x256 --iters 2 --warmup 1
}

@test "the other commands' stdout outputs give the same message" {
    local a="$BATS_FILE_TMPDIR/a.ninfer" m="$BATS_FILE_TMPDIR/m.json"
    full ninfer-verify "$a"
    full ninfer-verify --json "$a"
    full ninfer-verify --sums "$a"
    full ninfer-cat --manifest "$a"
    full ninfer-cat --catalog "$a"
    full ninfer-cat --header "$a"
    full ninfer-cat --object model.norm.weight "$a"
    full ninfer-cat "$a"
    full ninfer-import "$BATS_FILE_TMPDIR/ckpt"
    full ninfer-quant -i "$m" 'text/layers/*=q8_g32_fp16'
    full ninfer-pack -q "$m"
    full ninfer-pack --dry-run "$m"
    full ninfer-split -q "$a"
    full ninfer-split --dry-run -o t.ninfer "$a"
    [ ! -e t.ninfer ]
}

@test "a closed standard output: EBADF once something is written; nothing written is no error" {
    local a="$BATS_FILE_TMPDIR/a.ninfer"
    run -3 --separate-stderr bash -c 'ninfer-bind --plan "$1" >&-' _ "$a"
    [ "$stderr" = "ninfer-bind: (stdout): io: write error: Bad file descriptor" ]
    run -3 --separate-stderr bash -c 'ninfer-verify "$1" >&-' _ "$a"
    [ "$stderr" = "ninfer-verify: (stdout): io: write error: Bad file descriptor" ]
    run -0 --separate-stderr bash -c 'ninfer-verify -q "$1" >&-' _ "$a"
    [ -z "$stderr" ]
    run -0 --separate-stderr bash -c 'ninfer-bind --check -q "$1" >&-' _ "$a"
    [ -z "$stderr" ]
}
