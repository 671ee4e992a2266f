#!/bin/sh
# install-deps.sh — install the Debian packages ninfer needs to build and test.
#   scripts/install-deps.sh                 install what is missing (root or sudo)
#   scripts/install-deps.sh --check         exit 1 listing the build packages
#       that are missing and the command that installs them (what `make`
#       runs: building never installs, and needs no test tools)
#   scripts/install-deps.sh --check-or-install
#       what `make test`, `make demo` and `make fuzz` run: nothing to do when
#       all is there; else install when we are root or sudo works without a
#       password; else stop with the exact command to run.
set -u
# what building needs; what the tests need besides (bats, the zstd and
# openssl commands, /usr/bin/time; nginx, which the HTTP suites start on a
# loopback port of their own, and curl; mandoc, which lints every man page;
# the system nginx the package may start is never used)
BUILD_PKGS="build-essential pkg-config libjson-c-dev libzstd-dev libssl-dev libcurl4-openssl-dev"
TEST_PKGS="bats zstd openssl time nginx-light curl mandoc"
mode=${1:-install}
# `make` (--check) builds only: it asks for the build packages alone
if [ "$mode" = --check ]; then PKGS=$BUILD_PKGS; else PKGS="$BUILD_PKGS $TEST_PKGS"; fi

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done
# Outside Debian (no dpkg), trust the compiler: probe the headers instead.
if ! command -v dpkg-query >/dev/null 2>&1; then
    missing=""
    for h in json-c/json.h zstd.h openssl/evp.h curl/curl.h; do
        printf '#include <%s>\n' "$h" | ${CC:-cc} -E -x c - >/dev/null 2>&1 || missing="$missing $h"
    done
    [ "$mode" = --check ] || command -v bats >/dev/null 2>&1 || missing="$missing bats"
    if [ -n "$missing" ]; then
        echo "ninfer: missing:$missing (install json-c, zstd, OpenSSL, libcurl and bats-core development packages)" >&2
        exit 1
    fi
    exit 0
fi

[ -z "$missing" ] && exit 0
case "$mode" in
--check)
    echo "ninfer: missing Debian packages:$missing" >&2
    echo "ninfer: run: sudo apt-get update && sudo apt-get install -y$missing" >&2
    echo "ninfer: (or scripts/install-deps.sh; make test and make demo install them too)" >&2
    exit 1 ;;
esac

if [ "$(id -u)" = 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
else
    echo "ninfer: missing Debian packages:$missing" >&2
    echo "ninfer: run: sudo apt-get update && sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "ninfer: installing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2 || exit 1
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >&2 || {
    echo "ninfer: apt-get install failed; run: sudo apt-get install -y$missing" >&2
    exit 1
}
