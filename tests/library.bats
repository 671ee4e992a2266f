#!/usr/bin/env bats
# The library as an engine sees it (issue 13): `make install` stages only the
# library's public headers, libninfer.a and ninfer.pc; a C program built from
# those alone verifies artifacts through nf_verify and prints what
# ninfer-verify prints; the library itself never prints and never exits.
# NF_STAGE is the staged install (`make test` makes it: build/stage).

load helper

stage() {
    [ -n "${NF_STAGE:-}" ] && [ -d "$NF_STAGE" ] ||
        skip "no staged install (NF_STAGE; make test makes build/stage)"
}

@test "make install stages the library's public headers only: no front end, no internal headers" {
    stage
    local inc="$NF_STAGE/include/ninfer"
    [ -f "$inc/nf_verify.h" ]
    [ -f "$inc/nf_artifact.h" ]
    [ -f "$inc/nf_catalog.h" ]
    [ -f "$NF_STAGE/lib/libninfer.a" ]
    [ -f "$NF_STAGE/lib/pkgconfig/ninfer.pc" ]
    [ ! -e "$inc/nf_cli.h" ]
    [ ! -e "$inc/nf_catalog_int.h" ]
    [ ! -e "$inc/nf_gemv_int.h" ]
    [ ! -e "$inc/nf_qsearch.h" ]
    # the front end's symbols are not in the installed library
    ! nm "$NF_STAGE/lib/libninfer.a" 2> /dev/null | grep -q ' T nf_usage_error$'
}

@test "the installed headers cite what a user has (man pages, spec sections), not our own notes" {
    stage
    # the design notes, issue numbers and red-team reports are not installed
    local hs=("$NF_STAGE/include/ninfer/"*.h) hits
    [ "${#hs[@]}" -gt 20 ]
    hits=$(grep -n -E 'DESIGN|[Ii]ssues? #?[0-9]|[Rr]ed[- ]?[Tt]eam|(GGUF|KERNELS|STYLE)\.md' "${hs[@]}" || true)
    [ -z "$hits" ] || { echo "$hits"; return 1; }
}

@test "the installed library links on its own: nothing in it needs a symbol of the front end" {
    stage
    local cli="$NF_TOOLS/../libninfer-cli.a"
    [ -f "$cli" ] || skip "no front-end archive next to the tools ($cli)"
    local defined needed both
    defined=$(nm -g --defined-only "$cli" 2> /dev/null | awk 'NF == 3 { print $3 }' | sort -u)
    needed=$(nm -g --undefined-only "$NF_STAGE/lib/libninfer.a" 2> /dev/null | awk '{ print $NF }' | sort -u)
    [ -n "$defined" ]
    [ -n "$needed" ]
    both=$(comm -12 <(echo "$defined") <(echo "$needed"))
    [ -z "$both" ] || { echo "libninfer.a needs front-end symbols:"; echo "$both"; return 1; }
}

# build tests/lib/nf-verify-example.c from the staged install alone
build_example() {
    stage
    local cc=${CC:-cc} pc="$NF_STAGE/lib/pkgconfig" flags
    command -v pkg-config > /dev/null || skip "pkg-config is missing (Debian package pkg-config)"
    flags=$(PKG_CONFIG_PATH="$pc" pkg-config --define-variable=libdir="$NF_STAGE/lib" \
        --define-variable=includedir="$NF_STAGE/include/ninfer" --cflags --libs --static ninfer)
    [[ "$flags" == *"-I$NF_STAGE/include/ninfer"* ]]
    # under SANITIZE=1 the staged library is the sanitized one
    local san=()
    [ -n "${NF_SANITIZE:-}" ] && san=(-fsanitize=address,undefined)
    "$cc" -std=c11 -Wall -Wextra -Werror "${san[@]}" -o example \
        "$REPO/tests/lib/nf-verify-example.c" $flags
}

# the example and ninfer-verify -q on the same operand: same stderr, same exit
same_as_verify() {
    local want_rc
    run --separate-stderr ninfer-verify -q "$@"
    want_rc=$status
    local want_err=$stderr
    run --separate-stderr ./example "$@"
    [ "$status" -eq "$want_rc" ] || { echo "exit $status, ninfer-verify $want_rc"; return 1; }
    [ "$stderr" = "$want_err" ] || { printf 'example:\n%s\nninfer-verify:\n%s\n' "$stderr" "$want_err"; return 1; }
    [ -z "$output" ]
}

@test "a program built from the installed headers verifies through nf_verify as ninfer-verify does" {
    build_example
    # valid, split in three with digests
    NF_P=20000 nf_make src.ninfer
    ninfer-split --max-file-bytes 12288 -o a.ninfer src.ninfer
    run -0 --separate-stderr ./example a.ninfer
    [ -z "$stderr" ]
    same_as_verify a.ninfer
    # a flipped payload bit: the digest diagnostic, with where the bytes lie
    ninfer-split --max-file-bytes 12288 -o b.ninfer src.ninfer
    nf_flip b.ninfer.part-0001 $((4096 + 10000 - 8192))
    run -1 --separate-stderr ./example b.ninfer
    [[ "$stderr" == "ninfer-verify: b.ninfer: /objects/1: digest: object \"r.tok\": sha256 "*", metadata.integrity says "*"; its bytes: b.ninfer bytes [4112, +8176), b.ninfer.part-0001 bytes [4096, +8192), b.ninfer.part-0002 bytes [4096, +3616)" ]]
    same_as_verify b.ninfer
    # a missing part (exit 3), nonzero fill (1), a hostile name escaped
    rm b.ninfer.part-0001
    same_as_verify b.ninfer
    nf_make f.ninfer
    nf_poke f.ninfer 4095 01
    same_as_verify f.ninfer
    nf_make_catalog n.ninfer '{"format": "ninfer", "version": 3, "bogus\u001b[2J": 1}'
    same_as_verify n.ninfer
    [[ "$stderr" == *'/bogus\x1b[2J: '* ]]
    # not an artifact at all
    printf 'hello' > x.ninfer
    same_as_verify x.ninfer
}

@test "the library never prints and never exits: no stdio output or exit call in common/ or cuda/" {
    # stdio writes to a stream, process exits and aborts; snprintf and
    # friends build text and are fine. Comments are left out.
    local pat='(^|[^a-z_0-9])(printf|fprintf|vfprintf|dprintf|fputs|puts|fputc|putc|putchar|fwrite|perror|exit|_exit|_Exit|abort|quick_exit)[[:space:]]*\('
    local hits
    hits=$(cd "$REPO" && grep -nE "$pat" common/*/*.c common/*/*.h common/*/*.inc common/model/arch/*.[ch] cuda/*.cu cuda/*.cuh cuda/*.h cuda/*.c 2> /dev/null |
        grep -vE '^[^:]*:[0-9]+:[[:space:]]*(/?\*|//)' || true)
    [ -z "$hits" ] || { echo "$hits"; return 1; }
}

@test "the library's folders are layers: each includes only its own headers and those of the layers below" {
    # base < json < codec < ckpt (checkpoint file readers) < container <
    # model (binder, arch/, run) < convert (import, quant); cli/ and cmd/
    # sit above them all and no library file includes theirs.
    cd "$REPO"
    declare -A rank=([base]=0 [json]=1 [codec]=2 [ckpt]=3 [container]=4 [model]=5 [convert]=6)
    declare -A home
    local h f d inc hd bad=""
    for d in common/*/; do
        d=$(basename "$d")
        [ -n "${rank[$d]:-}" ] || bad+="common/$d has no layer; "
    done
    for h in common/*/*.h common/*/*.inc common/model/arch/*.h; do
        home[$(basename "$h")]=$(echo "$h" | cut -d/ -f2)
    done
    for f in common/*/*.[ch] common/*/*.inc common/model/arch/*.[ch]; do
        d=$(echo "$f" | cut -d/ -f2)
        for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
            hd=${home[$(basename "$inc")]:-}
            if [ -z "$hd" ]; then
                bad+="$f includes $inc, which is not the library's; "
            elif [ "${rank[$hd]}" -gt "${rank[$d]}" ]; then
                bad+="$f ($d) includes $inc ($hd); "
            fi
        done
    done
    [ -z "$bad" ] || { echo "$bad"; return 1; }
}
