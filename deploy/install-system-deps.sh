#!/usr/bin/env bash
# Installs the Debian packages sipedge's SIP tests use (SIPp from sip-tester), only when missing.
set -euo pipefail
need=()
command -v sipp >/dev/null 2>&1 || need+=(sip-tester)
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "installing Debian packages: ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
