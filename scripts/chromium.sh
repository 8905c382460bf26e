#!/bin/sh
# chromium.sh makes sure a headless Chromium is installed for the
# dashboard's browser tests: it does nothing when one is on PATH (or
# QUEUEY_CHROMIUM names one), and installs Debian's chromium with apt-get
# otherwise. It prints the path of the browser.
set -eu

say() { printf 'chromium: %s\n' "$*" >&2; }
die() { printf 'chromium: error: %s\n' "$*" >&2; exit 1; }

find_browser() {
	if [ -n "${QUEUEY_CHROMIUM:-}" ]; then
		[ -x "$QUEUEY_CHROMIUM" ] || die "QUEUEY_CHROMIUM=$QUEUEY_CHROMIUM is not an executable"
		echo "$QUEUEY_CHROMIUM"
		return 0
	fi
	for b in chromium chromium-browser google-chrome-stable google-chrome; do
		if command -v "$b" >/dev/null 2>&1; then
			command -v "$b"
			return 0
		fi
	done
	return 1
}

if path=$(find_browser); then
	say "found $path"
	echo "$path"
	exit 0
fi

. "$(dirname "$0")/lib.sh"

command -v apt-get >/dev/null 2>&1 || die "no Chromium on PATH and apt-get is not available: install Chromium or set QUEUEY_CHROMIUM to a Chrome or Chromium binary"
say "installing chromium with apt-get"
apt_install chromium fonts-dejavu-core >&2
path=$(find_browser) || die "apt-get installed chromium but no chromium is on PATH"
say "installed $path"
echo "$path"
