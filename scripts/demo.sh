#!/usr/bin/env bash
# demo.sh — the main job end to end on a checkpoint made here (no network, no
# ../shared needed): a small Hugging Face-layout Llama checkpoint →
# ninfer-import → ninfer-pack → ninfer-split into parts → ninfer-verify →
# ninfer-bind --check → ninfer-cat, then a quantized copy run on the CPU and
# exported to GGUF, and the parts read over HTTP from a loopback nginx
# (skipped without nginx).
# Run through `make demo` (which builds everything first).
#
# Every command is printed ("$ ...") as it can be pasted into a shell after
# the `cd` and `export PATH=...` lines printed first, and run exactly so
# (bash, in the demo's directory): tests/demo.bats replays the printed
# commands and compares what they print. A new step is a `step` title and
# `cmd` lines; the outputs are reproducible (--reproducible), so keep them
# so (no dates, no timings but ninfer-run's).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${NF_BIN:-$here/bin}
TOOLS=${NF_TOOLS:-$here/build/tools}
out=${NF_DEMO_DIR:-$here/build/demo}

step() { printf '\n== %s\n' "$*"; }
# cmd TEXT — print TEXT as a command line, then run it with bash in the
# demo's directory; a failure (of any command of a pipeline) ends the demo.
cmd() {
    printf '$ %s\n' "$1"
    bash -c "set -eo pipefail; $1"
}

rm -rf "$out"
mkdir -p "$out"
cd "$out"
export PATH="$BIN:$TOOLS:$PATH"
printf '$ cd %q\n$ export PATH=%q:%q:"$PATH"\n' "$out" "$BIN" "$TOOLS"

step "1. a small checkpoint in Hugging Face layout (deterministic, seed 7)"
cmd 'nf-mkckpt --seed 7 --layers 2 ckpt'
cmd 'wc -c ckpt/*'

step "2. import it: a manifest with the architecture's logical names, config and frontend resources"
cmd 'ninfer-import ckpt > manifest.json'
cmd "echo \"objects: \$(grep -c '\"kind\"' manifest.json), uses: \$(grep -c '\"parameter\"' manifest.json)\""

step "3. pack it into one artifact (every object's digest in metadata.integrity; --reproducible: the artifact_id is the catalog's digest, so every run writes the same bytes)"
cmd 'ninfer-pack -q --reproducible -o model.ninfer manifest.json'
cmd 'ninfer-cat --header model.ninfer'

step "4. split it into an entry and parts of at most 1 MiB (tensors cross file boundaries)"
cmd 'ninfer-split -q --reproducible --max-file-bytes 1M -o shards/model.ninfer model.ninfer'
cmd 'ninfer-cat --files shards/model.ninfer'

step "5. verify the parts: headers, lengths, fill, every object digest; publish SHA256SUMS; bind the logical names"
cmd 'ninfer-verify shards/model.ninfer'
cmd 'ninfer-verify --sums shards/model.ninfer > shards/SHA256SUMS'
cmd '(cd shards && sha256sum -c SHA256SUMS)'
cmd 'ninfer-bind --check shards/model.ninfer'
cmd 'ninfer-bind shards/model.ninfer | head -4'

step "6. read every tensor back from the parts: byte-identical to the checkpoint's"
cmd 'nf-st2manifest --list ckpt | { n=0; while IFS="$(printf "\t")" read -r id off len; do \
    ninfer-cat --object "$id" shards/model.ninfer | \
        cmp - <(tail -c +$((off + 1)) ckpt/model.safetensors | head -c "$len") || exit 1; \
    n=$((n + 1)); done; echo "$n tensors identical to their bytes in ckpt/model.safetensors"; }'
cmd 'ninfer-cat --resource tokenizer_config.json shards/model.ninfer | cmp - ckpt/tokenizer_config.json && echo "tokenizer_config.json: identical"'

step "7. merge back through a zstd stream, verifying it on the way: the artifact of step 3, byte for byte"
cmd 'ninfer-cat --zstd --reproducible shards/model.ninfer | ninfer-split -q --reproducible -o merged.ninfer -'
cmd 'ninfer-verify merged.ninfer'
cmd 'cmp merged.ninfer model.ninfer && echo "merged.ninfer: identical to model.ninfer"'

step "8. quantize (q4 MLPs, q8 attention, fp8 head), pack, and run every projection on the CPU"
cmd "ninfer-quant 'text/layers/*/mlp/*=q4_g64_fp16' 'text/layers/*/attention/*=q8_g32_fp16' \\
    'text/head=fp8_e4m3fn_row_bf16' < manifest.json > quantized.json"
cmd 'ninfer-pack -q --reproducible --report -o quantized.ninfer quantized.json'
cmd 'ninfer-verify --deep quantized.ninfer'
cmd 'ninfer-run --device cpu --iters 1 quantized.ninfer'

step "9. export the quantized model to GGUF (q4 as Q4_0, q8 as Q8_0: the same values) and read it back with our GGUF reader"
cmd 'ninfer-export --gguf -o quantized.gguf quantized.ninfer'
cmd 'ninfer-import -q quantized.gguf | ninfer-pack -q --reproducible -o fromgguf.ninfer -'
cmd 'ninfer-verify fromgguf.ninfer'
cmd 'n=0; for p in $(ninfer-bind quantized.ninfer | cut -f1); do \
    cmp -s <(ninfer-bind --extract "$p" quantized.ninfer) <(ninfer-bind --extract "$p" fromgguf.ninfer) || exit 1; \
    n=$((n + 1)); done; echo "$n parameters decode to the same values from quantized.gguf"'

step "10. serve the parts over HTTP (a loopback nginx started here) and read them in place, then fetch them"
if command -v nginx > /dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
    ng=$here/tests/lib/nginx.bash
    trap '. "$ng"; nf_nginx_stop "$out/web"' EXIT
    cmd ". $(printf %q "$ng") && mkdir -p web/www && cp -r shards web/www/ && nf_nginx_start web && echo \"\$NF_HTTP_PORT\" > web/port"
    cmd 'ninfer-verify -q "http://127.0.0.1:$(cat web/port)/shards/model.ninfer" && echo "verified over HTTP, every digest"'
    cmd 'ninfer-cat --object lm_head.weight "http://127.0.0.1:$(cat web/port)/shards/model.ninfer" | cmp - <(ninfer-cat --object lm_head.weight shards/model.ninfer) && echo "lm_head.weight over HTTP: identical"'
    cmd 'ninfer-fetch -q --sums fetched/SHA256SUMS "http://127.0.0.1:$(cat web/port)/shards/model.ninfer" -o fetched/model.ninfer'
    cmd '(cd fetched && sha256sum -c SHA256SUMS)'
    cmd ". $(printf %q "$ng") && nf_nginx_stop web"
    trap - EXIT
else
    echo "demo: nginx is not installed (sudo apt-get install nginx-light): step 10 skipped"
fi

step "done: the files are in $out"
