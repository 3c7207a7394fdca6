#!/usr/bin/env bash
# Make sure headless Chromium and its matching chromedriver are installed (Debian).
# The browser tests drive /usr/bin/chromium through /usr/bin/chromedriver; both come
# from the same Debian source package, so their versions always match.
# Idempotent: returns at once when both are already on PATH.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "ensure_chromium: chromium/chromedriver missing and not root; run:" >&2
    echo "  sudo apt-get install -y chromium chromium-driver" >&2
    exit 1
fi

echo "ensure_chromium: installing chromium and chromium-driver with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null

# A package that installs but does not provide the commands is a real failure.
command -v chromium >/dev/null
command -v chromedriver >/dev/null
echo "ensure_chromium: $(chromium --version 2>/dev/null), $(chromedriver --version 2>/dev/null | head -n1)" >&2
