#!/usr/bin/env bash
# Debian's chromium for the browser test (tests/web): installed with apt when missing (CI runs
# as root). playwright-core drives it; a test tool's own browser download is not used.
set -euo pipefail
CHROMIUM=${OFC_CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "ensure_chromium.sh: $CHROMIUM is missing; install Debian's chromium (apt-get install chromium) as root" >&2
    exit 1
fi
echo "installing chromium with apt-get"
# Wait for another apt run on the same machine rather than fail on its lock.
apt-get -o DPkg::Lock::Timeout=600 update -qq
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium >/dev/null
[ -x "$CHROMIUM" ] || { echo "ensure_chromium.sh: apt-get installed chromium but $CHROMIUM is not there" >&2; exit 1; }
