#!/usr/bin/env bash
# Make sure Java 17 or later is installed (Spark 4, used by `isrcheck spark ...`, needs it).
#
# Checks `$JAVA_HOME/bin/java` or the `java` on PATH; if it is missing or older than 17, installs
# Debian's openjdk-17-jre-headless with apt-get (as root, or through sudo). Idempotent: prints the
# version found and exits 0 when Java is already good enough. Exit status 1 when Java cannot be
# provided (not Debian/Ubuntu, no root, or the package is unavailable).
set -euo pipefail

MIN=17

java_bin() {
    if [ -n "${JAVA_HOME:-}" ] && [ -x "${JAVA_HOME}/bin/java" ]; then
        echo "${JAVA_HOME}/bin/java"
    else
        command -v java 2>/dev/null || true
    fi
}

java_major() {  # prints the major version of $1, or nothing
    local out
    out=$("$1" -version 2>&1 | head -n 1) || return 0
    # 'openjdk version "17.0.15" 2025-04-15' or 'java version "1.8.0_392"'
    echo "$out" | sed -n 's/.*version "\([0-9][0-9]*\)\(\.\([0-9][0-9]*\)\)\{0,1\}.*/\1 \3/p' |
        awk '{ if ($1 == 1) print $2; else print $1 }'
}

check() {
    local bin major
    bin=$(java_bin)
    [ -n "$bin" ] || return 1
    major=$(java_major "$bin")
    [ -n "$major" ] || return 1
    if [ "$major" -ge "$MIN" ]; then
        echo "java: $("$bin" -version 2>&1 | head -n 1) ($bin)"
        return 0
    fi
    echo "java: $bin is Java $major; Spark needs $MIN or later" >&2
    return 1
}

if check; then
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: Java $MIN+ is needed and apt-get is not available; install a JDK/JRE $MIN+ and set JAVA_HOME" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "error: Java $MIN+ is needed; run as root (or with sudo): apt-get install openjdk-17-jre-headless" >&2
        exit 1
    fi
fi
echo "installing openjdk-17-jre-headless with apt-get ..."
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless >/dev/null
hash -r
if check; then
    exit 0
fi
# The Debian package installs under /usr/lib/jvm; use it even if another java comes first on PATH.
for d in /usr/lib/jvm/java-17-openjdk-*; do
    if [ -x "$d/bin/java" ]; then
        echo "java: installed in $d (set JAVA_HOME=$d if another java comes first on PATH)"
        exit 0
    fi
done
echo "error: installing openjdk-17-jre-headless did not provide Java $MIN+" >&2
exit 1
