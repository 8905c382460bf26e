#!/bin/sh
# brokerversion.sh prints which RabbitMQ the tests are about to run
# against: QUEUEY_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672/),
# its version and node, as its management API
# (QUEUEY_MANAGEMENT_URL, default the AMQP host on port 15672 with the
# AMQP URL's credentials) reports them. It never fails: a broker it cannot
# ask is said so, and the tests say the rest.
set -u

url=${QUEUEY_AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/}
mgmt=${QUEUEY_MANAGEMENT_URL:-}
if [ -z "$mgmt" ]; then
	rest=${url#*://}
	creds=
	case $rest in *@*) creds=${rest%%@*}@ ;; esac
	hostport=${rest#"$creds"}
	hostport=${hostport%%/*}
	scheme=http
	case $url in amqps://*) scheme=https ;; esac
	mgmt="$scheme://$creds${hostport%%:*}:15672/"
fi
shown=$(printf '%s' "$url" | sed 's|://\([^:@/]*\):[^@/]*@|://\1:xxxxx@|')
overview=$(curl -fsS --max-time 10 "${mgmt%/}/api/overview" 2>/dev/null) || {
	echo "== RabbitMQ at $shown (version unknown: no management API answers)"
	exit 0
}
version=$(printf '%s' "$overview" | sed -n 's/.*"rabbitmq_version":"\([^"]*\)".*/\1/p')
node=$(printf '%s' "$overview" | sed -n 's/.*"node":"\([^"]*\)".*/\1/p')
echo "== RabbitMQ ${version:-?} (node ${node:-?}) at $shown"
