#!/bin/sh
# clients.sh makes sure the producers in clients/ can be installed as
# packages and tested (clients/clients_test.go installs them into a
# virtual environment and a Node project of its own): the Python one needs
# Debian's python3-pika, python3-msgpack, python3-venv and python3-setuptools for
# /usr/bin/python3 (installed with apt-get when missing), which a virtual
# environment made with --system-site-packages sees, so that pip installs
# the package with no index; the Node one its dependencies in npm's cache
# and clients/node/node_modules (npm ci, from package-lock.json, when they
# are missing or older than the lock file). It does nothing where both are
# in place.
set -eu

say() { printf 'clients: %s\n' "$*"; }
die() { printf 'clients: error: %s\n' "$*" >&2; exit 1; }

. "$(dirname "$0")/lib.sh"

root=$(cd "$(dirname "$0")/.." && pwd)
python=/usr/bin/python3

if ! "$python" -c 'import pika, msgpack, venv, ensurepip, setuptools' >/dev/null 2>&1; then
	command -v apt-get >/dev/null 2>&1 || die "$python lacks pika, msgpack, venv or setuptools and apt-get is not available: install python3-pika, python3-msgpack, python3-venv and python3-setuptools"
	say "installing python3-pika, python3-msgpack, python3-venv and python3-setuptools with apt-get"
	apt_install python3-pika python3-msgpack python3-venv python3-setuptools
	"$python" -c 'import pika, msgpack, venv, ensurepip, setuptools' || die "apt-get installed python3-pika, python3-msgpack, python3-venv and python3-setuptools but $python cannot import them"
fi
say "python: $("$python" -c 'import pika, msgpack; print("pika", pika.__version__, "msgpack", ".".join(map(str, msgpack.version)))')"

node_dir=$root/clients/node
command -v node >/dev/null 2>&1 || die "node is not installed: install Node.js 18 or later (Debian: nodejs, npm)"
command -v npm >/dev/null 2>&1 || die "npm is not installed: install it (Debian: npm)"
stamp=$node_dir/node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ "$node_dir/package-lock.json" -nt "$stamp" ]; then
	say "npm ci in clients/node"
	(cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
say "node $(node --version): clients/node/node_modules in place"
