#!/usr/bin/env bats
# The newcomer's first mistakes (red-team E17): a file of another kind
# where an artifact or a manifest goes gets its code and a one-line next
# step; an empty --component list is a usage error, never "no component".

load helper

@test "verify of a GGUF, a safetensors file, a manifest or a zstd file: magic (1) with what it is" {
    nf_make a.ninfer
    printf 'GGUF\3\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0' > x.gguf
    { printf '\x10\0\0\0\0\0\0\0'; printf '{"__metadata__":{}}'; printf '%020d' 0; } > x.safetensors
    ninfer-cat --manifest a.ninfer > m.json
    zstd -q -c < a.ninfer > a.zst
    run -1 --separate-stderr ninfer-verify x.gguf
    [ "$stderr" = 'ninfer-verify: x.gguf: magic: not an NInfer v3 artifact (bad magic): this is a GGUF file (import it with ninfer-import, then ninfer-pack)' ]
    run -1 --separate-stderr ninfer-verify x.safetensors
    [ "$stderr" = 'ninfer-verify: x.safetensors: magic: not an NInfer v3 artifact (bad magic): this looks like a safetensors file (import its checkpoint with ninfer-import)' ]
    run -1 --separate-stderr ninfer-verify m.json
    [ "$stderr" = 'ninfer-verify: m.json: magic: not an NInfer v3 artifact (bad magic): this looks like JSON (a manifest is packed into an artifact by ninfer-pack)' ]
    run -1 --separate-stderr ninfer-verify a.zst
    [[ "$stderr" == *': magic: not an NInfer v3 artifact (bad magic): this is a zstd-compressed file (a compressed stream is read from standard input: '"'"'- < FILE'"'"')' ]]
    # the same reader for every command
    run -1 --separate-stderr ninfer-cat --header x.gguf
    [[ "$stderr" == *'this is a GGUF file (import it with ninfer-import'* ]]
    # anything else: the plain message
    head -c 64 /dev/zero > z.bin
    run -1 --separate-stderr ninfer-verify z.bin
    [ "$stderr" = 'ninfer-verify: z.bin: magic: not an NInfer v3 artifact (bad magic)' ]
}

@test "pack or quant given an artifact, a part or a GGUF as the manifest: json (1) saying what it is, nothing written" {
    nf_make a.ninfer 600 400
    printf 'GGUF\3\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0' > x.gguf
    run -1 --separate-stderr ninfer-pack -o out.ninfer a.ninfer
    [ "$stderr" = 'ninfer-pack: a.ninfer: json: not JSON: this is an NInfer artifact, not a manifest (ninfer-cat --manifest prints its manifest; ninfer-split copies or re-splits it)' ]
    [ ! -e out.ninfer ]
    run -1 --separate-stderr ninfer-pack -o out.ninfer a.ninfer.part-0001
    [ "$stderr" = 'ninfer-pack: a.ninfer.part-0001: json: not JSON: this is a continuation part of an NInfer artifact, not a manifest' ]
    run -1 --separate-stderr ninfer-pack -o out.ninfer x.gguf
    [ "$stderr" = 'ninfer-pack: x.gguf: json: not JSON: this is a GGUF file, not a manifest (ninfer-import makes its manifest)' ]
    [ ! -e out.ninfer ]
    run -1 --separate-stderr ninfer-quant -i a.ninfer 'text/*=q8_g32_fp16'
    [ "$stderr" = 'ninfer-quant: a.ninfer: json: not JSON: this is an NInfer artifact, not a manifest (ninfer-cat --manifest prints its manifest; ninfer-split copies or re-splits it)' ]
    [ -z "$output" ]
    # from a pipe too
    run -1 --separate-stderr bash -c 'ninfer-pack --dry-run - < a.ninfer'
    [[ "$stderr" == *'json: not JSON: this is an NInfer artifact, not a manifest'* ]]
    # a manifest still packs
    ninfer-cat --manifest a.ninfer > m.json
    run -0 ninfer-pack -q -o out.ninfer m.json
}

@test "--component '' or with an empty element is a usage error (2) in bind, verify, run and cat" {
    nf_make a.ninfer
    local c v
    for c in "ninfer-bind" "ninfer-bind --check" "ninfer-verify" "ninfer-run --device cpu" \
        "ninfer-cat --resource tokenizer.json"; do
        run -2 --separate-stderr $c --component '' a.ninfer
        [ "$stderr" = "${c%% *}: usage: --component '': a component ID is not empty (give C[,C...]) (see '${c%% *} --help')" ]
        [ -z "$output" ]
        for v in , text, ,text 'text,,text'; do
            run -2 --separate-stderr $c --component "$v" a.ninfer
            [ "$stderr" = "${c%% *}: usage: --component '$v': an empty component ID between commas (give C[,C...]) (see '${c%% *} --help')" ]
        done
    done
    # a real list still works
    run -0 ninfer-verify -q --component text a.ninfer
}

@test "a bad option is one line in the form of every diagnostic (prog: usage: ...), for every command" {
    local c
    for c in bench bind cat fetch import pack quant run split verify; do
        run -2 --separate-stderr "ninfer-$c" --bogus x
        [ "$stderr" = "ninfer-$c: usage: unrecognized option '--bogus' (see 'ninfer-$c --help')" ]
        [ -z "$output" ]
        run -2 --separate-stderr "ninfer-$c" -Z x
        [ "$stderr" = "ninfer-$c: usage: invalid option '-Z' (see 'ninfer-$c --help')" ]
    done
    # a long option without its argument
    run -2 --separate-stderr ninfer-run --device
    [ "$stderr" = "ninfer-run: usage: option '--device' needs an argument (see 'ninfer-run --help')" ]
    # the command's own usage errors take the same form, with control characters escaped
    run -2 --separate-stderr ninfer-cat --range "$(printf '5:\033[2J')" x
    [ "$stderr" = "ninfer-cat: usage: bad --range length '\\x1b[2J': not a number (a byte count, optionally with a suffix) (see 'ninfer-cat --help')" ]
}

@test "newcomer mistakes name the next step: a checkpoint directory to pack, a manifest as a quant rule, the artifact taken as --object's ID" {
    nf-mkckpt ck > /dev/null
    run -3 --separate-stderr ninfer-pack -o x.ninfer ck
    [ "$stderr" = "ninfer-pack: ck: io: is a directory, not a manifest (a checkpoint? ninfer-import makes its manifest)" ]
    [ ! -e x.ninfer ]
    ninfer-import -q ck > m.json
    run -2 --separate-stderr ninfer-quant m.json
    [ "$stderr" = "ninfer-quant: usage: rule \"m.json\" is not GLOB=FORMAT[:LAYOUT][,divisors=N][,policy=P] (it names a file: read a manifest with -i FILE or < FILE)" ]
    # a rule that names no file keeps the plain message
    run -2 --separate-stderr ninfer-quant -i m.json nosuchrule
    [ "$stderr" = "ninfer-quant: usage: rule \"nosuchrule\" is not GLOB=FORMAT[:LAYOUT][,divisors=N][,policy=P]" ]
    ninfer-pack -q -o a.ninfer m.json
    run -2 --separate-stderr ninfer-cat --object a.ninfer
    [ "$stderr" = "ninfer-cat: usage: no artifact given ('a.ninfer' was taken as the selector's argument) (see 'ninfer-cat --help')" ]
}
