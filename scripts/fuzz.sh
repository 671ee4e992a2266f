#!/usr/bin/env bash
# fuzz.sh [SECONDS] [HARNESS...] — build the libFuzzer harnesses (`make fuzz`)
# and run each for SECONDS (default 60), one after the other, at low
# priority. HARNESS names (reader, catalog, safetensors, gguf) pick a subset.
#
# Seeds come from tests/fuzz/corpus/<name>/ (read only); what the fuzzer
# learns goes to build/fuzz/corpus/<name>/ and is kept between runs. A new
# crash, leak, timeout or out-of-memory input is written to
# tests/fuzz/crashes/<name>-<kind>-<sha1> — commit it with its fix: the unit
# test t_regress replays every file there.
#
# Environment: FUZZ_ARGS, extra libFuzzer options. One fuzzer runs at a
# time (others may be building). Do not rebuild (make fuzz) while a harness
# runs. Exit status: 0 when no harness found a problem, 1 otherwise (the
# others still run).
set -u
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
case "$secs" in
'' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] [HARNESS...]" >&2; exit 2 ;;
esac

make -s fuzz || exit 3

if [ $# -gt 0 ]; then
    names=("$@")
else
    names=()
    for f in build/fuzz/fuzz_*; do
        [ -x "$f" ] && [ "${f%.d}" = "$f" ] || continue
        names+=("${f##*/fuzz_}")
    done
fi

max_len() {
    case "$1" in
    reader) echo 32768 ;;
    catalog) echo 16384 ;;
    *) echo 16384 ;;
    esac
}

mkdir -p tests/fuzz/crashes
status=0
for n in "${names[@]}"; do
    bin=build/fuzz/fuzz_$n
    if [ ! -x "$bin" ]; then
        echo "fuzz.sh: no harness $bin" >&2
        status=1
        continue
    fi
    work=build/fuzz/corpus/$n
    mkdir -p "$work"
    seeds=()
    [ -d "tests/fuzz/corpus/$n" ] && seeds=("tests/fuzz/corpus/$n")
    echo "fuzz.sh: $n for ${secs}s"
    # shellcheck disable=SC2086
    nice -n 15 "$bin" "$work" "${seeds[@]}" \
        -max_total_time="$secs" -max_len="$(max_len "$n")" -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix="tests/fuzz/crashes/$n-" -print_final_stats=1 \
        ${FUZZ_ARGS:-} \
        > "build/fuzz/$n.log" 2>&1
    rc=$?
    tail -n 12 "build/fuzz/$n.log" | grep -E 'stat::|ERROR|SUMMARY|Test unit written' || true
    if [ $rc -ne 0 ]; then
        echo "fuzz.sh: $n found a problem (exit $rc); see build/fuzz/$n.log" >&2
        status=1
    fi
done
exit $status
