#!/usr/bin/env bash
# bench-io.sh [SIZE_MIB] — I/O throughput of the container tools against the
# system tools on the same bytes, measured in the same run (warm page cache
# for both sides; 5 runs of each, alternating with the baseline's, medians):
#   ninfer-split (file → parts)   vs  cp         (and cp + sync vs the default,
#                                                  which fdatasyncs before publishing)
#   ninfer-cat (→ /dev/null)      vs  cat
#   ninfer-verify (object digests) vs sha256sum
# Prints MB/s and the ratio ninfer/baseline.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BIN=${NF_BIN:-$here/bin}
size_mib=${1:-1536}
work=${NF_BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/nf-bench.XXXXXX")}
trap 'rm -rf "$work"' EXIT
cd "$work"

echo "bench-io: building a ${size_mib} MiB artifact in $work"
nobj=6
per=$(( size_mib * 1048576 / nobj ))
head -c $(( per * nobj )) /dev/zero |
    openssl enc -aes-128-ctr -nosalt -K 000102030405060708090a0b0c0d0e0f -iv 00000000000000000000000000000000 > payload.bin
{
    printf '{"components":{"text":{"config":{}}},"objects":['
    for i in $(seq 0 $((nobj - 1))); do
        [ "$i" -gt 0 ] && printf ','
        printf '{"id":"blob%d","kind":"resource","encoding":"raw_bytes_v1","bytes":%d,"source":{"file":"payload.bin","offset":%d}}' \
            "$i" "$per" $(( i * per ))
    done
    printf '],"bindings":{},"uses":[]}\n'
} > manifest.json
"$BIN/ninfer-pack" -q --no-sync -o big.ninfer manifest.json
bytes=$(stat -c %s big.ninfer)
cat big.ninfer > /dev/null # warm the cache

# pair PREP_A A PREP_B B — run A and B alternately 5 times each (PREP_x
# untimed before each run), so that load on the machine falls on both
# alike; sets TA and TB to the median wall times in seconds.
pair() {
    local ta=() tb=() t0 t1 _
    for _ in 1 2 3 4 5; do
        sh -c "$1"
        t0=$(date +%s.%N); sh -c "$2" > /dev/null; t1=$(date +%s.%N)
        ta+=("$(echo "$t1 - $t0" | bc -l)")
        sh -c "$3"
        t0=$(date +%s.%N); sh -c "$4" > /dev/null; t1=$(date +%s.%N)
        tb+=("$(echo "$t1 - $t0" | bc -l)")
    done
    TA=$(printf '%s\n' "${ta[@]}" | sort -g | sed -n 3p)
    TB=$(printf '%s\n' "${tb[@]}" | sort -g | sed -n 3p)
}
rate() { echo "scale=0; $bytes / $1 / 1000000" | bc -l; }
ratio() { echo "scale=2; $2 / $1" | bc -l; }
line() { printf '%-44s %8s MB/s   %-22s %8s MB/s   ratio %s\n' "$1" "$(rate "$2")" "$3" "$(rate "$4")" "$(ratio "$2" "$4")"; }

S="$BIN/ninfer-split -q --max-file-bytes 512M -o sp/big.ninfer big.ninfer"
pair 'rm -rf sp cp.out; sync' "$S --no-sync" 'rm -rf sp cp.out; sync' 'cp big.ninfer cp.out'
t_split=$TA t_cp=$TB
pair 'rm -rf sp cp.out; sync' "$S" 'rm -rf sp cp.out; sync' 'cp big.ninfer cp.out && sync cp.out'
t_splits=$TA t_cps=$TB
"$BIN/ninfer-split" -q --no-sync --max-file-bytes 512M -o sp/big.ninfer big.ninfer
pair : "$BIN/ninfer-cat sp/big.ninfer > /dev/null" : 'cat big.ninfer > /dev/null'
t_ncat=$TA t_cat=$TB
pair : "$BIN/ninfer-cat sp/big.ninfer | cat > /dev/null" : 'cat big.ninfer | cat > /dev/null'
t_ncatp=$TA t_catp=$TB
pair : "$BIN/ninfer-verify -q big.ninfer" : 'sha256sum big.ninfer'
t_ver=$TA t_sha=$TB
pair : "$BIN/ninfer-verify -q --threads 1 big.ninfer" : 'sha256sum big.ninfer'
t_ver1=$TA

echo
echo "bench-io: $bytes bytes, $(nproc) CPUs, median of 5 runs interleaved with the baseline's, warm cache"
line "ninfer-split --no-sync (file → parts)" "$t_split" "cp" "$t_cp"
line "ninfer-split (fdatasync, default)" "$t_splits" "cp && sync" "$t_cps"
line "ninfer-cat parts → /dev/null" "$t_ncat" "cat → /dev/null" "$t_cat"
line "ninfer-cat parts | cat → /dev/null" "$t_ncatp" "cat | cat → /dev/null" "$t_catp"
line "ninfer-verify (digests, all CPUs)" "$t_ver" "sha256sum" "$t_sha"
line "ninfer-verify --threads 1" "$t_ver1" "sha256sum" "$t_sha"
