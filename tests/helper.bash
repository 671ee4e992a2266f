# helper.bash — shared setup for the ninfer bats suites (`load helper`).
#
# - puts ${NF_BIN:-bin/} and ${NF_TOOLS:-build/tools/} first on PATH, LC_ALL=C;
# - NF_WRAPPER (e.g. "valgrind -q --error-exitcode=99") wraps every ninfer-*
#   command through shell functions exported to child shells;
# - every test runs in its own $BATS_TEST_TMPDIR (the working directory);
# - builds small artifacts from catalog text with nf-mkartifact, so tests can
#   make valid ones with any segmentation and hostile ones (DESIGN section 12);
# - expect_code CODE checks the `--separate-stderr` diagnostics for `: CODE: `.
#
# Needs bats-core >= 1.5 (run -N, --separate-stderr). No python, no jq.

bats_require_minimum_version 1.5.0

REPO="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
NF_BIN="${NF_BIN:-$REPO/bin}"
NF_TOOLS="${NF_TOOLS:-$REPO/build/tools}"
PATH="$NF_BIN:$NF_TOOLS:$PATH"
LC_ALL=C
# ninfer-bench sizes its rotation and peak buffers at 4x the last-level cache
# (1 GiB on a 256 MiB L3): the suites pretend to a 2 MiB one to stay small.
NF_BENCH_LLC_BYTES="${NF_BENCH_LLC_BYTES:-2M}"
# and its 256 MiB floor of the rotation buffer to 8 MiB
NF_BENCH_ROTATE_BYTES="${NF_BENCH_ROTATE_BYTES:-8M}"
export REPO NF_BIN NF_TOOLS PATH LC_ALL NF_BENCH_LLC_BYTES NF_BENCH_ROTATE_BYTES

# The wrapper: ninfer-x → $NF_WRAPPER "$NF_BIN/ninfer-x" "$@". NF_WRAPPER is
# split on blanks on purpose ("valgrind -q --error-exitcode=99").
if [ -n "${NF_WRAPPER:-}" ]; then
    for _nf_cmd in "$NF_BIN"/ninfer-*; do
        [ -x "$_nf_cmd" ] || continue
        _nf_name="${_nf_cmd##*/}"
        eval "$_nf_name() { \$NF_WRAPPER \"\$NF_BIN/$_nf_name\" \"\$@\"; }"
        export -f "$_nf_name"
    done
    unset _nf_cmd _nf_name
    export NF_WRAPPER
fi

# Missing binaries fail every test (a suite that skips when nothing was
# built would pass in a broken CI).
setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    local f
    for f in "$NF_BIN/ninfer-verify" "$NF_BIN/ninfer-cat" "$NF_BIN/ninfer-split" \
        "$NF_TOOLS/nf-mkartifact" "$NF_TOOLS/libfailwrite.so"; do
        if [ ! -e "$f" ]; then
            echo "missing $f: run make, then make build/tools/nf-mkartifact build/tools/nf-mkckpt build/tools/libfailwrite.so" >&2
            return 1
        fi
    done
}

# ---- data ------------------------------------------------------------------

# nf_bytes N FILE — N deterministic pseudo-random bytes (AES-128-CTR of zeros
# under a fixed key: fast, reproducible, no two 16-byte blocks alike).
nf_bytes() {
    head -c "$1" /dev/zero |
        openssl enc -aes-128-ctr -nosalt -K 000102030405060708090a0b0c0d0e0f \
            -iv 00000000000000000000000000000000 > "$2"
}

# nf_sha256 FILE — the hex digest alone.
nf_sha256() {
    sha256sum "$1" | cut -d' ' -f1
}

# nf_size FILE — the length in bytes.
nf_size() {
    stat -c %s "$1"
}

# nf_poke FILE OFFSET HEXBYTE — overwrite one byte in place.
nf_poke() {
    printf "\\x$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# nf_peek FILE OFFSET — one byte as two hex digits.
nf_peek() {
    od -An -tx1 -j "$2" -N1 "$1" | tr -d ' \n'
}

# nf_flip FILE OFFSET — flip the low bit of one byte in place.
nf_flip() {
    local b
    b=$(nf_peek "$1" "$2")
    nf_poke "$1" "$2" "$(printf '%02x' $((0x$b ^ 1)))"
}

# ---- catalogs --------------------------------------------------------------
#
# The standard catalog: a bf16 tensor [2,4] (16 bytes) at offset 0 and a
# resource "r.tok" holding the rest of the NF_P-byte payload, bound and used.
# Tests override one piece through these variables (catalog text verbatim):
#   NF_P           payload bytes (default 1000)
#   NF_COMPONENTS  the "components" value
#   NF_OBJECTS     the "objects" value
#   NF_BINDINGS    the "bindings" value
#   NF_USES        the "uses" value
#   NF_FILES       the "files" value (default: from the segments, see nf_make)
#   NF_EXTRA       extra root members, text starting with ", " (default none)

nf_default_components() {
    echo '{"text": {"config": {"architectures": ["TestForCausalLM"], "model_type": "test"}, "resources": {"tokenizer.json": "r.tok"}}}'
}

nf_default_objects() {
    local p=${NF_P:-1000}
    echo "[$(nf_tensor w.a "[2, 4]" 0 16), $(nf_resource r.tok 16 $((p - 16)))]"
}

# nf_tensor ID SHAPE OFFSET BYTES [FORMAT [LAYOUT]] — one tensor object's text
# (every value verbatim, so hostile numbers such as 1e3 go straight in).
nf_tensor() {
    printf '{"id": "%s", "kind": "tensor", "shape": %s, "format": "%s", "layout": "%s", "offset": %s, "bytes": %s}' \
        "$1" "$2" "${5:-bf16}" "${6:-contiguous_le_v1}" "$3" "$4"
}

# nf_resource ID OFFSET BYTES [ENCODING] — one resource object's text.
nf_resource() {
    printf '{"id": "%s", "kind": "resource", "encoding": "%s", "offset": %s, "bytes": %s}' \
        "$1" "${4:-raw_bytes_v1}" "$2" "$3"
}

nf_default_bindings() {
    echo '{"text/a": {"object": "w.a"}}'
}

nf_default_uses() {
    echo '[{"parameter": "text/a", "input": "text/a_input", "activation_policy": "A16Only"}]'
}

# nf_files ENTRY B0 [B1...] — a files table: null for the entry, then
# ENTRY.part-000i (spec 2.1 names).
nf_files() {
    local entry=$1 i=0 b out='['
    shift
    for b in "$@"; do
        if [ "$i" -eq 0 ]; then
            out="$out{\"path\": null, \"payload_bytes\": $b}"
        else
            out="$out, {\"path\": \"$(basename "$entry").part-$(printf '%04d' "$i")\", \"payload_bytes\": $b}"
        fi
        i=$((i + 1))
    done
    echo "$out]"
}

# nf_catalog — print the catalog built from the variables above (NF_FILES
# must be set, or it defaults to one file holding NF_P bytes).
nf_catalog() {
    local p=${NF_P:-1000}
    printf '{"components": %s,\n "objects": %s,\n "bindings": %s,\n "uses": %s,\n "files": %s%s}\n' \
        "${NF_COMPONENTS:-$(nf_default_components)}" \
        "${NF_OBJECTS:-$(nf_default_objects)}" \
        "${NF_BINDINGS:-$(nf_default_bindings)}" \
        "${NF_USES:-$(nf_default_uses)}" \
        "${NF_FILES:-[{\"path\": null, \"payload_bytes\": $p\}]}" \
        "${NF_EXTRA:-}"
}

# nf_payload — the deterministic payload file of NF_P bytes (made once per
# test and size); prints its path.
nf_payload() {
    local p=${NF_P:-1000} f
    f="$BATS_TEST_TMPDIR/payload-$p.bin"
    [ -f "$f" ] || nf_bytes "$p" "$f"
    echo "$f"
}

# nf_make ENTRY [B0 B1 ...] [-- EXTRA nf-mkartifact OPTIONS] — frame an
# artifact from nf_catalog and the deterministic payload, cut into the given
# segments (default one). The catalog text is kept in ENTRY.json.
nf_make() {
    local entry=$1 segs=() opts=() seglist
    shift
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        segs+=("$1")
        shift
    done
    [ $# -gt 0 ] && shift
    opts=("$@")
    [ ${#segs[@]} -gt 0 ] || segs=("${NF_P:-1000}")
    seglist=$(IFS=,; echo "${segs[*]}")
    if [ -z "${NF_FILES:-}" ]; then
        NF_FILES=$(nf_files "$entry" "${segs[@]}") nf_catalog > "$entry.json"
    else
        nf_catalog > "$entry.json"
    fi
    nf-mkartifact --catalog "$entry.json" --payload "$(nf_payload)" \
        --segments "$seglist" "${opts[@]}" -o "$entry"
}

# nf_make_catalog ENTRY CATALOG_TEXT [nf-mkartifact OPTIONS] — frame exactly
# this catalog text (for JSON-level cases) with the default payload in one file.
nf_make_catalog() {
    local entry=$1 text=$2
    shift 2
    printf '%s' "$text" > "$entry.json"
    nf-mkartifact --catalog "$entry.json" --payload "$(nf_payload)" "$@" -o "$entry"
}

# ---- assertions ------------------------------------------------------------

# expect_code CODE — some diagnostic on $stderr (from run --separate-stderr)
# carries the code CODE (": CODE: ").
expect_code() {
    if ! grep -qF -- ": $1: " <<< "$stderr"; then
        echo "expected a diagnostic with code '$1'; stderr was:" >&2
        echo "$stderr" >&2
        return 1
    fi
}

# expect_only_codes CODE... — every diagnostic line on $stderr carries one of
# these codes, and at least one line exists. Warnings are not diagnostics.
expect_only_codes() {
    local line code ok n=0
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        n=$((n + 1))
        ok=0
        for code in "$@"; do
            case "$line" in *": $code: "*) ok=1 ;; esac
        done
        if [ "$ok" -eq 0 ]; then
            echo "unexpected diagnostic (wanted only: $*): $line" >&2
            echo "full stderr:" >&2
            echo "$stderr" >&2
            return 1
        fi
    done <<< "$stderr"
    if [ "$n" -eq 0 ]; then
        echo "expected diagnostics ($*), stderr was empty" >&2
        return 1
    fi
}

# expect_no_code CODE — no diagnostic on $stderr carries CODE.
expect_no_code() {
    if grep -qF -- ": $1: " <<< "$stderr"; then
        echo "unexpected diagnostic with code '$1':" >&2
        echo "$stderr" >&2
        return 1
    fi
}

# json_field NAME — the first scalar value of "NAME" in the JSON $output
# (numbers and strings; strings without quotes). Enough for our flat records.
json_field() {
    grep -o "\"$1\": *\(\"[^\"]*\"\|[^,}]*\)" <<< "$output" | head -n1 |
        sed "s/^\"$1\": *//; s/^\"//; s/\"\$//"
}

# no_temporaries DIR — no writer temporaries (.*.tmp-*) left in DIR (a DIR
# that is gone holds none: a failed writer removes the directories it made).
no_temporaries() {
    local left
    [ -e "${1:-.}" ] || return 0
    left=$(find "${1:-.}" -maxdepth 1 -name '.*tmp*' -print)
    if [ -n "$left" ]; then
        echo "temporaries left behind:" >&2
        echo "$left" >&2
        return 1
    fi
}


# nf_verify_fails STATUS ARTIFACT CODE... — ninfer-verify ARTIFACT exits with
# exactly STATUS, names the first CODE, and names no code outside the list.
nf_verify_fails() {
    local want=$1 art=$2
    shift 2
    run -"$want" --separate-stderr ninfer-verify "$art"
    expect_code "$1"
    expect_only_codes "$@"
}

# nf_make_sed ENTRY SED_EXPR... — frame the standard catalog (one file)
# edited by sed, for JSON-level cases; fails when sed changed nothing.
nf_make_sed() {
    local entry=$1 text good
    shift
    good=$(nf_catalog)
    text=$(sed "$@" <<< "$good")
    if [ "$text" = "$good" ]; then
        echo "nf_make_sed: '$*' did not change the catalog" >&2
        return 1
    fi
    nf_make_catalog "$entry" "$text"
}

# nf_failwrite AFTER ERRNO CMD... — run CMD with the write-failure shim: writes
# to regular files fail with ERRNO once AFTER bytes are written.
# need_shim — skip the test under the sanitizers: ASan must come first in
# LD_PRELOAD, so the write shim cannot ride along with a sanitized binary
# (the plain `make test` covers these paths). Call it at the top of a test:
# a skip inside `run` would only end run's subshell.
need_shim() {
    [ -z "${NF_SANITIZE:-}" ] || skip "the LD_PRELOAD write shim cannot run under the sanitizers"
}

nf_failwrite() {
    local after=$1 err=$2
    shift 2
    LD_PRELOAD="$NF_TOOLS/libfailwrite.so" NF_FAIL_AFTER="$after" NF_FAIL_ERRNO="$err" "$@"
}

# ---- what changed in a directory (issue 11: "nothing else changed") ---------

# nf_snapshot [DIR] — one line per entry under DIR (recursive, sorted): its
# type and, for regular files, the SHA-256; symlink targets; device numbers.
# Never opens a FIFO or a device. Leaves out bats' own files (the
# separate-stderr-* of `run --separate-stderr`) and the stall_* helpers'.
nf_snapshot() {
    local d=${1:-.} f
    (
        cd "$d" || exit 1
        find . -mindepth 1 ! -name 'separate-stderr-*' ! -name 'stall.*' | LC_ALL=C sort |
        while IFS= read -r f; do
            if [ -L "$f" ]; then
                echo "l $f -> $(readlink "$f")"
            elif [ -f "$f" ]; then
                echo "f $f $(sha256sum < "$f" | cut -d' ' -f1)"
            elif [ -d "$f" ]; then
                echo "d $f"
            elif [ -p "$f" ]; then
                echo "p $f"
            elif [ -c "$f" ] || [ -b "$f" ]; then
                echo "$(stat -c '%F %t:%T' "$f" | tr ' ' _) $f"
            else
                echo "? $f"
            fi
        done
    )
}

# expect_unchanged SNAPSHOT [DIR] — DIR's snapshot is still SNAPSHOT.
expect_unchanged() {
    local now
    now=$(nf_snapshot "${2:-.}")
    if [ "$now" != "$1" ]; then
        echo "the directory changed:" >&2
        diff <(echo "$1") <(echo "$now") >&2
        return 1
    fi
}

# nf_mknod_null NAME — a character device like /dev/null (1, 3) at NAME in
# the test's directory, or skip when this user may not make one.
nf_mknod_null() {
    mknod "$1" c 1 3 2> /dev/null || skip "mknod is not permitted here (not root, or a nodev mount)"
}

# ---- holding a program at a known point (issue 12: no race with the clock) --

# need_sigat — skip under the sanitizers (the LD_PRELOAD shim cannot ride
# along with ASan).
need_sigat() {
    [ -z "${NF_SANITIZE:-}" ] || skip "the LD_PRELOAD signal shim cannot run under the sanitizers"
    [ -z "${NF_WRAPPER:-}" ] || skip "the LD_PRELOAD signal shim does not go through NF_WRAPPER"
}

# nf_sigat WHAT:N SIG CMD... — run CMD with the signal shim: SIG is sent to
# the process at an exact point of its I/O (tests/shim/sigat.c).
nf_sigat() {
    local at=$1 sig=$2
    shift 2
    LD_PRELOAD="$NF_TOOLS/libsigat.so" NF_SIG_AT="$at" NF_SIG="$sig" "$@"
}

# wait_until DESCRIPTION COMMAND... — poll until COMMAND succeeds: for a
# state the program under test must reach (not a timer it must beat); fails
# after 60 s, which only a broken program takes.
wait_until() {
    local what=$1 i
    shift
    for i in $(seq 1200); do
        "$@" && return 0
        sleep 0.05
    done
    echo "timed out waiting until $what" >&2
    return 1
}

# stall_start STREAM BYTES CMD... — run CMD in the background with a FIFO on
# its standard input (its own process group, stdout to stall.out, stderr to
# stall.err), and feed it the first BYTES of the file STREAM; the rest
# waits for stall_finish, so CMD blocks at a known point. Sets STALL_PID.
stall_start() {
    local stream=$1 bytes=$2
    shift 2
    rm -f stall.fifo
    mkfifo stall.fifo
    set -m
    "$@" < stall.fifo > stall.out 2> stall.err 3>&- &
    STALL_PID=$!
    set +m
    exec 8> stall.fifo
    head -c "$bytes" "$stream" >&8
    STALL_STREAM=$stream
    STALL_FED=$bytes
}

# stall_finish — feed the rest of the stream, close it, wait for CMD: sets
# STALL_STATUS and prints CMD's stderr.
stall_finish() {
    tail -c +$((STALL_FED + 1)) "$STALL_STREAM" >&8 2> /dev/null || true
    exec 8>&-
    STALL_STATUS=0
    wait "$STALL_PID" || STALL_STATUS=$?
    cat stall.err
}

# stall_signal SIG — send SIG to the stalled job's process group, close the
# stream and wait: sets STALL_STATUS.
stall_signal() {
    kill -s "$1" -- "-$STALL_PID" 2> /dev/null || true
    exec 8>&-
    STALL_STATUS=0
    wait "$STALL_PID" || STALL_STATUS=$?
    local i
    for i in $(seq 200); do
        kill -0 -- "-$STALL_PID" 2> /dev/null || break
        sleep 0.05
    done
    cat stall.err
}

# temps_in DIR [N] — DIR holds at least N (default 1) writer temporaries.
temps_in() {
    [ "$(find "$1" -maxdepth 1 -name '.*.tmp-*' 2> /dev/null | wc -l)" -ge "${2:-1}" ]
}

# is_stopped PID — the process is stopped (SIGSTOP from the shim).
is_stopped() {
    [ "$(awk '{ print $3 }' "/proc/$1/stat" 2> /dev/null)" = T ]
}
