#!/usr/bin/env bash
# bench-remote.sh [SIZE_MIB] — artifacts over HTTP against curl and openssl,
# on a loopback nginx this script starts (tests/lib/nginx.bash), with an
# artifact of SIZE_MIB (default 2048) in 8 files, the page cache warm, every
# figure the minimum of RUNS (default 5) runs interleaved with its baseline's:
#   ninfer-verify URL            vs  curl -s URL_i | openssl dgst -sha256, file
#                                    after file                  (aim >= 1.0x)
#   ninfer-fetch --jobs 8        vs  curl --parallel of the files, then openssl
#                                    dgst -sha256 of each        (aim >= 0.9x)
#   both through nf-httpfault capping each connection at 64 MiB/s:
#   ninfer-fetch --jobs 8        vs  curl -o of each file, one after another
#                                                                (aim >= 4x)
#   the peak RSS of ninfer-verify URL                 (aim <= 64 MiB + catalog)
# ratio = the baseline's time / ours. Writers run with --no-sync (curl does not
# sync either). The figures count only when the machine was quiet: (CPU busy
# time of others) / (CPU time) <= 3% and steal <= 1% over the runs, read from
# /proc/stat (ours: this script's children, nginx and the proxy); the verdict
# says whether that held. NF_BENCH_DIR (made when missing) puts the files
# elsewhere: on a tmpfs (/dev/shm) the writers' figures leave out the disk's
# write-back, which both sides then wait for. Needs nginx, curl, openssl and
# a built tree.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${NF_BIN:-$here/bin}
TOOLS=${NF_TOOLS:-$here/build/tools}
export PATH="$BIN:$TOOLS:$PATH"
. "$here/tests/lib/nginx.bash"
size_mib=${1:-2048}
runs=${RUNS:-5}
work=${NF_BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/nf-bench-remote.XXXXXX")}
for t in curl openssl nf-httpfault; do
    command -v "$t" > /dev/null || { echo "bench-remote: $t is missing" >&2; exit 2; }
done
nf_nginx_available || { echo "bench-remote: nginx is missing (apt-get install nginx-light)" >&2; exit 2; }
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY NINFER_TOKEN
cleanup() {
    nf_proxy_stop "$work/px" 2> /dev/null || true
    nf_nginx_stop "$work/ng" 2> /dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work"
cd "$work"

echo "bench-remote: building a ${size_mib} MiB artifact in 8 files in $work"
nobj=64
per=$((size_mib * 1048576 / nobj))
head -c $((per * nobj)) /dev/zero |
    openssl enc -aes-128-ctr -nosalt -K 000102030405060708090a0b0c0d0e0f \
        -iv 00000000000000000000000000000000 > payload.bin
{
    printf '{"components":{"text":{"config":{}}},"objects":['
    for i in $(seq 0 $((nobj - 1))); do
        [ "$i" -gt 0 ] && printf ','
        printf '{"id":"blob%d","kind":"resource","encoding":"raw_bytes_v1","bytes":%d,"source":{"file":"payload.bin","offset":%d}}' \
            "$i" "$per" $((i * per))
    done
    printf '],"bindings":{},"uses":[]}\n'
} > manifest.json
mkdir -p ng/www/a
ninfer-pack -q --no-sync --max-file-bytes $(((size_mib / 8 + 1) * 1048576)) -o ng/www/a/m.ninfer manifest.json
rm payload.bin
mapfile -t files < <(cd ng/www/a && ls)
[ "${#files[@]}" -eq 8 ] || echo "bench-remote: note: ${#files[@]} files, not 8"
nf_nginx_start ng
nf_proxy_start px --rate $((64 * 1048576)) --lifetime 7200
U=http://127.0.0.1:$NF_HTTP_PORT/a
UP=$NF_PROXY/a
cat ng/www/a/* > /dev/null # warm
bytes=$(cat ng/www/a/* | wc -c)
json_bytes=$(ninfer-cat --header "$U/m.ninfer" | sed -n 's/.*"json_bytes": \([0-9]*\).*/\1/p')

# CPU time (clock ticks) of everything that is ours: this shell's waited-for
# children, nginx's processes, the proxy
ours() {
    local t=0 p f
    read -r -a f < /proc/$$/stat
    t=$((f[15] + f[16]))
    for p in $(cat ng/nginx.pid) $(pgrep -P "$(cat ng/nginx.pid)" 2> /dev/null) $(cat px.pid); do
        [ -r "/proc/$p/stat" ] || continue
        f=($(sed 's/^.*) //' "/proc/$p/stat"))
        t=$((t + f[11] + f[12]))
    done
    echo "$t"
}
cpu() { # busy and total ticks, steal
    awk '/^cpu / { b = $2 + $3 + $4 + $7 + $8 + $9; t = b + $5 + $6; print b, t, $9 }' /proc/stat
}
read -r b0 t0 s0 < <(cpu)
o0=$(ours)

# pair A B — run A and B alternately $runs times (each after an untimed
# cleanup); TA and TB: the minimum wall times
pair() {
    local ta=() tb=() x y _
    for _ in $(seq "$runs"); do
        rm -rf out cout
        x=$(date +%s.%N); bash -c "$1" > /dev/null; y=$(date +%s.%N)
        ta+=("$(echo "$y - $x" | bc -l)")
        rm -rf out cout
        x=$(date +%s.%N); bash -c "$2" > /dev/null; y=$(date +%s.%N)
        tb+=("$(echo "$y - $x" | bc -l)")
    done
    TA=$(printf '%s\n' "${ta[@]}" | sort -g | head -1)
    TB=$(printf '%s\n' "${tb[@]}" | sort -g | head -1)
}
rate() { echo "scale=0; $bytes / $1 / 1000000" | bc -l; }
ratio() { echo "scale=2; $2 / $1" | bc -l; }
line() {
    printf '%-34s %7s MB/s  %-38s %7s MB/s  %5sx (aim %s)\n' "$1" "$(rate "$2")" "$3" "$(rate "$4")" \
        "$(ratio "$2" "$4")" "$5"
}

seq_dgst=""
seq_curl=""
par_args=""
for f in "${files[@]}"; do
    seq_dgst="$seq_dgst curl -s '$U/$f' | openssl dgst -sha256;"
    seq_curl="$seq_curl curl -s -o 'cout/$f' '$UP/$f';"
    par_args="$par_args -o 'cout/$f' '$U/$f'"
done
dgst_each="for f in cout/*; do openssl dgst -sha256 \"\$f\"; done"

pair "ninfer-verify -q '$U/m.ninfer'" "$seq_dgst"
t_ver=$TA t_dgst=$TB
pair "ninfer-fetch -q --no-sync --jobs 8 '$U/m.ninfer' -o out/m.ninfer" \
    "mkdir -p cout && curl -s --no-progress-meter --parallel --parallel-max 8 $par_args && $dgst_each"
t_fetch=$TA t_par=$TB
pair "ninfer-fetch -q --no-sync --jobs 8 '$UP/m.ninfer' -o out/m.ninfer" "mkdir -p cout && $seq_curl"
t_capf=$TA t_capc=$TB
rss=$( { /usr/bin/time -f %M ninfer-verify -q "$U/m.ninfer" > /dev/null; } 2>&1 | tail -1)
read -r b1 t1 s1 < <(cpu)
o1=$(ours)

dt=$((t1 - t0)) others=$((b1 - b0 - (o1 - o0))) steal=$((s1 - s0))
[ "$others" -lt 0 ] && others=0
op=$(echo "scale=1; 100 * $others / $dt" | bc -l)
sp=$(echo "scale=1; 100 * $steal / $dt" | bc -l)
quiet=yes
[ "$(echo "$others * 100 <= 3 * $dt && $steal * 100 <= $dt" | bc -l)" = 1 ] || quiet=no
limit=$((64 * 1024 + json_bytes / 1024))

echo
echo "bench-remote: $bytes bytes in ${#files[@]} files, loopback nginx, $(nproc) CPUs, minimum of $runs runs interleaved with the baseline's, warm cache"
line "ninfer-verify URL" "$t_ver" "curl -s | openssl dgst, file by file" "$t_dgst" "1.0"
line "ninfer-fetch --jobs 8" "$t_fetch" "curl --parallel, then openssl dgst" "$t_par" "0.9"
line "ninfer-fetch --jobs 8 (64 MiB/s each)" "$t_capf" "curl -o, file by file (64 MiB/s)" "$t_capc" "4"
printf '%-34s %7s KiB  (aim <= %s KiB: 64 MiB + the %s-byte catalog)\n' "peak RSS of ninfer-verify URL" \
    "$rss" "$limit" "$json_bytes"
echo "bench-remote: quiet: $quiet (others' CPU $op% of the time, steal $sp%; the gate is 3% and 1%)"
