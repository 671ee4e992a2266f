#!/usr/bin/env bats
# File descriptors (issue 11 item 10): readers and writers work at any part
# count within a few open files -- parts are opened when needed and the
# least recently used closed again, a writer keeps only a few temporaries
# open -- so a 200-part artifact is written, read, hashed, merged, resplit
# and packed from under `ulimit -n 32`, and hashed on 8 threads under
# `ulimit -n 8`. Every result is compared with the same work done without
# the limit.

load helper

N=200
CAP=$((20480 - 4096)) # payload per part at --max-file-bytes 20K

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    P=$((CAP * N))
    # two objects: w in the first parts, r.big across every part, with digests
    nf_bytes 8192 w.bin
    nf_bytes $((P - 8192)) big.bin
    printf '{"components": {"text": {"config": {}, "resources": {"blob": "r.big"}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [64, 64], "format": "bf16", "layout": "contiguous_le_v1", "source": {"file": "w.bin"}}, {"id": "r.big", "kind": "resource", "encoding": "raw_bytes_v1", "source": {"file": "big.bin"}}], "bindings": {"text/w": {"object": "w"}}, "uses": []}' > m.json
    ninfer-pack -q --no-sync -o one.ninfer m.json
}

# limited N CMD... — CMD under `ulimit -n N` (the binary itself, so that no
# wrapper's descriptors count), with only descriptors 0, 1 and 2 open (bats
# keeps others of its own).
limited() {
    local n=$1
    shift
    bash -c 'for f in $(ls /proc/$$/fd); do [ "$f" -le 2 ] || eval "exec $f>&-" 2> /dev/null; done
             ulimit -n "$0"; exec "$@"' "$n" "$@"
}

@test "split into 200 parts and back under ulimit -n 32: the same bytes" {
    run -0 --separate-stderr limited 32 "$NF_BIN/ninfer-split" --no-sync --max-file-bytes 20K -o p/m.ninfer one.ninfer
    [ "$(find p -name 'm.ninfer.part-*' | wc -l)" -ge $N ]
    run -0 --separate-stderr limited 32 "$NF_BIN/ninfer-verify" --json p/m.ninfer
    [ "$(json_field digests_checked)" -eq 2 ]
    run -0 --separate-stderr limited 32 "$NF_BIN/ninfer-split" --no-sync -o merged.ninfer p/m.ninfer
    run -0 --separate-stderr limited 32 "$NF_BIN/ninfer-split" --no-sync --verify -o merged2.ninfer p/m.ninfer
    cmp <(ninfer-cat --object r.big merged.ninfer) big.bin
    cmp <(ninfer-cat --object r.big merged2.ninfer) big.bin
}

@test "cat, --object and a stream of 200 parts under ulimit -n 32; pack from them" {
    ninfer-split --no-sync --max-file-bytes 20K -o p/m.ninfer one.ninfer
    run -0 --separate-stderr bash -c 'ulimit -n 32; exec "$0" --object r.big p/m.ninfer > got.bin' "$NF_BIN/ninfer-cat"
    cmp got.bin big.bin
    run -0 --separate-stderr bash -c 'ulimit -n 32; exec "$0" p/m.ninfer > s.stream' "$NF_BIN/ninfer-cat"
    run -0 --separate-stderr ninfer-verify - < s.stream
    cmp <(ninfer-cat --object r.big - < s.stream) big.bin
    ninfer-cat --manifest p/m.ninfer > pm.json
    run -0 --separate-stderr limited 32 "$NF_BIN/ninfer-pack" -q --no-sync --max-file-bytes 20K -o q/m.ninfer pm.json
    run -0 --separate-stderr ninfer-verify q/m.ninfer
    cmp <(ninfer-cat --object r.big q/m.ninfer) big.bin
}

@test "split --force of 200 parts over 200 parts under ulimit -n 32: the old set's surplus goes" {
    ninfer-split --no-sync --max-file-bytes 20K -o p/m.ninfer one.ninfer
    run -0 --separate-stderr limited 32 "$NF_BIN/ninfer-split" --no-sync --force --max-file-bytes 36K -o p/m.ninfer one.ninfer
    local n
    n=$(find p -name 'm.ninfer.part-*' | wc -l)
    [ "$n" -lt $N ]
    [ "$n" -gt 50 ]
    run -0 --separate-stderr limited 32 "$NF_BIN/ninfer-verify" p/m.ninfer
    no_temporaries p
}

@test "hashing on 8 threads under ulimit -n 8: every digest checked" {
    ninfer-split --no-sync --max-file-bytes 20K -o p/m.ninfer one.ninfer
    run -0 --separate-stderr limited 8 "$NF_BIN/ninfer-verify" --threads 8 --json p/m.ninfer
    [ "$(json_field digests_checked)" -eq 2 ]
    [[ "$output" == *'"digests_unchecked":[]'* ]]
    # a broken byte is still found
    nf_flip p/m.ninfer.part-0150 5000
    run -1 --separate-stderr limited 8 "$NF_BIN/ninfer-verify" --threads 8 p/m.ninfer
    expect_only_codes digest
}

@test "the writer within 6 descriptors: 200 temporaries, a few open at a time" {
    run -0 --separate-stderr limited 6 "$NF_BIN/ninfer-split" --no-sync --max-file-bytes 20K -o p/m.ninfer one.ninfer
    run -0 --separate-stderr ninfer-verify p/m.ninfer
}

@test "no descriptor left for a temporary: one clear io line, nothing left behind" {
    # 0, 1, 2 and the input's entry: a 4th descriptor is all there is
    run -3 --separate-stderr limited 4 "$NF_BIN/ninfer-split" --no-sync --max-file-bytes 20K -o p/m.ninfer one.ninfer
    expect_only_codes io
    [ "$(grep -c . <<< "$stderr")" -eq 1 ]
    grep -qF 'Too many open files (raise `ulimit -n`)' <<< "$stderr"
    no_temporaries p
    [ -z "$(ls -A p)" ]
}

# many_sources — mf.json: 300 raw-file resources; ms.json: 300 one-tensor
# safetensors files (F32 [4], transcoded to bf16); ma.json: an object from
# each of 40 copies of a 4-file artifact, and from 4 of them an object
# spanning every part (red-team C3).
many_sources() {
    local i h objs=""
    for i in $(seq 0 299); do
        printf 'raw %d' "$i" > "f$i.bin"
        objs="$objs${objs:+, }{\"id\": \"r$i\", \"kind\": \"resource\", \"encoding\": \"raw_bytes_v1\", \"source\": {\"file\": \"f$i.bin\"}}"
    done
    echo "{\"components\": {\"text\": {\"config\": {}}}, \"objects\": [$objs], \"bindings\": {}, \"uses\": []}" > mf.json
    h='{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}'
    objs=""
    for i in $(seq 0 299); do
        {
            printf "\\x$(printf %02x ${#h})\\0\\0\\0\\0\\0\\0\\0%s" "$h"
            printf "\\x$(printf %02x $((i % 256)))\\0\\x80\\x3f"
            printf '\0\0\0\x40\0\0\x40\x40\0\0\x80\x40'
        } > "s$i.safetensors"
        objs="$objs${objs:+, }{\"id\": \"t$i\", \"kind\": \"tensor\", \"shape\": [4], \"format\": \"bf16\", \"layout\": \"contiguous_le_v1\", \"source\": {\"safetensors\": \"s$i.safetensors\", \"tensor\": \"w\"}}"
    done
    echo "{\"components\": {\"text\": {\"config\": {}}}, \"objects\": [$objs], \"bindings\": {}, \"uses\": []}" > ms.json
    ninfer-split -q --no-sync --max-file-bytes 1M -o src/a0.ninfer one.ninfer
    objs=""
    for i in $(seq 0 39); do
        [ "$i" -eq 0 ] || ninfer-split -q --no-sync --max-file-bytes 1M -o "src/a$i.ninfer" src/a0.ninfer
        objs="$objs${objs:+, }{\"id\": \"w$i\", \"kind\": \"tensor\", \"shape\": [64, 64], \"format\": \"bf16\", \"layout\": \"contiguous_le_v1\", \"source\": {\"artifact\": \"src/a$i.ninfer\", \"object\": \"w\"}}"
        [ $((i % 10)) -ne 3 ] || objs="$objs, {\"id\": \"big$i\", \"kind\": \"resource\", \"encoding\": \"raw_bytes_v1\", \"source\": {\"artifact\": \"src/a$i.ninfer\", \"object\": \"r.big\"}}"
    done
    echo "{\"components\": {\"text\": {\"config\": {}}}, \"objects\": [$objs], \"bindings\": {}, \"uses\": []}" > ma.json
}

@test "pack from 300 files, 300 safetensors (transcoded on 4 threads) and 40 4-file artifacts under ulimit -n 32: the artifact packed without the limit" {
    many_sources
    [ "$(ls src/a7.ninfer* | wc -l)" -eq 4 ]
    mkdir free lim
    local m
    for m in mf ms ma; do
        run -0 --separate-stderr ninfer-pack -q --no-sync --threads 4 --max-file-bytes 64K -o "free/$m.ninfer" "$m.json"
        run -0 --separate-stderr limited 32 "$NF_BIN/ninfer-pack" -q --no-sync --threads 4 --max-file-bytes 64K -o "lim/$m.ninfer" "$m.json"
        [ -z "$stderr" ]
        run -0 --separate-stderr limited 32 "$NF_BIN/ninfer-verify" -q "lim/$m.ninfer"
        # the same catalog (its digests: the same payload) as without the limit
        [ "$(ninfer-cat --catalog "lim/$m.ninfer")" = "$(ninfer-cat --catalog "free/$m.ninfer")" ]
    done
    run -0 ninfer-cat --object r299 lim/mf.ninfer
    [ "$output" = "raw 299" ]
    # t7 = f32 [0x3f800007 (1 + 7 ulp), 2, 3, 4]: bf16 [1, 2, 3, 4]
    [ "$(ninfer-cat --object t7 lim/ms.ninfer | od -An -tx1 | tr -d ' \n')" = 803f004040408040 ]
    cmp <(ninfer-cat --object w39 lim/ma.ninfer) w.bin
    cmp <(ninfer-cat --object big33 lim/ma.ninfer) big.bin
    no_temporaries .
}
