#!/usr/bin/env bash
# Installs Debian's chromium for the browser tests when it is missing.
# Browser tests fail (not skip) under CI=true without it, so CI must have it.
set -euo pipefail
for b in chromium chromium-browser; do
  if command -v "$b" >/dev/null 2>&1; then exit 0; fi
done
sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "ensure-chromium: chromium is missing and this user cannot install it; run: apt-get install chromium" >&2
    exit 0
  fi
fi
echo "ensure-chromium: installing Debian's chromium for the browser tests" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
