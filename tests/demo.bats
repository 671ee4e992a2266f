#!/usr/bin/env bats
# make demo prints every command it runs as it can be pasted into a shell
# (issue 17): this suite runs scripts/demo.sh, takes the printed commands
# ("$ ..." and their continuation lines), pastes them in order into one
# bash in a fresh directory (the printed `cd` aside: it would go to the
# demo's own files), and checks that each prints what the demo showed
# under it. ninfer-run's timings are the only numbers that may differ.

load helper

# split_transcript FILE DIR — cut a demo transcript into DIR/cmd.N (the
# command text) and DIR/out.N (what the demo printed under it), N from 1.
split_transcript() {
    awk -v dir="$2" '
        function flush() {
            if (n && n != done) { printf "%s", outbuf > (dir "/out." n); close(dir "/out." n); done = n }
            outbuf = ""
        }
        cont { printf "%s\n", $0 > (dir "/cmd." n); cont = /\\$/; if (!cont) close(dir "/cmd." n); next }
        /^\$ / { flush(); n++; printf "%s\n", substr($0, 3) > (dir "/cmd." n); cont = /\\$/; if (!cont) close(dir "/cmd." n); next }
        /^== / { flush(); n_hdr++; next }
        { outbuf = outbuf $0 "\n" }
        END { flush(); print n }
    ' "$1"
}

# the blank line each step title brings is the title's, not the output's
trim() {
    sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' "$1"
}

@test "every command make demo prints, pasted into a shell in a fresh directory, prints what the demo showed" {
    NF_BIN="$NF_BIN" NF_TOOLS="$NF_TOOLS" NF_DEMO_DIR="$BATS_TEST_TMPDIR/demo" \
        "$REPO/scripts/demo.sh" > transcript 2>&1
    grep -qxF "\$ cd $BATS_TEST_TMPDIR/demo" transcript
    [ "$(grep -c '^\$ export PATH=' transcript)" -eq 1 ]
    mkdir t replay
    local n k
    n=$(split_transcript transcript t)
    [ "$n" -gt 20 ]
    # one script: a marker, then each printed command as printed
    for k in $(seq 1 "$n"); do
        echo "echo '@@@ $k'"
        if grep -q '^cd ' "t/cmd.$k"; then
            echo "cd '$BATS_TEST_TMPDIR/replay'"
        else
            cat "t/cmd.$k"
        fi
    done > replay.sh
    (cd replay && env -i HOME="$HOME" PATH=/usr/bin:/bin LC_ALL=C bash ../replay.sh > ../got 2>&1) || true
    awk -v dir=t '/^@@@ / { if (k) close(dir "/got." k); k = $2; printf "" > (dir "/got." k); next }
                  { print > (dir "/got." k) }' got
    local bad=0
    for k in $(seq 1 "$n"); do
        local want have
        want=$(trim "t/out.$k")
        have=$(trim "t/got.$k")
        if grep -q '^ninfer-run ' "t/cmd.$k"; then
            want=$(sed 's/[0-9][0-9.e+-]*/N/g; s/  */ /g' <<< "$want")
            have=$(sed 's/[0-9][0-9.e+-]*/N/g; s/  */ /g' <<< "$have")
        fi
        if [ "$want" != "$have" ]; then
            echo "command $k differs: $(head -1 "t/cmd.$k")" >&2
            diff <(echo "$want") <(echo "$have") >&2 || true
            bad=1
        fi
    done
    [ "$bad" -eq 0 ]
    # and the replay made the demo's files, byte for byte
    cmp demo/model.ninfer replay/model.ninfer
    cmp demo/shards/SHA256SUMS replay/shards/SHA256SUMS
}
