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
# another, in the order given, each to its end. An interrupt, hangup or
# termination stops every lane, and lanes.sh exits 128 + the signal's
# number; no way out of lanes.sh leaves a lane running.
set -u

if [ $# -eq 0 ] || [ $(($# % 2)) -ne 0 ]; then
	echo "usage: lanes.sh NAME COMMAND [NAME COMMAND ...]" >&2
	exit 2
fi
dir=${QUEUEY_LANE_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/queuey-lanes.XXXXXX")}
mkdir -p "$dir"
rm -f "$dir"/*.result "$dir"/*.log

names=()
cmds=()
while [ $# -gt 0 ]; do
	names+=("$1")
	cmds+=("$2")
	shift 2
done

# pids[i] is lane i's process group while lane i runs. Each lane runs in a
# group of its own (job control is on only while it starts), so that a
# signal to lanes.sh, as Ctrl-C sends, is passed on to every lane whole;
# without job control a script's background commands would ignore it.
# While a lane starts (starting set), its group may be only in $!.
pids=()
starting=
signal() {
	for p in ${pids[@]+"${pids[@]}"} ${starting:+${!:-}}; do
		kill "-$1" -- "-$p" 2>/dev/null
	done
}
# stop passes a signal to the lanes, waits for their subshells and exits;
# what is left of a lane then has the EXIT trap's TERM.
stop() {
	signal "$1"
	wait
	exit $((128 + $(kill -l "$1")))
}
trap 'signal TERM' EXIT
for sig in INT TERM HUP; do
	trap "stop $sig" "$sig"
done

# start i runs lane i in the background; its exit status and seconds land
# in $dir/i.result when it ends. A signal ends the lane's subshell by its
# trap, with the lane's status, not by the signal, so bash prints no job
# notice for it; the subshell's own notice of the lane's end by a signal
# goes to the lane's log.
start() {
	local i=$1
	echo "== lane started: ${names[$i]} (log: $dir/$i.log)"
	starting=1
	set -m
	(
		trap exit INT TERM HUP
		begin=$(date +%s)
		bash -c "${cmds[$i]}" </dev/null
		rc=$?
		echo "$rc $(($(date +%s) - begin))" >"$dir/$i.result"
	) >"$dir/$i.log" 2>&1 &
	pids[$i]=$!
	set +m
	starting=
}

# finish i waits for lane i's subshell, forgets its group and shows its
# log and how it ended, which rcs[i] and secs[i] keep; a lane that a
# signal ended has the subshell's status and no time.
rcs=()
secs=()
finish() {
	local i=$1 rc t=?
	wait "${pids[$i]}"
	rc=$?
	unset 'pids[i]'
	{ read -r rc t <"$dir/$i.result"; } 2>/dev/null
	rcs[$i]=$rc
	secs[$i]=$t
	echo "== lane ${names[$i]}: output"
	cat "$dir/$i.log"
	if [ "$rc" -eq 0 ]; then
		echo "== lane ${names[$i]}: passed in ${t}s"
	else
		echo "== lane ${names[$i]}: FAILED (exit $rc) in ${t}s; log: $dir/$i.log"
	fi
}

# ended i says whether lane i has ended, for a bash older than 5.1, which
# has no wait -p: its result is in, or its subshell is gone.
ended() {
	[ -e "$dir/$1.result" ] || ! kill -0 "${pids[$1]}" 2>/dev/null
}

if [ -n "${QUEUEY_SERIAL_LANES:-}" ]; then
	for i in "${!names[@]}"; do
		start "$i"
		finish "$i"
	done
elif [ "${BASH_VERSINFO[0]}" -gt 5 ] ||
	{ [ "${BASH_VERSINFO[0]}" -eq 5 ] && [ "${BASH_VERSINFO[1]}" -ge 1 ]; }; then
	for i in "${!names[@]}"; do
		start "$i"
	done
	while [ ${#pids[@]} -gt 0 ]; do
		pid=
		wait -n -p pid "${pids[@]}"
		for i in "${!pids[@]}"; do
			if [ "${pids[$i]}" = "$pid" ]; then
				finish "$i"
			fi
		done
	done
else
	for i in "${!names[@]}"; do
		start "$i"
	done
	while [ ${#pids[@]} -gt 0 ]; do
		# A background sleep, so that a signal's trap runs at once.
		sleep 1 &
		wait $!
		for i in "${!pids[@]}"; do
			if ended "$i"; then
				finish "$i"
			fi
		done
	done
fi

failed=0
echo "== lanes:"
for i in "${!names[@]}"; do
	if [ "${rcs[$i]}" -eq 0 ]; then
		echo "   passed  ${secs[$i]}s  ${names[$i]}"
	else
		echo "   FAILED  ${secs[$i]}s  ${names[$i]} (log: $dir/$i.log)"
		failed=1
	fi
done
exit $failed
