#!/bin/sh
# postgres.sh makes sure a PostgreSQL answers at QUEUEY_DATABASE_URL
# (default postgres://queuey:queuey@127.0.0.1:5432/queuey), for the
# outbox's tests: it does nothing more than check the role and database
# when the port answers, starts the local cluster (pg_ctlcluster) otherwise,
# and installs Debian's postgresql with apt-get where there is none. On a
# server of this machine it then creates the URL's role (with its password)
# and database, owned by the role, where they are missing.
set -eu

url=${QUEUEY_DATABASE_URL:-postgres://queuey:queuey@127.0.0.1:5432/queuey}
timeout=${QUEUEY_POSTGRES_TIMEOUT:-60}

# user, password, host, port and database of the URL.
rest=${url#*://}
userinfo=
case $rest in
*@*) userinfo=${rest%%@*} rest=${rest#*@} ;;
esac
user=${userinfo%%:*}
password=
case $userinfo in
*:*) password=${userinfo#*:} ;;
esac
hostport=${rest%%/*}
db=${rest#*/}
[ "$db" = "$rest" ] && db=
db=${db%%\?*}
host=${hostport%%:*}
port=5432
case $hostport in
*:*) port=${hostport##*:} ;;
esac
user=${user:-postgres}
db=${db:-$user}

say() { printf 'postgres: %s\n' "$*"; }
die() { printf 'postgres: error: %s\n' "$*" >&2; exit 1; }

answers() {
	if command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -h "$host" -p "$port" -t 2 >/dev/null 2>&1
	elif command -v nc >/dev/null 2>&1; then
		nc -z -w 2 "$host" "$port" >/dev/null 2>&1
	else
		timeout 3 bash -c "exec 3<>/dev/tcp/$host/$port" >/dev/null 2>&1
	fi
}

. "$(dirname "$0")/lib.sh"

local_host() {
	case $host in
	127.0.0.1 | localhost | ::1) return 0 ;;
	*) return 1 ;;
	esac
}

# superuser runs psql as the postgres superuser of the local server, over
# its Unix socket, with the given arguments.
superuser() {
	if [ "$(id -u)" -eq 0 ] && command -v runuser >/dev/null 2>&1; then
		runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$port" "$@"
	elif [ "$(id -u)" -eq 0 ]; then
		# su passes the words after the command to its shell: $0 is the port.
		su -s /bin/sh -c 'exec psql -X -q -v ON_ERROR_STOP=1 -p "$0" "$@"' postgres -- "$port" "$@"
	else
		as_root -u postgres psql -X -q -v ON_ERROR_STOP=1 -p "$port" "$@"
	fi
}

# quote_literal and quote_ident quote a value for SQL.
quote_literal() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/''/g")"; }
quote_ident() { printf '"%s"' "$(printf '%s' "$1" | sed 's/"/""/g')"; }

# provision creates the role and the database where they are missing.
provision() {
	local_host || return 0
	command -v psql >/dev/null 2>&1 || return 0
	id postgres >/dev/null 2>&1 || return 0
	role_exists=$(superuser -tA -c "SELECT 1 FROM pg_roles WHERE rolname = $(quote_literal "$user")")
	if [ "$role_exists" != 1 ]; then
		say "creating role $user"
		pw=
		[ -n "$password" ] && pw=" PASSWORD $(quote_literal "$password")"
		superuser -c "CREATE ROLE $(quote_ident "$user") LOGIN$pw"
	fi
	db_exists=$(superuser -tA -c "SELECT 1 FROM pg_database WHERE datname = $(quote_literal "$db")")
	if [ "$db_exists" != 1 ]; then
		say "creating database $db owned by $user"
		superuser -c "CREATE DATABASE $(quote_ident "$db") OWNER $(quote_ident "$user")"
	fi
}

if answers; then
	provision
	say "PostgreSQL answers at $host:$port (database $db, role $user)"
	exit 0
fi

local_host || die "nothing answers at $host:$port, and it is not this machine: start PostgreSQL there, or unset QUEUEY_DATABASE_URL to use a local one"

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
	command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is not installed and apt-get is not available: install PostgreSQL (https://www.postgresql.org/download/) and run this again"
	say "installing postgresql with apt-get"
	apt_install postgresql
fi

if ! answers; then
	# The newest installed cluster, or a new one of the newest version.
	cluster=$(pg_lsclusters -h 2>/dev/null | sort -k1,1n | tail -n 1 | awk '{print $1, $2}')
	if [ -z "$cluster" ]; then
		version=$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -n 1)
		[ -n "$version" ] || die "no PostgreSQL server found under /usr/lib/postgresql"
		say "creating cluster $version main on port $port"
		as_root pg_createcluster -p "$port" "$version" main >/dev/null
		cluster="$version main"
	fi
	say "starting cluster $cluster"
	# shellcheck disable=SC2086 # version and name, two words
	detached as_root pg_ctlcluster $cluster start || say "pg_ctlcluster $cluster start failed (starting already?); waiting for the port anyway"
fi

say "waiting up to ${timeout}s for $host:$port"
elapsed=0
while ! answers; do
	if [ "$elapsed" -ge "$timeout" ]; then
		die "PostgreSQL did not answer at $host:$port within ${timeout}s; see its logs (pg_lsclusters, /var/log/postgresql/)"
	fi
	sleep 1
	elapsed=$((elapsed + 1))
done
provision
say "PostgreSQL answers at $host:$port (database $db, role $user)"
