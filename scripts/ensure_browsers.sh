#!/usr/bin/env bash
# Make sure the browsers the tests drive are installed (Debian), in one apt-get run:
# - headless Chromium and its chromedriver (the page tests), from the same Debian source
#   package, so their versions always match;
# - Firefox ESR (the snapshot file is checked in it as well: tests/visualizer/snapshot/
#   test_snapshot_firefox.py), driven over Marionette (marionette-driver): no geckodriver.
# Idempotent: returns at once when every command is already on PATH.
set -euo pipefail

packages=()
command -v chromium >/dev/null 2>&1 || packages+=(chromium)
command -v chromedriver >/dev/null 2>&1 || packages+=(chromium-driver)
command -v firefox-esr >/dev/null 2>&1 || command -v firefox >/dev/null 2>&1 || packages+=(firefox-esr)
if [ "${#packages[@]}" -eq 0 ]; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "ensure_browsers: ${packages[*]} missing and not root; run:" >&2
    echo "  sudo apt-get install -y ${packages[*]}" >&2
    exit 1
fi

echo "ensure_browsers: installing ${packages[*]} with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null

# A package that installs but does not provide its command is a real failure.
command -v chromium >/dev/null
command -v chromedriver >/dev/null
command -v firefox-esr >/dev/null || command -v firefox >/dev/null
echo "ensure_browsers: $(chromium --version 2>/dev/null), $(chromedriver --version 2>/dev/null | head -n1)," \
    "$(firefox-esr --version 2>/dev/null || firefox --version 2>/dev/null)" >&2
