#!/usr/bin/env bash
# Headless Chromium for the test that renders `isrcheck report`'s HTML page (tests/cli/test_report_browser.py).
#
#   scripts/chromium.sh install     install Debian's `chromium` package if no browser is installed
#   scripts/chromium.sh path        the same, then print the browser's path on stdout
#
# Exit status: 0 on success, 1 on failure with one line on stderr saying why, 2 on bad usage.
set -euo pipefail

die() { echo "chromium.sh: $*" >&2; exit 1; }
# shellcheck source=scripts/apt-install.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"

find_browser() {  # the first of Debian's and Ubuntu's names that is on the PATH
    local name
    for name in chromium chromium-browser; do
        if command -v "$name" >/dev/null 2>&1; then
            command -v "$name"
            return 0
        fi
    done
    return 1
}

install_chromium() {
    if find_browser >/dev/null; then
        return 0
    fi
    apt_install chromium Chromium
    find_browser >/dev/null || die "the chromium package did not put a browser on the PATH"
}

case "${1:-}" in
    install) install_chromium ;;
    path) install_chromium; find_browser ;;
    *) echo "usage: scripts/chromium.sh install|path" >&2; exit 2 ;;
esac
