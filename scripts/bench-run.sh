#!/usr/bin/env bash
# bench-run.sh — ninfer-run's load and kernel rates on real artifacts, this
# build against another (issue 21: load and kernel GB/s before and after,
# load with and without digest checking), on the CPU.
#
#   scripts/bench-run.sh [--rounds N] [--base BINDIR] ARTIFACT...
#
# For each artifact and round, interleaved (A/B within the round, so a busy
# minute hits every variant alike): BINDIR/ninfer-run (the "before", when
# given), bin/ninfer-run with its digest check (the default) and with
# --no-digests, each at --iters 1 and --iters 5, --device cpu --json. Per
# variant it prints the load time (min and p10 over the rounds) and its GB/s
# at the p10, and the kernels' GB/s (all uses' encoded bytes over all their
# median times, the p10 over the rounds, so the figure is comparable with
# ninfer-bench's). The artifact is read once before the rounds, so every
# load reads from the page cache.
#
# The quiet gate: (delta busy - delta self) / delta total <= 3% and steal
# <= 1%, from /proc/stat over the whole run (self: this script's children's
# CPU time); the closing line says whether it held. Figures taken while it
# did not are noise: say so when quoting them.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=7 base=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --base) base=$2; shift 2 ;;
        -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: scripts/bench-run.sh [--rounds N] [--base BINDIR] ARTIFACT..." >&2; exit 2; }
new=$here/bin/ninfer-run
[ -x "$new" ] || { echo "bench-run: build first (make): $new is missing" >&2; exit 2; }

stat_now() { # busy total steal self (clock ticks)
    local self
    self=$(awk '{ print $14 + $15 + $16 + $17 }' /proc/$$/stat)
    awk -v self="$self" '/^cpu / { b = $2 + $3 + $4 + $7 + $8; t = b + $5 + $6 + $9; print b, t, $9, self; exit }' /proc/stat
}

# one RUNNER ARGS...: a --json report's figures: load_s load_gbps kernel_gbps
one() {
    "$@" 2> /dev/null | awk '
        { s = $0 }
        END {
            if (match(s, /"load_s":[0-9.e+-]+/)) ls = substr(s, RSTART + 9, RLENGTH - 9)
            if (match(s, /"load_gbps":[0-9.e+-]+/)) lg = substr(s, RSTART + 12, RLENGTH - 12)
            n = split(s, u, /\{"parameter":/)
            for (i = 2; i <= n; i++) {
                t = ""; g = ""
                if (match(u[i], /"time_ms":[0-9.e+-]+/)) t = substr(u[i], RSTART + 10, RLENGTH - 10)
                if (match(u[i], /"gbps":[0-9.e+-]+/)) g = substr(u[i], RSTART + 7, RLENGTH - 7)
                if (t != "" && g != "") { tt += t; bb += g * t }
            }
            printf "%s %s %s\n", ls, lg, (tt > 0 ? bb / tt : 0)
        }'
}

t0=($(stat_now))
for art in "$@"; do
    cat "$art" > /dev/null
    bytes=$("$new" --device cpu --iters 1 --json "$art" 2> /dev/null | grep -o '"bytes_read":[0-9]*' | sed 's/.*://')
    echo "== $art: ${bytes:-?} bytes of parents, $rounds rounds"
    w=$(mktemp -d)
    for r in $(seq "$rounds"); do
        for it in 1 5; do
            [ -n "$base" ] && one "$base/ninfer-run" --device cpu --iters $it --json "$art" >> "$w/before.$it"
            one "$new" --device cpu --iters $it --json "$art" >> "$w/digests.$it"
            one "$new" --device cpu --iters $it --no-digests --json "$art" >> "$w/nodigests.$it"
        done
    done
    printf '%-10s %5s %11s %11s %11s %13s\n' variant iters load_min_s load_p10_s load_GB/s kernel_GB/s
    for v in before digests nodigests; do
        for it in 1 5; do
            [ -s "$w/$v.$it" ] || continue
            awk -v v="$v" -v it="$it" -v bytes="${bytes:-0}" '
                { l[NR] = $1; k[NR] = $3 }
                function sort(a, n,    i, j, x) { for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x } }
                END {
                    n = NR; sort(l, n); sort(k, n)
                    p = int(0.1 * (n - 1)) + 1 # the p10 of the load times
                    q = n - int(0.1 * (n - 1)) # the rate at the p10 of the kernel times
                    printf "%-10s %5d %11.4f %11.4f %11.2f %13.2f\n", v, it, l[1], l[p], bytes / l[p] / 1e9, k[q]
                }' "$w/$v.$it"
        done
    done
    rm -rf "$w"
done
t1=($(stat_now))
awk -v b="$((t1[0] - t0[0]))" -v t="$((t1[1] - t0[1]))" -v st="$((t1[2] - t0[2]))" -v s="$((t1[3] - t0[3]))" 'BEGIN {
    o = t > 0 ? (b - s) / t : 1; x = t > 0 ? st / t : 1
    printf "# quiet gate: others %.1f%% of the CPU time (<= 3%%), steal %.1f%% (<= 1%%): %s\n", 100 * o, 100 * x,
        (o <= 0.03 && x <= 0.01) ? "held" : "NOT held: the figures above are noise"
}'
