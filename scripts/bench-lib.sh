# bench-lib.sh — sourced by scripts/bench-kernels.sh and bench-quant.sh: the
# quiet gate and the BASE build they share (bash).
#
# stat_now -> "total busy steal self" in clock ticks, from /proc/stat and
# this shell's /proc/$$/stat (self: the shell and the children it waited for)
stat_now() {
    local cpu user nice sys idle iow irq sirq steal rest s
    read -r cpu user nice sys idle iow irq sirq steal rest < /proc/stat
    s=$(sed 's/^.*) //' "/proc/$$/stat" | awk '{ print $12 + $13 + $14 + $15 }')
    echo "$((user + nice + sys + idle + iow + irq + sirq + steal)) $((user + nice + sys + irq + sirq + steal)) $steal $s"
}

# quiet_between "A" "B" -> "others% steal% verdict": the CPU time others
# spent between the two snapshots over all the time elapsed on all CPUs
# (<= 3% is quiet), steal over it (<= 1%)
quiet_between() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        split(a, x, " "); split(b, y, " ")
        t = y[1] - x[1]; if (t <= 0) { print "0.0 0.0 unknown"; exit }
        o = 100 * ((y[2] - x[2]) - (y[4] - x[4])) / t; s = 100 * (y[3] - x[3]) / t
        printf "%.1f %.1f %s\n", o, s, (o <= 3 && s <= 1) ? "quiet" : "NOT-quiet" }'
}

# quiet_wait SECONDS NAME — wait up to SECONDS for a quiet 2 s window
quiet_wait() {
    local waited=0 a b o s v
    [ "${1:-0}" -gt 0 ] || return 0
    while :; do
        a=$(stat_now); sleep 2; b=$(stat_now)
        read -r o s v <<< "$(quiet_between "$a" "$b")"
        [ "$v" = quiet ] && return 0
        waited=$((waited + 2))
        if [ "$waited" -ge "$1" ]; then
            echo "# $2: no quiet window in ${1}s (others ${o}%, steal ${s}%); running anyway" >&2
            return 0
        fi
    done
}

# base_bin BASE TMP NAME TOOL — the directory of an older build's commands:
# BASE itself (or BASE/bin) when it holds TOOL, else BASE as a git revision
# of the repository built in TMP/base (make bin/TOOL ...). Prints the directory.
base_bin() {
    local base=$1 tmp=$2 name=$3 rev
    shift 3
    if [ -x "$base/$1" ]; then
        echo "$base"
    elif [ -x "$base/bin/$1" ]; then
        echo "$base/bin"
    else
        rev=$(git -C "$here" rev-parse --verify "$base^{commit}" 2> /dev/null) ||
            { echo "$name: BASE=$base is neither a directory with $1 nor a revision" >&2; return 2; }
        echo "# $name: building BASE $rev in $tmp/base" >&2
        mkdir -p "$tmp/base"
        git -C "$here" archive "$rev" | tar -x -C "$tmp/base"
        local t targets=()
        for t in "$@"; do targets+=("bin/$t"); done
        make -C "$tmp/base" -j"$(nproc)" CUDA=0 "${targets[@]}" > "$tmp/base.log" 2>&1 ||
            { tail -20 "$tmp/base.log" >&2; return 3; }
        echo "$tmp/base/bin"
    fi
}
