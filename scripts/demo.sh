#!/usr/bin/env bash
# demo.sh — the main job end to end on a checkpoint made here (no network, no
# ../shared needed): a small Hugging Face-layout Llama checkpoint →
# ninfer-import → ninfer-pack → ninfer-split into parts → ninfer-verify →
# ninfer-bind --check → ninfer-cat, then a quantized copy run on the CPU.
# Run through `make demo` (which builds everything first).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${NF_BIN:-$here/bin}
TOOLS=${NF_TOOLS:-$here/build/tools}
export PATH="$BIN:$TOOLS:$PATH"
out=${NF_DEMO_DIR:-$here/build/demo}

step() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
# a pipeline or redirection, printed as it can be pasted into a shell
runsh() { printf '$ %s\n' "$1"; sh -c "$1"; }

rm -rf "$out"
mkdir -p "$out"
cd "$out"

step "1. a small checkpoint in Hugging Face layout (deterministic, seed 7)"
run nf-mkckpt --seed 7 --layers 2 ckpt
ls -l ckpt

step "2. import it: a manifest with the architecture's logical names, config and frontend resources"
runsh 'ninfer-import ckpt > manifest.json'
printf 'manifest: %s objects, %s uses\n' "$(grep -c '"kind"' manifest.json)" "$(grep -c '"parameter"' manifest.json)"

step "3. pack it into one artifact (digests of every object in metadata.integrity)"
run ninfer-pack -q -o model.ninfer manifest.json
run ninfer-cat --header model.ninfer

step "4. split it into an entry and parts of at most 1 MiB (tensors cross file boundaries)"
run ninfer-split -q --max-file-bytes 1M -o shards/model.ninfer model.ninfer
run ninfer-cat --files shards/model.ninfer

step "5. verify the parts: headers, lengths, fill, every object digest; bind the logical names"
run ninfer-verify shards/model.ninfer
runsh 'ninfer-verify --sums shards/model.ninfer > shards/SHA256SUMS'
(cd shards && run sha256sum -c SHA256SUMS)
run ninfer-bind --check shards/model.ninfer
runsh 'ninfer-bind shards/model.ninfer | head -4'

step "6. read every tensor back from the parts: byte-identical to the checkpoint's"
n=0
while IFS=$'\t' read -r id off len; do
    ninfer-cat --object "$id" shards/model.ninfer > obj.bin
    dd if=ckpt/model.safetensors bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$len" status=none |
        cmp -s - obj.bin ||
        { echo "demo: $id differs from the checkpoint" >&2; exit 1; }
    n=$((n + 1))
done < <(nf-st2manifest --list ckpt)
echo "$n tensors identical to their bytes in ckpt/model.safetensors"
runsh 'ninfer-cat --resource tokenizer_config.json shards/model.ninfer | cmp - ckpt/tokenizer_config.json'
echo "tokenizer_config.json: identical"

step "7. merge back through a zstd stream, and verify it on the way"
runsh 'ninfer-cat --zstd shards/model.ninfer | ninfer-split -q -o merged.ninfer -'
run ninfer-verify merged.ninfer
cmp <(ninfer-cat --range 0:$(ninfer-cat --files merged.ninfer | sed -n 's/.*"payload_bytes": \([0-9]*\).*/\1/p' | head -1) merged.ninfer) \
    <(ninfer-cat --range 0:$(ninfer-cat --files merged.ninfer | sed -n 's/.*"payload_bytes": \([0-9]*\).*/\1/p' | head -1) model.ninfer)
echo "merged payload identical to the original"

step "8. quantize (q4 MLPs, q8 attention, fp8 head), pack, and run every projection on the CPU"
runsh "ninfer-quant 'text/layers/*/mlp/*=q4_g64_fp16' 'text/layers/*/attention/*=q8_g32_fp16' \\
    'text/head=fp8_e4m3fn_row_bf16' < manifest.json > quantized.json"
run ninfer-pack -q --report -o quantized.ninfer quantized.json
run ninfer-verify --deep quantized.ninfer
run ninfer-run --device cpu --iters 1 quantized.ninfer

printf '\ndemo: done; files are in %s\n' "$out"
