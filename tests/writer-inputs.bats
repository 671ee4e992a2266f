#!/usr/bin/env bats
# An output naming an input is refused before anything is written, with or
# without --force (DESIGN 3; red-team B1: `ninfer-import --force -o` onto a
# file of the checkpoint it imported replaced the checkpoint's weights with
# the manifest). Every command that writes files -- import (its manifest
# and its generated resource file), quant, pack, split -- against every
# file it reads: by name, through a symlink, through a hard link, and a
# file redirected to standard input. Each refusal is `usage` (exit 2) and
# leaves the directory exactly as it was.

load helper

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
}

# refused CMD... — CMD exits 2 with only `usage` diagnostics saying the
# output names an input (or the generated resource file), and nothing in
# the test's directory (recursively) changed.
refused() {
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr "$@"
    expect_only_codes usage
    [[ "$stderr" == *"names an input file"* ]]
    expect_unchanged "$before"
    no_temporaries .
}

@test "import: -o onto any file of a Hugging Face checkpoint is refused, with or without --force" {
    nf-mkckpt ck > /dev/null
    local f
    for f in config.json model.safetensors tokenizer.json tokenizer_config.json generation_config.json; do
        [ -f "ck/$f" ]
        refused ninfer-import -q --force -o "ck/$f" ck
        refused ninfer-import -q -o "ck/$f" ck
    done
    # through a symlink and a hard link, and the --config file
    ln -s ck/model.safetensors link.json
    ln ck/tokenizer.json hard.json
    refused ninfer-import -q --force -o link.json ck
    refused ninfer-import -q --force -o hard.json ck
    cp ck/config.json my-config.json
    refused ninfer-import -q --force --config my-config.json -o my-config.json ck/model.safetensors
    # standard output appended to an input (the shell opened it; `>` would
    # already have emptied it)
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr bash -c 'ninfer-import -q ck >> ck/tokenizer.json'
    expect_only_codes usage
    [[ "$stderr" == *"(stdout): usage: standard output names an input file"* ]]
    expect_unchanged "$before"
    # the checkpoint still imports, and a new file in its directory is fine
    run -0 --separate-stderr ninfer-import -q -o ck/manifest.json ck
    run -0 ninfer-pack -q -o a.ninfer ck/manifest.json
}

@test "import: a sharded checkpoint's index and shard are inputs too" {
    nf-mkarch --arch qwen3 ck
    local names
    names=$(nf-st2manifest --list ck | cut -f1)
    mv ck/model.safetensors ck/model-00001-of-00001.safetensors
    {
        echo '{"weight_map": {'
        sed 's/.*/"&": "model-00001-of-00001.safetensors"/' <<< "$names" | paste -sd, -
        echo '}}'
    } > ck/model.safetensors.index.json
    refused ninfer-import -q --force -o ck/model.safetensors.index.json ck
    refused ninfer-import -q --force -o ck/model-00001-of-00001.safetensors ck
    run -0 --separate-stderr ninfer-import -q -o m.json ck
}

@test "import of a GGUF: -o onto the GGUF, through a hard link or a symlink, is refused" {
    nf-mkarch --arch llama ckg
    nf-mkgguf --alignment 64 ckg g.gguf
    refused ninfer-import -q --force -o g.gguf g.gguf
    ln g.gguf hard.gguf
    refused ninfer-import -q --force -o hard.gguf g.gguf
    ln -s g.gguf soft.gguf
    refused ninfer-import -q --force -o soft.gguf g.gguf
    [ "$(head -c 4 g.gguf)" = GGUF ]
}

@test "quant: -o onto its manifest (-i, or a file on standard input) or its recipe" {
    nf-mkckpt ck > /dev/null
    ninfer-import -q -o m.json ck
    printf '{"rules": [{"match": "text/*", "format": "q8_g32_fp16"}]}' > r.json
    refused ninfer-quant --force -i m.json -o m.json 'text/*=q8_g32_fp16'
    refused ninfer-quant --force -r r.json -i m.json -o r.json
    ln -s m.json link.json
    refused ninfer-quant --force -i m.json -o link.json 'text/*=q8_g32_fp16'
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr bash -c "ninfer-quant --force -o m.json 'text/*=q8_g32_fp16' < m.json"
    expect_only_codes usage
    [[ "$stderr" == *"m.json: usage: output names an input file (standard input)"* ]]
    expect_unchanged "$before"
}

@test "pack: -o (entry or part) onto its manifest or any source (raw file, safetensors, GGUF, artifact entry and part)" {
    nf-mkckpt ck > /dev/null
    ninfer-import -q -o m.json ck
    ninfer-pack -q --max-file-bytes 2M -o src.ninfer m.json
    [ -e src.ninfer.part-0001 ]
    nf_bytes 5000 blob.bin
    nf-mkarch --arch llama ckg
    nf-mkgguf --alignment 64 ckg g.gguf
    printf '%s' '{"components": {"text": {"config": {}}}, "objects": [
        {"id": "r.blob", "kind": "resource", "encoding": "raw_bytes_v1", "source": {"file": "blob.bin"}},
        {"id": "t.st", "kind": "tensor", "shape": [256], "format": "fp32", "layout": "contiguous_le_v1",
         "source": {"safetensors": "ck/model.safetensors", "tensor": "model.norm.weight"}},
        {"id": "t.gg", "kind": "tensor", "shape": [64], "format": "fp32", "layout": "contiguous_le_v1",
         "source": {"gguf": "g.gguf", "tensor": "output_norm.weight"}},
        {"id": "t.art", "kind": "tensor", "shape": [256], "format": "bf16", "layout": "contiguous_le_v1",
         "source": {"artifact": "src.ninfer", "object": "model.norm.weight"}}],
        "bindings": {}, "uses": []}' > s.json
    run -0 --separate-stderr ninfer-pack -q -o ok.ninfer s.json
    run -0 ninfer-verify ok.ninfer
    local f
    for f in s.json blob.bin ck/model.safetensors g.gguf src.ninfer src.ninfer.part-0001; do
        refused ninfer-pack -q --force -o "$f" s.json
    done
    # a part of the output at a source's name
    cp blob.bin out.ninfer.part-0001
    sed 's/"file": "blob.bin"/"file": "out.ninfer.part-0001"/' s.json > s2.json
    refused ninfer-pack -q --force --max-file-bytes 8K -o out.ninfer s2.json
    # through links, and a manifest on standard input
    ln -s g.gguf link.ninfer
    ln blob.bin hard.ninfer
    refused ninfer-pack -q --force -o link.ninfer s.json
    refused ninfer-pack -q --force -o hard.ninfer s.json
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr bash -c 'ninfer-pack -q --force -o m.json - < m.json'
    expect_only_codes usage
    [[ "$stderr" == *"output names an input file (standard input)"* ]]
    expect_unchanged "$before"
}

@test "split: -o onto its input's entry or a part, through links, or a stream file on standard input" {
    nf-mkckpt ck > /dev/null
    ninfer-import -q -o m.json ck
    ninfer-pack -q --max-file-bytes 2M -o a.ninfer m.json
    refused ninfer-split --force -o a.ninfer a.ninfer
    refused ninfer-split --force -o a.ninfer.part-0002 a.ninfer
    ln -s a.ninfer.part-0001 link.ninfer
    refused ninfer-split --force -o link.ninfer a.ninfer
    ninfer-cat a.ninfer > s.ninfer
    ln s.ninfer hard.ninfer
    refused ninfer-split --force -o hard.ninfer s.ninfer
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr bash -c 'ninfer-split --force -o s.ninfer - < s.ninfer'
    expect_only_codes usage
    [[ "$stderr" == *"output names an input file (standard input)"* ]]
    expect_unchanged "$before"
    run -0 ninfer-verify a.ninfer s.ninfer
}

@test "standard output appended onto an input (pack -o -, split -o -, quant) is refused; a pipe is fine" {
    nf-mkckpt ck > /dev/null
    ninfer-import -q -o m.json ck
    ninfer-pack -q --max-file-bytes 2M -o a.ninfer m.json
    ninfer-cat a.ninfer > s.ninfer
    local before
    before=$(nf_snapshot .)
    run -2 --separate-stderr bash -c 'ninfer-pack -q -o - m.json >> ck/model.safetensors'
    [ "$stderr" = "ninfer-pack: (stdout): usage: standard output names an input file ($PWD/ck/model.safetensors); refusing to write" ]
    run -2 --separate-stderr bash -c 'ninfer-pack -q -o - m.json >> m.json'
    [ "$stderr" = "ninfer-pack: (stdout): usage: standard output names an input file (m.json); refusing to write" ]
    run -2 --separate-stderr bash -c 'ninfer-split -o - a.ninfer >> a.ninfer.part-0001'
    [ "$stderr" = "ninfer-split: (stdout): usage: standard output names an input file (a.ninfer.part-0001); refusing to write" ]
    run -2 --separate-stderr bash -c 'ninfer-split -o - - < s.ninfer >> s.ninfer'
    [ "$stderr" = "ninfer-split: (stdout): usage: standard output names an input file (standard input); refusing to write" ]
    run -2 --separate-stderr bash -c "ninfer-quant -i m.json 'text/*=q8_g32_fp16' >> m.json"
    [ "$stderr" = "ninfer-quant: (stdout): usage: standard output names an input file (m.json); refusing to write" ]
    expect_unchanged "$before"
    run -0 bash -c 'ninfer-split -o - a.ninfer | ninfer-verify -'
}

