#!/usr/bin/env bash
# run-tests.sh UNIT_BINARY... -- BATS_FILE...
# Runs the C unit tests (TAP on stdout) and the bats suites (bats --tap),
# shows every TAP line, and ends with "N passed, N failed[, N skipped]".
# Exit status 0 only when nothing failed (and every runner exited cleanly).
set -u
units=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do units+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
suites=("$@")

pass=0 fail=0 skip=0 broken=0
tally() { # reads TAP from stdin, echoes it, counts
    local line
    while IFS= read -r line; do
        printf '%s\n' "$line"
        case "$line" in
            "ok "*"# skip"*|"ok "*"# SKIP"*) skip=$((skip + 1)) ;;
            "ok "*) pass=$((pass + 1)) ;;
            "not ok "*) fail=$((fail + 1)) ;;
        esac
    done
}

for u in "${units[@]}"; do
    echo "# unit: $(basename "$u")"
    out=$(mktemp)
    ${NF_TEST_WRAPPER:-} "$u" >"$out" 2>&1
    rc=$?
    tally <"$out"
    if [ $rc -ne 0 ] && ! grep -q '^not ok' "$out"; then
        echo "not ok - $(basename "$u") exited with status $rc"
        fail=$((fail + 1))
    fi
    rm -f "$out"
done

if [ ${#suites[@]} -gt 0 ]; then
    if ! command -v bats >/dev/null 2>&1; then
        echo "not ok - bats is not installed: run scripts/install-deps.sh"
        fail=$((fail + 1))
    else
        jobs_opt=()
        out=$(mktemp)
        bats --tap "${suites[@]}" >"$out" 2>&1
        rc=$?
        tally <"$out"
        if [ $rc -ne 0 ] && ! grep -q '^not ok' "$out"; then
            echo "not ok - bats exited with status $rc"
            fail=$((fail + 1))
        fi
        rm -f "$out"
    fi
fi

if [ $skip -gt 0 ]; then
    echo "$pass passed, $fail failed, $skip skipped"
else
    echo "$pass passed, $fail failed"
fi
[ $fail -eq 0 ]
