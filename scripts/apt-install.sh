# Sourced, not run: installing one of Debian's packages on demand, for the scripts that provide a
# test's system dependency (chromium.sh, zookeeper.sh). Written once so that they refuse alike:
# without apt-get, or without root (or passwordless sudo), with one line on stderr saying why.
#
#   apt_install PACKAGE WHAT   install PACKAGE with apt-get; on failure the caller's `die` says that
#                              WHAT is not installed and why it cannot be (or which apt-get step failed)

apt_install() {
    local package=$1 what=$2 sudo=""
    command -v apt-get >/dev/null 2>&1 || die "$what is not installed and apt-get is not available"
    if [[ "$(id -u)" != "0" ]]; then
        command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null || die "$what is not installed and installing it needs root"
        sudo="sudo -n"
    fi
    echo "${0##*/}: installing Debian's $package package" >&2
    $sudo apt-get update -qq >/dev/null 2>&1 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$package" >/dev/null 2>&1 \
        || die "apt-get install $package failed"
}
