#!/bin/sh
# broker.sh makes sure a RabbitMQ answers at QUEUEY_AMQP_URL (default
# amqp://guest:guest@127.0.0.1:5672/): it does nothing when the port
# answers, starts an installed rabbitmq-server otherwise, and installs
# Debian's rabbitmq-server with apt-get where there is none. On a broker of
# this machine it then enables the management plugin (part of Debian's
# package), which `queuey` uses to list hold queues; that step is skipped
# when the plugin is already enabled.
set -eu

url=${QUEUEY_AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/}
timeout=${QUEUEY_BROKER_TIMEOUT:-60}

# host and port of the URL: strip scheme, credentials, vhost.
hostport=${url#*://}
hostport=${hostport##*@}
hostport=${hostport%%/*}
host=${hostport%%:*}
port=5672
case $hostport in
*:*) port=${hostport##*:} ;;
esac
case $url in
amqps://*) [ "$hostport" = "$host" ] && port=5671 ;;
esac

say() { printf 'broker: %s\n' "$*"; }
die() { printf 'broker: error: %s\n' "$*" >&2; exit 1; }

answers() {
	if command -v nc >/dev/null 2>&1; then
		nc -z -w 2 "$host" "$port" >/dev/null 2>&1
	elif command -v bash >/dev/null 2>&1; then
		if command -v timeout >/dev/null 2>&1; then
			timeout 3 bash -c "exec 3<>/dev/tcp/$host/$port" >/dev/null 2>&1
		else
			bash -c "exec 3<>/dev/tcp/$host/$port" >/dev/null 2>&1
		fi
	else
		die "need nc or bash to probe $host:$port"
	fi
}

. "$(dirname "$0")/lib.sh"

local_host() {
	case $host in
	127.0.0.1 | localhost | ::1) return 0 ;;
	*) return 1 ;;
	esac
}

# management enables rabbitmq_management on the local node unless it is
# enabled already.
management() {
	local_host || return 0
	command -v rabbitmq-plugins >/dev/null 2>&1 || return 0
	if as_root rabbitmq-plugins list -e -m 2>/dev/null | grep -qx rabbitmq_management; then
		return 0
	fi
	say "enabling the management plugin (rabbitmq_management)"
	as_root rabbitmq-plugins enable rabbitmq_management >/dev/null || say "could not enable rabbitmq_management: queuey cannot list hold queues made by other processes"
}

if answers; then
	management
	say "RabbitMQ answers at $host:$port"
	exit 0
fi

local_host || die "nothing answers at $host:$port, and it is not this machine: start the broker there, or unset QUEUEY_AMQP_URL to use a local one"

if ! command -v rabbitmq-server >/dev/null 2>&1; then
	command -v apt-get >/dev/null 2>&1 || die "rabbitmq-server is not installed and apt-get is not available: install RabbitMQ (https://www.rabbitmq.com/docs/download) and run this again"
	say "installing rabbitmq-server with apt-get"
	apt_install rabbitmq-server
fi

if ! answers; then
	say "starting rabbitmq-server"
	detached as_root rabbitmq-server -detached || say "rabbitmq-server -detached failed (a node already starting?); waiting for the port anyway"
fi

say "waiting up to ${timeout}s for $host:$port"
elapsed=0
while ! answers; do
	if [ "$elapsed" -ge "$timeout" ]; then
		die "RabbitMQ did not answer at $host:$port within ${timeout}s; see its logs (rabbitmq-diagnostics status, /var/log/rabbitmq/)"
	fi
	sleep 1
	elapsed=$((elapsed + 1))
done
if command -v rabbitmqctl >/dev/null 2>&1; then
	as_root rabbitmqctl await_startup >/dev/null 2>&1 || say "rabbitmqctl await_startup failed; the port answers, going on"
fi
management
say "RabbitMQ answers at $host:$port"
