#!/bin/sh
# cluster.sh runs a three-node RabbitMQ cluster on this machine, for tests
# of what happens when a node dies. It uses the installed rabbitmq-server
# (Debian's, started directly, not through its wrapper) and never touches
# the main broker on 127.0.0.1:5672.
#
#   cluster.sh up        start the nodes that are down and cluster them
#   cluster.sh down      stop every node and remove the cluster's state
#   cluster.sh status    print each node's state, pid and AMQP URL
#   cluster.sh kill N    kill -9 node N (1..3)
#   cluster.sh start N   start node N again, after a kill
#   cluster.sh ctl N ... run rabbitmqctl against node N
#
# Node N is qaN@localhost, AMQP on 127.0.0.1:568N (guest/guest), Erlang
# distribution on 127.0.0.1:2568N. State lives under QUEUEY_CLUSTER_DIR
# (default /tmp/queuey-cluster): each node's data, logs, pid file and
# config, and a private HOME with the cluster's Erlang cookie.
set -eu

dir=${QUEUEY_CLUSTER_DIR:-/tmp/queuey-cluster}
timeout=${QUEUEY_CLUSTER_TIMEOUT:-180}
server=/usr/lib/rabbitmq/bin/rabbitmq-server
ctl=/usr/lib/rabbitmq/bin/rabbitmqctl
nodes="1 2 3"

say() { printf 'cluster: %s\n' "$*"; }
die() { printf 'cluster: error: %s\n' "$*" >&2; exit 1; }

[ -x "$server" ] || die "$server not found: install Debian's rabbitmq-server (make broker does)"

node_name() { echo "qa$1@localhost"; }
node_dir() { echo "$dir/qa$1"; }
pid_file() { echo "$(node_dir "$1")/pid"; }

check_n() {
	case ${1:-} in
	1 | 2 | 3) ;;
	*) die "node number ${1:-(none)}: want 1, 2 or 3" ;;
	esac
}

# ctl_n N args...: rabbitmqctl against node N, with the cluster's cookie.
ctl_n() {
	n=$1
	shift
	env -i PATH=/usr/bin:/bin HOME="$dir/home" LANG=C.UTF-8 \
		RABBITMQ_CONF_ENV_FILE="$dir/empty.conf" \
		"$ctl" -n "$(node_name "$n")" "$@"
}

# is_node_beam PID N: PID is a live beam.smp started as node N of this
# cluster (its environment names the node and this cluster's data).
is_node_beam() {
	[ "$(cat "/proc/$1/comm" 2>/dev/null)" = beam.smp ] || return 1
	# Bounded: reading a dying process's environment can block.
	timeout 5 sh -c 'tr "\0" "\n" <"/proc/$1/environ"' sh "$1" >"$dir/.environ.$$" 2>/dev/null || return 1
	ok=0
	grep -qx "RABBITMQ_NODENAME=$(node_name "$2")" "$dir/.environ.$$" &&
		grep -qx "RABBITMQ_MNESIA_BASE=$(node_dir "$2")/mnesia" "$dir/.environ.$$" || ok=1
	rm -f "$dir/.environ.$$"
	return $ok
}

# pid_of N prints node N's pid, from its pid file or else by looking for
# its beam, and fails when node N does not run.
pid_of() {
	[ -d "$dir" ] || return 1
	f=$(pid_file "$1")
	if [ -s "$f" ]; then
		# A node writes its pid file as it starts, and only it: when the
		# file is there, it is the whole answer.
		is_node_beam "$(cat "$f")" "$1" || return 1
		cat "$f"
		return 0
	fi
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		if is_node_beam "$p" "$1"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

prepare() {
	mkdir -p "$dir/home"
	chmod 700 "$dir/home"
	if [ ! -s "$dir/home/.erlang.cookie" ]; then
		# A cookie of this cluster's own, so no other node can join it.
		od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/home/.erlang.cookie"
		chmod 400 "$dir/home/.erlang.cookie"
	fi
	: >"$dir/empty.conf"
	for n in $nodes; do
		d=$(node_dir "$n")
		mkdir -p "$d/mnesia" "$d/log"
		printf 'listeners.tcp.default = 127.0.0.1:568%s\nloopback_users = none\n' "$n" >"$d/rabbitmq.conf"
		echo '[].' >"$d/enabled_plugins"
		# A quorum queue's dead-letter worker publishes again what the
		# next queue has not confirmed after this long (3 minutes by
		# default): when that queue's leader dies mid-publish, its
		# waits are held that long (docs/delays.md).
		echo '[{rabbit, [{dead_letter_worker_publisher_confirm_timeout, 5000}]}].' >"$d/advanced.config"
	done
}

# launch N starts node N in the background, unless it runs.
launch() {
	n=$1
	if pid_of "$n" >/dev/null; then
		return 0
	fi
	d=$(node_dir "$n")
	rm -f "$(pid_file "$n")"
	echo "--- $(date -u +%FT%TZ) start" >>"$d/log/start.out"
	env -i PATH=/usr/bin:/bin HOME="$dir/home" LANG=C.UTF-8 \
		RABBITMQ_NODENAME="$(node_name "$n")" \
		RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
		RABBITMQ_NODE_PORT="568$n" \
		RABBITMQ_DIST_PORT="2568$n" \
		RABBITMQ_MNESIA_BASE="$d/mnesia" \
		RABBITMQ_LOG_BASE="$d/log" \
		RABBITMQ_PID_FILE="$(pid_file "$n")" \
		RABBITMQ_CONFIG_FILE="$d/rabbitmq.conf" \
		RABBITMQ_ADVANCED_CONFIG_FILE="$d/advanced.config" \
		RABBITMQ_ENABLED_PLUGINS_FILE="$d/enabled_plugins" \
		RABBITMQ_CONF_ENV_FILE="$dir/empty.conf" \
		RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
		ERL_EPMD_ADDRESS=127.0.0.1 \
		ERL_CRASH_DUMP="$d/log/erl_crash.dump" \
		setsid "$server" >>"$d/log/start.out" 2>&1 </dev/null 9>&- &
	echo $! >"$d/launcher"
}

# await N waits until node N's app runs, and fails early when its
# launcher exits first.
await() {
	n=$1
	d=$(node_dir "$n")
	f=$(pid_file "$n")
	i=0
	while [ ! -s "$f" ]; do
		if [ -s "$d/launcher" ] && ! kill -0 "$(cat "$d/launcher")" 2>/dev/null && ! pid_of "$n" >/dev/null; then
			tail -n 5 "$d/log/start.out" >&2 || true
			die "qa$n exited while starting; see $d/log"
		fi
		[ $i -lt $((timeout * 5)) ] || die "qa$n wrote no pid file within ${timeout}s; see $d/log"
		sleep 0.2
		i=$((i + 1))
	done
	if ! ctl_n "$n" wait --timeout "$timeout" "$f" >"$d/log/wait.out" 2>&1; then
		tail -n 5 "$d/log/start.out" >&2 || true
		die "qa$n did not start within ${timeout}s; see $d/log"
	fi
	rm -f "$d/launcher"
}

start_node() {
	launch "$1"
	await "$1"
	say "qa$1 running (pid $(pid_of "$1"), amqp://guest:guest@127.0.0.1:568$1/)"
}

# joined N: node N is running and is in a cluster with qa1.
joined() {
	ctl_n "$1" cluster_status --formatter json 2>/dev/null | grep -q '"running_nodes":\[[^]]*"qa1@localhost"'
}

join_node() {
	n=$1
	if joined "$n"; then
		return 0
	fi
	{
		ctl_n "$n" stop_app &&
			ctl_n "$n" join_cluster "$(node_name 1)" &&
			ctl_n "$n" start_app
	} >"$(node_dir "$n")/log/join.out" 2>&1 || {
		tail -n 20 "$(node_dir "$n")/log/join.out" >&2
		die "qa$n could not join qa1"
	}
	say "qa$n joined qa1"
}

up() {
	prepare
	# All three boot at once; joining waits for each.
	for n in $nodes; do launch "$n"; done
	for n in $nodes; do start_node "$n"; done
	for n in 2 3; do join_node "$n"; done
	for n in $nodes; do ctl_n "$n" await_startup >/dev/null; done
	say "up: $(ctl_n 1 cluster_status --formatter json | sed -n 's/.*"running_nodes":\[\([^]]*\)\].*/\1/p')"
}

stop_node() {
	n=$1
	pid=$(pid_of "$n") || return 0
	ctl_n "$n" stop >/dev/null 2>&1 || true
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 30 ]; do
		sleep 1
		i=$((i + 1))
	done
	if kill -0 "$pid" 2>/dev/null && pid_of "$n" >/dev/null; then
		kill -9 "$pid"
	fi
	say "qa$n stopped"
}

down() {
	for n in 3 2 1; do stop_node "$n"; done
	case $dir in
	/ | "") die "refusing to remove QUEUEY_CLUSTER_DIR=$dir" ;;
	esac
	rm -rf "$dir"
	say "down: removed $dir"
}

kill_node() {
	check_n "$1"
	pid=$(pid_of "$1") || die "qa$1 is not running (no live beam of $(node_name "$1") in $(pid_file "$1"))"
	kill -9 "$pid"
	say "qa$1 killed (pid $pid)"
}

status() {
	for n in $nodes; do
		if pid=$(pid_of "$n"); then
			say "qa$n running pid $pid amqp://guest:guest@127.0.0.1:568$n/"
		else
			say "qa$n down"
		fi
	done
}

# One change at a time: two test runs bringing the cluster up at once
# would start each node twice. Nodes are launched without the lock's fd
# (9>&-), or they would hold the lock for as long as they run.
case ${1:-} in
up | down | start | kill)
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$dir.lock"
		flock 9
	fi
	;;
esac

case ${1:-} in
up) up ;;
down) down ;;
status) status ;;
kill) kill_node "${2:-}" ;;
start)
	check_n "${2:-}"
	[ -s "$dir/home/.erlang.cookie" ] || die "no cluster under $dir: run cluster.sh up first"
	start_node "$2"
	;;
ctl)
	check_n "${2:-}"
	n=$2
	shift 2
	ctl_n "$n" "$@"
	;;
*)
	echo "usage: $0 up|down|status|kill N|start N|ctl N args..." >&2
	exit 2
	;;
esac
