#!/usr/bin/env bash
# Debian packages of the real-audio tests: the recorded telephone prompts with their transcripts
# (tests/test_real_prompts.py) and the classic synthesisers of the same-text CM set
# (tests/test_same_text.py). Installs what is missing, quietly, and only as root on Debian with
# apt-get; anywhere else it does nothing and those tests skip (under CI=true they fail instead).
set -uo pipefail
PACKAGES=(
  asterisk-core-sounds-en asterisk-core-sounds-en-wav asterisk-core-sounds-fr asterisk-core-sounds-fr-wav
  flite espeak-ng festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts
)
if [[ $(id -u) != 0 || ! -f /etc/debian_version ]] || ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
  exit 0
fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]})) || exit 0
echo "installing the Debian packages of the real-audio tests: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
install() { apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1; }
install || { apt-get update -q >/dev/null 2>&1 && install; } \
  || echo "could not install ${missing[*]}: the real-audio tests skip (and fail under CI=true)"
exit 0
