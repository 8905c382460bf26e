#!/bin/sh
# broker4.sh runs RabbitMQ 4.0 (Debian trixie's rabbitmq-server, on its own
# Erlang) beside the main 3.x broker, in a chroot made with debootstrap from
# Debian's packages alone. The chroot is made once and kept; the node's
# state is not: every start begins with an empty broker.
#
#   broker4.sh up       make the chroot where missing, start the node
#   broker4.sh down     stop the node and unmount the chroot's /proc
#   broker4.sh status   say whether the node runs, and its URLs
#   broker4.sh ctl ...  rabbitmqctl against the node
#   broker4.sh logmark  print where the node's log ends now (for deprecated)
#   broker4.sh deprecated [MARK]
#                       fail, naming them, when the node's log (after MARK,
#                       a logmark) says a deprecated feature was used
#
# The node is rabbit4@localhost: AMQP on 127.0.0.1:5673 (guest/guest),
# management on 15673, Erlang distribution on 25673, through the host's
# epmd. The chroot lives at QUEUEY_RABBITMQ4_ROOT (default
# /var/lib/queuey/rabbitmq4-trixie, about 370 MB).
set -eu

root=${QUEUEY_RABBITMQ4_ROOT:-/var/lib/queuey/rabbitmq4-trixie}
timeout=${QUEUEY_BROKER_TIMEOUT:-120}
node=rabbit4@localhost
port=5673
mport=15673
dport=25673

say() { printf 'broker4: %s\n' "$*"; }
die() { printf 'broker4: error: %s\n' "$*" >&2; exit 1; }

. "$(dirname "$0")/lib.sh"

# in_root runs a command inside the chroot, with the environment the
# broker's own scripts expect.
in_root() {
	as_root env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/var/lib/rabbitmq LANG=C.UTF-8 \
		chroot "$root" "$@"
}

ctl() { in_root /usr/lib/rabbitmq/bin/rabbitmqctl -n "$node" "$@"; }

answers() {
	if command -v nc >/dev/null 2>&1; then
		nc -z -w 2 127.0.0.1 "$port" >/dev/null 2>&1
	else
		timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" >/dev/null 2>&1
	fi
}

make_root() {
	[ -x "$root/usr/lib/rabbitmq/bin/rabbitmq-server" ] && return 0
	if ! command -v debootstrap >/dev/null 2>&1; then
		command -v apt-get >/dev/null 2>&1 || die "debootstrap is not installed and apt-get is not available"
		say "installing debootstrap with apt-get"
		apt_install debootstrap
	fi
	say "making the trixie chroot with rabbitmq-server at $root (a few minutes, once)"
	as_root rm -rf "$root.partial"
	as_root mkdir -p "$(dirname "$root")"
	as_root debootstrap --variant=minbase --include=rabbitmq-server trixie "$root.partial" http://deb.debian.org/debian >/dev/null ||
		die "debootstrap of trixie failed; its log: $root.partial/debootstrap/debootstrap.log"
	as_root mv "$root.partial" "$root"
}

configure() {
	printf 'NODENAME=%s\nNODE_PORT=%s\nDIST_PORT=%s\n' "$node" "$port" "$dport" |
		as_root tee "$root/etc/rabbitmq/rabbitmq-env.conf" >/dev/null
	# loopback_users = none: the host's 127.0.0.1 is the chroot's too, but
	# keep guest usable whatever address a test dials.
	# The deprecated features that 4.3 removes and a client could use are
	# denied, as 4.3 denies them: a test that uses one fails at once.
	printf 'management.tcp.port = %s\nloopback_users = none\ndeprecated_features.permit.transient_nonexcl_queues = false\ndeprecated_features.permit.global_qos = false\n' "$mport" |
		as_root tee "$root/etc/rabbitmq/rabbitmq.conf" >/dev/null
	echo '[rabbitmq_management].' | as_root tee "$root/etc/rabbitmq/enabled_plugins" >/dev/null
}

mount_proc() {
	mountpoint -q "$root/proc" 2>/dev/null || as_root mount -t proc proc "$root/proc"
}

up() {
	if answers; then
		say "RabbitMQ 4 answers at 127.0.0.1:$port"
		return 0
	fi
	make_root
	configure
	mount_proc
	# No state kept: a start is a fresh broker.
	as_root rm -rf "$root/var/lib/rabbitmq/mnesia" "$root/var/log/rabbitmq/"*.log
	say "starting $node"
	detached in_root /usr/lib/rabbitmq/bin/rabbitmq-server -detached ||
		say "rabbitmq-server -detached failed; waiting for the port anyway"
	elapsed=0
	while ! answers; do
		[ "$elapsed" -ge "$timeout" ] && die "$node did not answer on 127.0.0.1:$port within ${timeout}s; its log is under $root/var/log/rabbitmq/"
		sleep 1
		elapsed=$((elapsed + 1))
	done
	ctl await_startup >/dev/null 2>&1 || say "await_startup failed; the port answers, going on"
	say "RabbitMQ $(ctl version 2>/dev/null || echo 4) answers at 127.0.0.1:$port (management 127.0.0.1:$mport)"
}

down() {
	if [ -x "$root/usr/lib/rabbitmq/bin/rabbitmqctl" ] && answers; then
		ctl stop >/dev/null 2>&1 || say "rabbitmqctl stop failed"
	fi
	if mountpoint -q "$root/proc" 2>/dev/null; then
		as_root umount "$root/proc" || say "could not unmount $root/proc"
	fi
}

log="$root/var/log/rabbitmq/$node.log"

# deprecated fails when the node's log, after line $1 (0: all of it), names
# a deprecated feature used. The node logs a permitted feature's first use
# only, and a denied one's every use (refused): a node that up started
# logs every feature from its start. management_metrics_collection is left
# out: the broker's own management plugin uses it from boot (it keeps the
# queue statistics that queuey's admin reads), whatever its clients do.
deprecated() {
	from=${1:-0}
	[ -r "$log" ] || die "no log at $log"
	# The node writes its log in the background: a line of our own,
	# logged now and seen in the file, says that what came before it is
	# there too.
	token="deprecated-check-$$-$(date +%s)"
	if answers && ctl eval "logger:notice(\"broker4: log mark ~s\", [\"$token\"])." >/dev/null 2>&1; then
		elapsed=0
		while ! grep -q "$token" "$log"; do
			[ "$elapsed" -ge 30 ] && die "the log mark did not reach $log within 30s"
			sleep 1
			elapsed=$((elapsed + 1))
		done
	fi
	used=$(tail -n +"$((from + 1))" "$log" | sed -n 's/.*Feature `\([a-z_]*\)` is deprecated.*/\1/p' |
		grep -vx management_metrics_collection | sort -u)
	if [ -n "$used" ]; then
		say "deprecated features used (see $log):"
		printf '  %s\n' $used
		exit 1
	fi
	say "no deprecated feature used"
}

case ${1:-} in
up) up ;;
logmark)
	if [ -r "$log" ]; then wc -l <"$log"; else echo 0; fi
	;;
deprecated) deprecated "${2:-0}" ;;
down) down ;;
status)
	if answers; then
		say "$node runs: amqp://guest:guest@127.0.0.1:$port/ http://guest:guest@127.0.0.1:$mport/"
	else
		say "$node does not run"
		exit 1
	fi
	;;
ctl)
	shift
	ctl "$@"
	;;
*) die "usage: broker4.sh up|down|status|logmark|deprecated [MARK]|ctl ..." ;;
esac
