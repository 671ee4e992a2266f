#!/usr/bin/env bash
# bench-export.sh [SIZE_MIB] — ninfer-export's throughput against
# `cp --reflink=never` of the same bytes (issue 19: >= 0.9x when every
# tensor is copied), in the same run, interleaved run by run:
#   A  ninfer-export --safetensors of a bf16 Hugging Face import (every
#      tensor copied by the kernel)
#   G  ninfer-export --gguf of the same artifact (llama: q/k rows moved back
#      into llama.cpp's order through memory, the rest copied)
#   I  ninfer-export --gguf of a GGUF import of it (a byte-identical export:
#      rows moved back, the rest copied)
#   B  cp --reflink=never of the artifact's entry file (its bytes)
# each ROUNDS times (default 9), outputs removed between runs (untimed), the
# page cache warm for all. Prints per case the min and p10 wall time, the
# rate, and the ratio to cp's, over all runs and over the quiet ones only: a
# run is quiet when the machine's other CPU use, (Δbusy − Δself) ÷ Δtotal
# from /proc/stat, is at most 3% and steal at most 1% (it says when too few
# runs were quiet to trust the figures).
#
# Environment: NF_BIN, NF_TOOLS (default bin/, build/tools/), ROUNDS,
# NF_BENCH_DIR (work directory, default a fresh one under $TMPDIR, removed
# at the end).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${NF_BIN:-$here/bin}
TOOLS=${NF_TOOLS:-$here/build/tools}
ROUNDS=${ROUNDS:-9}
size_mib=${1:-1024}
work=${NF_BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/nf-bench-export.XXXXXX")}
[ -n "${NF_BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
export PATH="$BIN:$TOOLS:$PATH"
mkdir -p "$work" && cd "$work"
hz=$(getconf CLK_TCK)

# a Llama checkpoint of about SIZE_MIB: hidden 2048, intermediate 5632,
# 8 heads of 256, vocab 32000, bf16 (about 92 MiB a layer, 125 MiB embedding)
layers=$(( (size_mib - 125) / 92 ))
[ "$layers" -ge 1 ] || layers=1
echo "bench-export: a $layers-layer bf16 checkpoint (~$size_mib MiB) in $work" >&2
[ -e ck/model.safetensors ] || nf-mkckpt --layers "$layers" --hidden 2048 --intermediate 5632 \
    --heads 8 --kv-heads 4 --vocab 32000 --dtype bf16 ck > /dev/null
[ -e h.ninfer ] || { ninfer-import -q ck > h.json && ninfer-pack -q --no-sync -o h.ninfer h.json; }
[ -e g.ninfer ] || { ninfer-export -q --no-sync --gguf -o g.gguf h.ninfer &&
    ninfer-import -q g.gguf > g.json && ninfer-pack -q --no-sync -o g.ninfer g.json; }
bytes=$(stat -c %s h.ninfer)
cat h.ninfer g.ninfer > /dev/null # warm the cache

# cpu_now — total, idle (idle + iowait) and steal jiffies of /proc/stat.
cpu_now() {
    awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $5 + $6, $9; exit }' /proc/stat
}

# timed NAME CMD — run CMD once; append "wall quiet" to $NAME.times.
timed() {
    local name=$1 cmd=$2 s0 s1 t0 t1
    s0=$(cpu_now)
    t0=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o self.txt sh -c "$cmd" > /dev/null
    t1=$(date +%s.%N)
    s1=$(cpu_now)
    read -r u s < self.txt
    awk -v a="$s0" -v b="$s1" -v t0="$t0" -v t1="$t1" -v u="$u" -v s="$s" -v hz="$hz" 'BEGIN {
        split(a, x, " "); split(b, y, " ")
        dt = y[1] - x[1]; busy = dt - (y[2] - x[2]); self = (u + s) * hz
        other = dt > 0 ? (busy - self) / dt : 1; steal = dt > 0 ? (y[3] - x[3]) / dt : 1
        printf "%.6f %d %.3f\n", t1 - t0, (other <= 0.03 && steal <= 0.01), other }' >> "$name.times"
}

rm -f ./*.times
A="ninfer-export -q --no-sync --safetensors -o out.st h.ninfer"
G="ninfer-export -q --no-sync --gguf -o out.gguf h.ninfer"
I="ninfer-export -q --no-sync --gguf -o out.id.gguf g.ninfer"
B="cp --reflink=never h.ninfer out.cp"
for ((r = 0; r < ROUNDS; r++)); do
    rm -rf out.*; timed B "$B"
    rm -rf out.*; timed A "$A"
    rm -rf out.*; timed B "$B"
    rm -rf out.*; timed G "$G"
    rm -rf out.*; timed B "$B"
    rm -rf out.*; timed I "$I"
done
rm -rf out.*

# stats NAME [quiet] — "min p10 n" of the wall times.
stats() {
    awk -v q="${2:-}" '(q == "" || $2 == 1) { print $1 }' "$1.times" | sort -g |
        awk '{ v[NR] = $1 } END { if (!NR) { print "- - 0"; exit }
             i = int(NR * 0.1 + 0.999); if (i < 1) i = 1; printf "%s %s %d\n", v[1], v[i], NR }'
}

echo "bench-export: artifact $bytes bytes, $ROUNDS rounds (cp runs $((3 * ROUNDS)))"
quiet_ok=1
for q in "" quiet; do
    read -r bmin bp10 bn < <(stats B $q)
    printf '\n%s runs:\n' "${q:-all}"
    for c in A G I; do
        read -r min p10 n < <(stats $c $q)
        if [ "$n" -eq 0 ] || [ "$bn" -eq 0 ]; then
            printf '  %-48s no quiet run\n' "$c"
            quiet_ok=0
            continue
        fi
        label=$(case $c in A) echo "export --safetensors (all copied)";; G) echo "export --gguf (q/k rows moved)";;
                I) echo "export --gguf, identical (q/k rows moved)";; esac)
        awk -v l="$label" -v m="$min" -v p="$p10" -v n="$n" -v bm="$bmin" -v bp="$bp10" -v by="$bytes" 'BEGIN {
            printf "  %-44s min %.3f s (%5.0f MB/s) p10 %.3f s  n=%d  | cp min %.3f s p10 %.3f s  | ratio (cp/export) min %.2f p10 %.2f\n",
                l, m, by / m / 1e6, p, n, bm, bp, bm / m, bp / p }'
        [ -n "$q" ] && [ "$n" -lt 3 ] && quiet_ok=0
    done
done
printf '\nother CPU use during the runs (median of (busy - self) / total): %s\n' \
    "$(cat ./*.times | awk '{ print $3 }' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')"
if [ "$quiet_ok" -eq 1 ]; then
    echo "bench-export: quiet gate met (at least 3 quiet runs of each case)"
else
    echo "bench-export: quiet gate NOT met: the machine was busy; the figures are noise"
fi
