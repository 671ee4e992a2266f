#!/usr/bin/env bash
# bench-catalog.sh — every command on a frontier-scale catalog (issue 9,
# DESIGN 14), against `jq -c .` and Python's json.load of the same catalog
# text, measured in the same run, interleaved round by round.
#
#   scripts/bench-catalog.sh [WORKDIR]
#
# Generates, deterministically and with our own tools (tests/tools):
#   - a Qwen3-Next-shaped checkpoint (nf-mkarch --arch qwen3next --layers 48
#     --experts 512: 48 layers, full attention every 4th, 512 experts and a
#     shared expert, tiny hidden sizes; 74,391 tensors), imported, quantized
#     and packed once to have the inputs (a ~37 MB catalog, ~190 MB payload);
#   - a 74k-tensor GGUF (nf-mkarch --arch llama --layers 8200, nf-mkgguf:
#     73,803 tensors, ~512 MB), imported and packed once, for the import and
#     the byte-identical ninfer-export of a GGUF of that many tensors;
#   - synthetic catalogs of 100,000 and 1,000,000 objects and bindings with
#     their digests (nf-mkcatalog; ~23 and ~235 MB), framed by nf-mkartifact.
# Then ROUNDS rounds (default 3), each running jq, python3 and every
# command once, under /usr/bin/time; it prints, per command, the median
# elapsed and CPU (user+sys) seconds and the peak RSS, and the ratios:
# time against jq and python3 of the same catalog text, RSS against the
# catalog's bytes, and the aim of the issue next to it. The machine may be
# shared: CPU-time ratios are the steadier of the two; timings are never
# asserted, only printed.
#
# Environment: NF_BIN, NF_TOOLS (default bin/, build/tools/), ROUNDS,
# JQ_1M=0 to skip jq/python on the 1M catalog (they take ~30 s and ~2 GB).
# Needs jq, python3 and /usr/bin/time (Debian: jq python3 time).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${NF_BIN:-$ROOT/bin}
TOOLS=${NF_TOOLS:-$ROOT/build/tools}
ROUNDS=${ROUNDS:-3}
JQ_1M=${JQ_1M:-1}
W=${1:-$(mktemp -d "${TMPDIR:-/tmp}/bench-catalog.XXXXXX")}
mkdir -p "$W"
W=$(cd "$W" && pwd)

for t in jq python3 /usr/bin/time; do
    command -v "$t" > /dev/null || { echo "bench-catalog: $t is missing" >&2; exit 2; }
done
for t in "$BIN/ninfer-import" "$TOOLS/nf-mkarch" "$TOOLS/nf-mkcatalog" "$TOOLS/nf-mkartifact"; do
    [ -x "$t" ] || { echo "bench-catalog: $t is missing (run make, then make $TOOLS/...)" >&2; exit 2; }
done
export PATH="$BIN:$PATH"

say() { printf '%s\n' "$*" >&2; }

# ---- inputs (not timed) -------------------------------------------------------------
say "bench-catalog: generating inputs in $W"
if [ ! -e "$W/ck/model.safetensors" ]; then
    "$TOOLS/nf-mkarch" --arch qwen3next --layers 48 --experts 512 --seed 1 "$W/ck"
fi
[ -e "$W/m.json" ] || ninfer-import -q -o "$W/m.json" "$W/ck"
[ -e "$W/m.ninfer" ] || ninfer-pack -q -o "$W/m.ninfer" "$W/m.json"
ninfer-cat --catalog "$W/m.ninfer" > "$W/cat.json"
if [ ! -e "$W/parts/m.ninfer" ]; then
    mkdir -p "$W/parts"
    ninfer-split -q --max-file-bytes 64M -o "$W/parts/m.ninfer" "$W/m.ninfer"
fi
EXPERT=$(jq -r '.bindings["text/layers/0/mlp/experts/7/gate"].object' "$W/cat.json")
for n in 100000 1000000; do
    if [ ! -e "$W/c$n.ninfer" ]; then
        pay=$("$TOOLS/nf-mkcatalog" --digests "$n" "$W/c$n.json" 2>&1 >/dev/null)
        "$TOOLS/nf-mkartifact" --catalog "$W/c$n.json" --payload "zero:$pay" -o "$W/c$n.ninfer"
    fi
done
# a 74k-tensor GGUF (issue 19: per-tensor records on the way in, the
# byte-identical export on the way out): llama, 8200 layers of tiny tensors
if [ ! -e "$W/g74k.gguf" ]; then
    "$TOOLS/nf-mkarch" --arch llama --layers 8200 --seed 1 "$W/ckg" > /dev/null
    "$TOOLS/nf-mkgguf" "$W/ckg" "$W/g74k.gguf"
fi
[ -e "$W/g74k.json" ] || ninfer-import -q -o "$W/g74k.json" "$W/g74k.gguf"
[ -e "$W/g74k.ninfer" ] || ninfer-pack -q -o "$W/g74k.ninfer" "$W/g74k.json"
mkdir -p "$W/out"
cat_bytes=$(stat -c %s "$W/cat.json")
g74k_bytes=$(ninfer-cat --catalog "$W/g74k.ninfer" | wc -c)
c1m_bytes=$(stat -c %s "$W/c1000000.json")
c100k_bytes=$(stat -c %s "$W/c100000.json")
pay_bytes=$(stat -c %s "$W/m.ninfer")
say "bench-catalog: catalog $cat_bytes bytes, $(jq '.objects | length' "$W/cat.json") objects; payload file $pay_bytes bytes"

# ---- the cases -------------------------------------------------------------------------
# name|catalog bytes for RSS ratios|aim|command (run by bash -c, cwd $W)
cases=(
    "jq -c .|$cat_bytes|baseline|jq -c . cat.json > /dev/null"
    "python3 json.load|$cat_bytes|baseline|python3 -c 'import json,sys; json.load(open(sys.argv[1]))' cat.json"
    "io: cp of the artifact|$cat_bytes|baseline|cp m.ninfer out/copy.ninfer && rm -f out/copy.ninfer"
    "io: cp + sha256sum|$cat_bytes|baseline|cp m.ninfer out/copy.ninfer && sha256sum out/copy.ninfer > /dev/null && rm -f out/copy.ninfer"
    "ninfer-import|$cat_bytes|linear|ninfer-import -q --force -o out/m.json ck"
    "ninfer-quant experts=q4|$cat_bytes|<=0.2x jq|ninfer-quant --force -i m.json -o out/mq.json 'text/layers/*/mlp/experts/*=q4_g64_fp16'"
    "ninfer-pack|$cat_bytes|<=0.3x jq + io|ninfer-pack -q --force -o out/p.ninfer m.json"
    "ninfer-verify --no-digests|$cat_bytes|<=0.2x jq|ninfer-verify --no-digests m.ninfer > /dev/null"
    "ninfer-bind --check|$cat_bytes|<=0.2x jq|ninfer-bind --check -q m.ninfer"
    "ninfer-bind --plan|$cat_bytes|-|ninfer-bind --plan m.ninfer > /dev/null"
    "ninfer-cat --object (1 expert)|$cat_bytes|<=0.1x jq, <=2x bytes|ninfer-cat --object '$EXPERT' m.ninfer > /dev/null"
    "ninfer-cat --manifest|$cat_bytes|<=0.3x jq|ninfer-cat --manifest m.ninfer > /dev/null"
    "ninfer-split parts->one|$cat_bytes|<=0.3x jq + io|ninfer-split -q --force -o out/one.ninfer parts/m.ninfer"
    "ninfer-run cpu text|$cat_bytes|-|ninfer-run --device cpu --component text m.ninfer > /dev/null"
    "ninfer-import 74k-tensor GGUF|$g74k_bytes|linear|ninfer-import -q --force -o out/g.json g74k.gguf"
    "ninfer-export --gguf 74k|$g74k_bytes|~ cp of 512 MB|ninfer-export -q --no-sync --force --gguf -o out/g.gguf g74k.ninfer"
    "verify 100k --no-digests|$c100k_bytes|-|ninfer-verify --no-digests c100000.ninfer > /dev/null"
    "verify 1M --no-digests|$c1m_bytes|<=12x the 100k|ninfer-verify --no-digests --max-json-bytes 1G c1000000.ninfer > /dev/null"
    "verify 1M (digests)|$c1m_bytes|<=3x bytes RSS|ninfer-verify --max-json-bytes 1G c1000000.ninfer > /dev/null"
    "cat --object 1M|$c1m_bytes|-|ninfer-cat --max-json-bytes 1G --object o0500000 c1000000.ninfer > /dev/null"
)
if [ "$JQ_1M" = 1 ]; then
    cases+=("jq -c . 1M|$c1m_bytes|baseline|jq -c . c1000000.json > /dev/null")
    cases+=("python3 json.load 1M|$c1m_bytes|baseline|python3 -c 'import json,sys; json.load(open(sys.argv[1]))' c1000000.json")
fi

declare -A EL CPU RSS
for ((r = 1; r <= ROUNDS; r++)); do
    say "bench-catalog: round $r of $ROUNDS"
    for c in "${cases[@]}"; do
        IFS='|' read -r name bytes aim cmd <<< "$c"
        # the 1M baselines once: they take half a minute each
        if [ "$r" -gt 1 ] && { [ "$name" = "jq -c . 1M" ] || [ "$name" = "python3 json.load 1M" ]; }; then
            continue
        fi
        (cd "$W" && /usr/bin/time -f '%e %U %S %M' -o "$W/out/time" bash -c "$cmd") \
            || { say "bench-catalog: '$name' failed"; exit 1; }
        read -r e u s m < "$W/out/time"
        EL[$name]+="$e "
        CPU[$name]+="$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.3f", u + s }') "
        RSS[$name]+="$m "
    done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
maxof() { tr ' ' '\n' | grep . | sort -g | tail -n 1; }

jq_e=$(median <<< "${EL["jq -c ."]}"); jq_c=$(median <<< "${CPU["jq -c ."]}")
py_e=$(median <<< "${EL["python3 json.load"]}")
io_e=$(median <<< "${EL["io: cp + sha256sum"]}")
printf '\nQwen3-Next-shaped catalog: %d bytes (74,391 tensors); 1M catalog: %d bytes; %d rounds, medians\n' \
    "$cat_bytes" "$c1m_bytes" "$ROUNDS"
printf '%-30s %9s %9s %9s %8s %8s %9s %9s  %s\n' command elapsed_s cpu_s rss_MiB x_jq x_py x_jq_cpu rss/bytes aim
for c in "${cases[@]}"; do
    IFS='|' read -r name bytes aim cmd <<< "$c"
    [ -n "${EL[$name]:-}" ] || continue
    e=$(median <<< "${EL[$name]}"); u=$(median <<< "${CPU[$name]}"); m=$(maxof <<< "${RSS[$name]}")
    if [[ "$name" == *1M* || "$name" == *100k* ]]; then
        je=${EL["jq -c . 1M"]:-}; jc=${CPU["jq -c . 1M"]:-}; pe=${EL["python3 json.load 1M"]:-}
        je=${je:+$(median <<< "$je")}; jc=${jc:+$(median <<< "$jc")}; pe=${pe:+$(median <<< "$pe")}
        if [[ "$name" == *100k* ]]; then je=; jc=; pe=; fi
    else
        je=$jq_e; jc=$jq_c; pe=$py_e
    fi
    awk -v n="$name" -v e="$e" -v u="$u" -v m="$m" -v b="$bytes" -v je="$je" -v jc="$jc" \
        -v pe="$pe" -v aim="$aim" 'BEGIN {
        xj = je > 0 ? sprintf("%.3f", e / je) : "-"; xp = pe > 0 ? sprintf("%.3f", e / pe) : "-"
        xc = jc > 0 ? sprintf("%.3f", u / jc) : "-"
        printf "%-30s %9.3f %9.3f %9.1f %8s %8s %9s %9.2f  %s\n", n, e, u, m / 1024, xj, xp, xc,
            m * 1024 / b, aim }'
done
# derived: payload I/O taken out, and the 10x scaling
pk=$(median <<< "${EL["ninfer-pack"]}"); sp=$(median <<< "${EL["ninfer-split parts->one"]}")
v1=$(median <<< "${CPU["verify 100k --no-digests"]}"); v10=$(median <<< "${CPU["verify 1M --no-digests"]}")
awk -v pk="$pk" -v sp="$sp" -v io="$io_e" -v je="$jq_e" -v v1="$v1" -v v10="$v10" 'BEGIN {
    printf "\npack minus its payload I/O and hashing (cp + sha256sum of the artifact): %.3f s = %.3fx jq; split: %.3f s = %.3fx jq\n",
        pk - io, (pk - io) / je, sp - io, (sp - io) / je
    printf "10x more records (verify --no-digests, CPU): %.3f s -> %.3f s = %.2fx (aim <= 12x)\n",
        v1, v10, v10 / v1 }'
