#!/usr/bin/env bash
# make-seeds.sh — regenerate the fuzzers' seed corpora in tests/fuzz/corpus/
# from small fixtures made with the project's own tools (nf-mkartifact,
# nf-mkckpt, ninfer-pack, ninfer-cat). Run from anywhere after `make` and
# `make build/tools/nf-mkartifact build/tools/nf-mkckpt`:
#   tests/fuzz/make-seeds.sh
# Every seed is a few KiB; the whole corpus stays well under 1 MiB.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
BIN=${NF_BIN:-$REPO/bin}
TOOLS=${NF_TOOLS:-$REPO/build/tools}
OUT="$REPO/tests/fuzz/corpus"
export LC_ALL=C
PATH="$BIN:$TOOLS:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

mkdir -p "$OUT/reader" "$OUT/catalog" "$OUT/safetensors" "$OUT/gguf"
rm -f "$OUT"/reader/* "$OUT"/catalog/* "$OUT"/safetensors/* "$OUT"/gguf/*

# deterministic bytes
bytes() { head -c "$1" /dev/zero | openssl enc -aes-128-ctr -nosalt \
    -K 000102030405060708090a0b0c0d0e0f -iv 00000000000000000000000000000000; }

le32() { # N -> 4 little-endian bytes
    printf "\\x$(printf %02x $(($1 & 255)))\\x$(printf %02x $((($1 >> 8) & 255)))\\x$(printf %02x $((($1 >> 16) & 255)))\\x$(printf %02x $((($1 >> 24) & 255)))"
}

# reader_seed NAME FLAGS ENTRY [PART...] — the fuzz_reader framing
reader_seed() {
    local name=$1 flags=$2 entry=$3
    shift 3
    {
        printf "\\x$(printf %02x "$flags")\\x$(printf %02x $#)"
        for p in "$@"; do le32 "$(stat -c %s "$p")"; done
        cat "$entry" "$@"
    } > "$OUT/reader/$name"
}

catalog() { # P FILES [EXTRA] — the standard small catalog of tests/helper.bash
    local p=$1 files=$2 extra=${3:-}
    printf '{"components": {"text": {"config": {"architectures": ["TestForCausalLM"], "model_type": "test", "rope_theta": 1000000.0, "rms_norm_eps": 1e-06}, "resources": {"tokenizer.json": "r.tok"}}},\n "objects": [{"id": "w.a", "kind": "tensor", "shape": [2, 4], "format": "bf16", "layout": "contiguous_le_v1", "offset": 0, "bytes": 16}, {"id": "r.tok", "kind": "resource", "encoding": "raw_bytes_v1", "offset": 16, "bytes": %d}],\n "bindings": {"text/a": {"object": "w.a"}, "text/b": {"parts": [{"object": "w.a", "range": [0, 4]}, {"object": "w.a", "range": [4, 8]}]}},\n "uses": [{"parameter": "text/a", "input": "text/a_input", "activation_policy": "A16Only"}],\n "files": %s%s}\n' \
        $((p - 16)) "$files" "$extra"
}

bytes 300 > pay300
# 1. single file, one segment
catalog 300 '[{"path": null, "payload_bytes": 300}]' > one.json
nf-mkartifact --catalog one.json --payload pay300 -o one.ninfer
reader_seed single 0 one.ninfer
reader_seed single-fill-stream 7 one.ninfer
# 2. entry + two parts, odd segments; the tensor and the resource cross boundaries
catalog 300 '[{"path": null, "payload_bytes": 9}, {"path": "e.ninfer.part-0001", "payload_bytes": 100}, {"path": "e.ninfer.part-0002", "payload_bytes": 191}]' \
    ', "metadata": {"name": "tiny", "score": 0.10}, "provenance": {"tool": "hand"}' > three.json
nf-mkartifact --catalog three.json --payload pay300 --segments 9,100,191 -o e.ninfer
reader_seed three-parts 5 e.ninfer e.ninfer.part-0001 e.ninfer.part-0002
# 3. parts given in the wrong order and one of another artifact
reader_seed three-parts-swapped 1 e.ninfer e.ninfer.part-0002 e.ninfer.part-0001
rm -f e.ninfer*
nf-mkartifact --catalog three.json --payload pay300 --segments 9,100,191 --part-id ffeeddccbbaa99887766554433221100 -o e.ninfer
reader_seed three-parts-foreign 0 e.ninfer e.ninfer.part-0001 e.ninfer.part-0002
# 4. a stream, plain and zstd (the entry read with nf_artifact_open_stream)
ninfer-cat one.ninfer > one.stream
ninfer-cat --zstd one.ninfer > one.zst
reader_seed stream 2 one.stream
reader_seed stream-zstd 2 one.zst
# 5. catalog padded with whitespace (json_bytes reserve)
nf-mkartifact --catalog one.json --payload pay300 --json-bytes 1500 -o pad.ninfer
reader_seed padded 1 pad.ninfer

# ---- catalogs ----
cp one.json "$OUT/catalog/small.json"
cp three.json "$OUT/catalog/three-files.json"
# every format and layout this build knows, parts, auxiliaries, targets,
# proposal and integrity: packed from a manifest, then read back
bytes 16384 > blob
cat > rich.manifest <<'EOF'
{"components": {"text": {"config": {"architectures": ["TestForCausalLM"], "hidden_size": 128}, "resources": {"tokenizer.json": "r.tok"}, "proposal": {"domain": "indexed", "rows": 7}},
                "mtp": {"config": {"architectures": ["Qwen3_5MTP"]}, "target": "text"}},
 "objects": [
  {"id": "w.a", "kind": "tensor", "shape": [2, 4], "format": "bf16", "layout": "contiguous_le_v1", "source": {"file": "blob"}},
  {"id": "w.f32", "kind": "tensor", "shape": [], "format": "fp32", "layout": "contiguous_le_v1", "source": {"values": [1.0], "dtype": "f32"}},
  {"id": "w.i", "kind": "tensor", "shape": [3], "format": "int32", "layout": "contiguous_le_v1", "source": {"values": [1, 2, 3], "dtype": "i32"}},
  {"id": "w.q4", "kind": "tensor", "shape": [4, 128], "format": "q4_g64_fp16", "layout": "row_split_k128_v1", "source": {"file": "blob"}},
  {"id": "w.q8", "kind": "tensor", "shape": [2, 64], "format": "q8_g32_fp16", "layout": "row_split_k128_v1", "source": {"file": "blob"}},
  {"id": "w.t2", "kind": "tensor", "shape": [2, 128], "format": "t2_g128_fp16", "layout": "row_split_k128_v1", "source": {"file": "blob"}},
  {"id": "w.nv", "kind": "tensor", "shape": [128, 64], "format": "nvfp4", "layout": "block_scale_k16_m128x4_v1", "divisors": 2, "source": {"file": "blob"}},
  {"id": "w.f8", "kind": "tensor", "shape": [4, 16], "format": "fp8_e4m3fn_row_bf16", "layout": "row_scale_v1", "source": {"file": "blob"}},
  {"id": "r.tok", "kind": "resource", "encoding": "raw_bytes_v1", "bytes": 40, "source": {"file": "blob"}}],
 "bindings": {"text/a": {"object": "w.a"}, "text/q": {"parts": [{"object": "w.q4", "range": [0, 256]}, {"object": "w.q4", "range": [256, 512]}]},
              "text/nv": {"object": "w.nv"}, "text/div": {"object": "w.f32"}, "mtp/x": {"object": "w.q8"}},
 "uses": [{"parameter": "text/a", "input": "text/a_input", "activation_policy": "A16Only"},
          {"parameter": "text/nv", "input": "text/nv_input", "activation_policy": "AllowA4", "auxiliaries": {"activation_input_divisor": {"object": "w.f32"}}},
          {"parameter": "text/q", "input": "text/q_input"}],
 "metadata": {"name": "rich", "license": "apache-2.0", "x": [1, 2.5e3, null, true]},
 "provenance": {"source": "fuzz seed", "n": -0}}
EOF
cp rich.manifest "$OUT/catalog/rich-manifest.json"
if ninfer-pack -q -o rich.ninfer rich.manifest 2> pack.err; then
    ninfer-cat --catalog rich.ninfer > "$OUT/catalog/rich.json"
    ninfer-cat --manifest rich.ninfer > "$OUT/catalog/rich-cat-manifest.json"
else
    echo "make-seeds: ninfer-pack of the rich manifest failed (skipped):" >&2
    cat pack.err >&2
fi
# hostile-ish but valid shapes: rank 16, depth 64 in metadata
printf '{"components": {"text": {"config": {}}}, "objects": [{"id": "w", "kind": "tensor", "shape": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2], "format": "bf16", "layout": "contiguous_le_v1", "offset": 0, "bytes": 4}], "bindings": {}, "uses": [], "files": [{"path": null, "payload_bytes": 4}], "metadata": {"d": %s1%s}}' \
    "$(printf '[%.0s' $(seq 62))" "$(printf ']%.0s' $(seq 62))" > "$OUT/catalog/rank16-depth64.json"
# escapes, unicode and surrogate pairs in IDs and names
printf '%s' '{"components": {"te\u0078t": {"config": {"\u00e9": "\ud83d\ude00"}}}, "objects": [{"id": "w\/\"\\\u2028", "kind": "tensor", "shape": [1], "format": "bf16", "layout": "contiguous_le_v1", "offset": 0, "bytes": 2}], "bindings": {"a~b/c": {"object": "w\/\"\\\u2028"}}, "uses": [], "files": [{"path": null, "payload_bytes": 2}]}' \
    > "$OUT/catalog/escapes.json"

# ---- safetensors ----
nf-mkckpt --layers 1 ck >/dev/null
# a real header (nf-mkckpt), cut to the header plus a little data would break
# bounds: write small files of our own instead, and keep the real header as
# JSON text inside a file whose data region is sparse-free zeros.
st_file() { # NAME HEADER_JSON DATA_BYTES
    local n=${#2}
    { le32 "$n"; printf '\0\0\0\0'; printf '%s' "$2"; head -c "$3" /dev/zero; } > "$OUT/safetensors/$1"
}
st_file two '{"a": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}, "__metadata__": {"format": "pt"}}' 20
st_file scalar-empty '{"s": {"dtype": "F64", "shape": [], "data_offsets": [0, 8]}, "z": {"dtype": "U8", "shape": [0], "data_offsets": [8, 8]}}' 8
st_file dtypes '{"a": {"dtype": "BOOL", "shape": [1], "data_offsets": [0, 1]}, "b": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [1, 2]}, "c": {"dtype": "I16", "shape": [1], "data_offsets": [2, 4]}, "d": {"dtype": "I64", "shape": [1], "data_offsets": [4, 12]}, "e": {"dtype": "U64", "shape": [1, 1], "data_offsets": [12, 20]}}' 20
# the real checkpoint's header with its tensors' data cut off: a bounds case
hl=$(od -An -tu8 -N8 ck/model.safetensors | tr -d ' ')
if [ "$hl" -lt 4096 ]; then
    head -c $((8 + hl)) ck/model.safetensors > "$OUT/safetensors/real-header-cut"
fi

# ---- gguf ----
# g8 N, g32 N, g64 N: little-endian integers; gstr S: u64 length + bytes
g8() { printf "\\$(printf %03o $(($1 & 255)))"; }
g32() { local i; for i in 0 8 16 24; do g8 $(($1 >> i)); done; }
g64() { local i; for i in 0 8 16 24 32 40 48 56; do g8 $(($1 >> i)); done; }
gstr() { g64 ${#1}; printf '%s' "$1"; }
gkey() { gstr "$1"; g32 "$2"; } # NAME TYPE
gpad() { local n=$1 a=$2; head -c $(((a - n % a) % a)) /dev/zero; }
{
    printf GGUF; g32 3; g64 2; g64 9
    gkey general.architecture 8; gstr llama
    gkey general.alignment 4; g32 64
    gkey t.u8 0; g8 200
    gkey t.i16 3; g8 255; g8 255
    gkey t.f32 6; g32 0x3dcccccd
    gkey t.bool 7; g8 1
    gkey t.i64 11; g64 -9223372036854775808
    gkey t.f64 12; g64 0x40c3880000000000
    gkey t.nested 9; g32 9; g64 2; g32 8; g64 2; gstr a; gstr 'b"'; g32 5; g64 1; g32 7
    gstr w; g32 2; g64 64; g64 3; g32 30; g64 0
    gstr v; g32 1; g64 5; g32 0; g64 384
} > g.head
{ cat g.head; gpad "$(stat -c %s g.head)" 64; head -c 404 /dev/zero; } > "$OUT/gguf/small"
{
    printf GGUF; g32 2; g64 1; g64 1
    gkey tokenizer.ggml.tokens 9; g32 8; g64 3; gstr '<s>'; gstr '</s>'; gstr 'hello'
    gstr q; g32 2; g64 32; g64 2; g32 2; g64 0
} > g2.head
{ cat g2.head; gpad "$(stat -c %s g2.head)" 32; head -c 36 /dev/zero; } > "$OUT/gguf/v2-q4"
real=/work/shared/realdata/ollama-llama-2-tiny-random-gguf/llama-2-tiny-random.gguf
[ -r "$real" ] && head -c 3000 "$real" > "$OUT/gguf/real-head-cut"

du -sh "$OUT"
ls -l "$OUT"/*
