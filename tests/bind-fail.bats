#!/usr/bin/env bats
# ninfer-bind's failing paths (issue 11 item 12): every way --check, the
# listing, --plan and --extract can fail, each with its exit status and
# code. Under the sanitizers (make test SANITIZE=1) LeakSanitizer turns a
# leak on any of these paths into a different exit status, so this suite is
# how the leaks of the error paths stay fixed.

load helper

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    nf-mkckpt ckpt > /dev/null 2>&1
    ninfer-import -q ckpt > m.json
    ninfer-pack -q --no-sync --max-file-bytes 256K -o m.ninfer m.json
}

# edited SED — m.json edited by sed -z SED, packed to b.ninfer.
edited() {
    sed -z "$1" m.json > b.json
    if cmp -s b.json m.json; then
        echo "edited: '$1' changed nothing" >&2
        return 1
    fi
    ninfer-pack -q --no-sync -o b.ninfer b.json
}


@test "a catalog that breaks a rule (a duplicate object ID): 1 in every mode, and --json still prints its record" {
    NF_OBJECTS="[$(nf_tensor w.a '[2, 4]' 0 16), $(nf_resource w.a 16 984)]" nf_make d.ninfer
    local m
    for m in "" "--check" "--plan" "--extract text/a"; do
        run -1 --separate-stderr bash -c "ninfer-bind $m d.ninfer > /dev/null"
        expect_code duplicate-id
    done
    run -1 --separate-stderr ninfer-bind --check --json d.ninfer
    [ "${#lines[@]}" -eq 1 ]
    [[ "$output" == *'"file":"d.ninfer","exit":1,"diagnostics":[{"code":"duplicate-id"'* ]]
    run -3 --separate-stderr ninfer-bind --check --json nope.ninfer
    [[ "$output" == *'"file":"nope.ninfer","exit":3,"diagnostics":[{"code":"io"'* ]]
}

@test "hidden_size 0 in the config: range (1) for --check" {
    edited 's|"hidden_size": 256|"hidden_size": 0|'
    run -1 --separate-stderr ninfer-bind --check b.ninfer
    expect_only_codes range
    grep -qF '/components/text/config/hidden_size' <<< "$stderr"
    run -1 --separate-stderr ninfer-bind --check --json b.ninfer
    [[ "$output" == *'"code":"range"'* ]]
}

@test "a parameter bound to an object of the wrong shape: coverage (1)" {
    edited 's|"object": "model.layers.0.self_attn.q_proj.weight"|"object": "model.layers.0.self_attn.k_proj.weight"|'
    run -1 --separate-stderr ninfer-bind --check b.ninfer
    expect_only_codes coverage
    run -1 --separate-stderr ninfer-bind --check --json b.ninfer
    [[ "$output" == *'"code":"coverage"'* ]]
}

@test "an unknown architecture: unsupported (4) for --check, the listing falls back" {
    edited 's|"LlamaForCausalLM"|"MysteryForCausalLM"|'
    run -4 --separate-stderr ninfer-bind --check b.ninfer
    expect_only_codes unsupported
    run -4 --separate-stderr ninfer-bind --check --json b.ninfer
}

@test "a component that is not there: component-missing (1) in every mode" {
    local m
    for m in "" "--check" "--plan"; do
        run -1 --separate-stderr bash -c "ninfer-bind $m --component nope m.ninfer > /dev/null"
        expect_only_codes component-missing
    done
}

@test "--extract of a name nothing binds: reference (1); i32 of a bf16 parameter: unsupported (4)" {
    run -1 --separate-stderr bash -c 'ninfer-bind --extract text/nope m.ninfer > x.bin'
    expect_only_codes reference
    run -4 --separate-stderr bash -c 'ninfer-bind --extract text/layers/0/attention/query --dtype i32 m.ninfer > x.bin'
    expect_only_codes unsupported
}

@test "--plan and --extract of a stream: usage (2); --check of a stream passes" {
    run -2 --separate-stderr bash -c 'ninfer-cat m.ninfer | ninfer-bind --plan -'
    expect_only_codes usage
    run -2 --separate-stderr bash -c 'ninfer-cat m.ninfer | ninfer-bind --extract text/final_norm - > x.bin'
    expect_only_codes usage
    run -0 --separate-stderr bash -c 'ninfer-cat m.ninfer | ninfer-bind --check -'
}

@test "a part missing: --extract of what lies in it is part-missing (3)" {
    # the head is the last tensor: it lies in the last part
    local last
    last=$(ls m.ninfer.part-* | sort | tail -n1)
    rm "$last"
    run -3 --separate-stderr bash -c 'ninfer-bind --extract text/head m.ninfer > x.bin'
    expect_code part-missing
    run -3 --separate-stderr ninfer-verify m.ninfer
    expect_only_codes part-missing
}

@test "a missing artifact, a directory, a truncated entry: io (3) or header (1)" {
    run -3 --separate-stderr ninfer-bind --check nope.ninfer
    expect_only_codes io
    mkdir dir.ninfer
    run -3 --separate-stderr ninfer-bind --check dir.ninfer
    expect_only_codes io
    head -c 100 m.ninfer > short.ninfer
    run -1 --separate-stderr ninfer-bind --check short.ninfer
    expect_only_codes header
}
