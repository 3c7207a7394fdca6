#!/usr/bin/env bash
# Make sure headless Firefox (Debian's firefox-esr) is installed: the snapshot file is
# checked in it as well as in Chromium (tests/visualizer/snapshot/test_snapshot_firefox.py).
# It is driven through Marionette (marionette-driver, a test dependency): no geckodriver.
# Idempotent: returns at once when Firefox is already on PATH.
set -euo pipefail

if command -v firefox-esr >/dev/null 2>&1 || command -v firefox >/dev/null 2>&1; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "ensure_firefox: firefox-esr missing and not root; run:" >&2
    echo "  sudo apt-get install -y firefox-esr" >&2
    exit 1
fi

echo "ensure_firefox: installing firefox-esr with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends firefox-esr >/dev/null

# A package that installs but does not provide the command is a real failure.
command -v firefox-esr >/dev/null
echo "ensure_firefox: $(firefox-esr --version 2>/dev/null)" >&2
