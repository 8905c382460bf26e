# lib.sh holds what the set-up scripts share. Source it after defining
# die (print an error and exit).

# as_root runs its arguments as root: directly when root already, through
# sudo otherwise.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root to run: $* (and sudo is not installed)"
	fi
}

# apt_install installs Debian packages, without recommends and without
# questions.
apt_install() {
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

# detached runs its arguments with descriptors 3 to 9 closed. A daemon
# started from a script would otherwise keep what its caller had open for
# as long as it runs: a lock held with flock(1) around a test run, say,
# would never be released.
detached() {
	(
		for fd in 3 4 5 6 7 8 9; do
			eval "exec $fd>&-"
		done
		"$@"
	)
}
