#!/usr/bin/env bash
# lanes.sh runs test lanes at once: lanes that share no broker need not
# wait for each other.
#
#   lanes.sh NAME COMMAND [NAME COMMAND ...]
#
# Each lane is a shell command. Its output goes to a log of its own, under
# QUEUEY_LANE_LOGS (default: a new directory under $TMPDIR), and is shown
# whole when the lane ends, so that the lanes' lines never interleave. At
# the end a summary says each lane's result and time; lanes.sh fails when
# a lane did. With QUEUEY_SERIAL_LANES set, the lanes run one after
# another, in the order given, each to its end.
set -u

if [ $# -eq 0 ] || [ $(($# % 2)) -ne 0 ]; then
	echo "usage: lanes.sh NAME COMMAND [NAME COMMAND ...]" >&2
	exit 2
fi
dir=${QUEUEY_LANE_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/queuey-lanes.XXXXXX")}
mkdir -p "$dir"

names=()
cmds=()
while [ $# -gt 0 ]; do
	names+=("$1")
	cmds+=("$2")
	shift 2
done

# Each lane runs in a process group of its own (job control), so that a
# signal to lanes.sh, as Ctrl-C sends, is passed on to every lane whole;
# without job control a script's background commands would ignore it.
set -m
pids=()
stop() {
	for p in "${pids[@]}"; do
		kill "-$1" -- "-$p" 2>/dev/null
	done
	wait
	exit 130
}
trap 'stop INT' INT
trap 'stop TERM' TERM

# start i runs lane i in the background; its exit status and seconds land
# in $dir/i.result when it ends.
start() {
	local i=$1
	echo "== lane started: ${names[$i]} (log: $dir/$i.log)"
	(
		begin=$(date +%s)
		bash -c "${cmds[$i]}" >"$dir/$i.log" 2>&1 </dev/null
		rc=$?
		echo "$rc $(($(date +%s) - begin))" >"$dir/$i.result"
	) &
	pids[$i]=$!
}

# report i shows lane i's log and how it ended.
report() {
	local i=$1 rc=1 secs=?
	read -r rc secs <"$dir/$i.result"
	echo "== lane ${names[$i]}: output"
	cat "$dir/$i.log"
	if [ "$rc" -eq 0 ]; then
		echo "== lane ${names[$i]}: passed in ${secs}s"
	else
		echo "== lane ${names[$i]}: FAILED (exit $rc) in ${secs}s; log: $dir/$i.log"
	fi
}

if [ -n "${QUEUEY_SERIAL_LANES:-}" ]; then
	for i in "${!names[@]}"; do
		start "$i"
		wait "${pids[$i]}"
		report "$i"
	done
else
	for i in "${!names[@]}"; do
		start "$i"
	done
	while [ ${#pids[@]} -gt 0 ]; do
		wait -n -p ended "${pids[@]}"
		for i in "${!pids[@]}"; do
			if [ "${pids[$i]}" = "$ended" ]; then
				unset 'pids[i]'
				report "$i"
			fi
		done
	done
fi

failed=0
echo "== lanes:"
for i in "${!names[@]}"; do
	rc=1 secs=?
	read -r rc secs <"$dir/$i.result"
	if [ "$rc" -eq 0 ]; then
		echo "   passed  ${secs}s  ${names[$i]}"
	else
		echo "   FAILED  ${secs}s  ${names[$i]} (log: $dir/$i.log)"
		failed=1
	fi
done
exit $failed
