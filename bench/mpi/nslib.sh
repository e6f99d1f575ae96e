# SPDX-License-Identifier: MIT
#
# bench/mpi/nslib.sh -- "hosts" made of Linux namespaces on this machine,
# for the benchmarks across hosts (bench/mpi/hosts.sh, bench/mpi/scale.sh).
# Source it (as root), then
#     ns_hosts_up TAG COUNT NET   COUNT hosts (2..26) named TAG{A,B,...}PID
#                                 with addresses NET.K.1, NET.K.2, ... (K
#                                 from our pid): NS_NAME[i], NS_IP[i],
#                                 NS_SUBNET, NSDIR (/run/TAG.PID)
#     ns_in I CMD...              run CMD on host I (0-based, or a letter)
#     ns_agent FILE               write the launchers' remote agent
#     ns_reap                     kill whatever runs in the hosts
#     ns_cleanup                  remove everything (on EXIT by itself)
# Each host has its own network namespace, UTS namespace (hostname) and
# SysV-IPC namespace, kept in files under NSDIR: with the network
# namespace alone, UCX takes the hosts for one machine and talks through
# shared memory.  Two hosts are joined by one veth pair; more by a veth
# each to a bridge in a namespace of its own (traffic never leaves the
# namespaces made here).  ns_hosts_up returns 77 with the reason on
# stdout when namespaces are refused (not root), 1 on other failures.

NS_NAME=()
NS_IP=()
NS_SWITCH=
NSDIR=

ns_cleanup() {
	local ns f
	trap - EXIT INT TERM
	ns_reap
	for ns in "${NS_NAME[@]}" $NS_SWITCH; do
		ip netns del "$ns" 2>/dev/null
		rm -rf "/etc/netns/$ns"
	done
	[ -n "$NSDIR" ] || return 0
	for f in "$NSDIR"/*.uts "$NSDIR"/*.ipc; do
		[ -e "$f" ] && umount "$f" 2>/dev/null
	done
	rm -rf "$NSDIR"
}

# Processes left in the hosts after a failed or killed run (a remote proxy
# whose launcher timed out): ours, by the namespace they are in.
ns_reap() {
	local ns p
	for ns in "${NS_NAME[@]}"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	done
}

ns_letter() { printf "\\x$(printf %x $((65 + $1)))"; }

# ns_index I|LETTER: the host's 0-based index.
ns_index() {
	case $1 in
	[A-Z]) echo $(($(printf %d "'$1") - 65)) ;;
	*) echo "$1" ;;
	esac
}

ns_link_up() { ip -n "$1" -o link show eth0 | grep -q 'LOWER_UP.* state UP'; }

ns_hosts_up() {
	local tag=$1 count=$2 net=$3 k i ns l
	k=$(($$ % 250 + 1))
	if [ "$(id -u)" -ne 0 ]; then
		echo "SKIP: the namespace hosts need root (CAP_NET_ADMIN, CAP_SYS_ADMIN)"
		return 77
	fi
	for c in ip unshare nsenter; do
		command -v $c >/dev/null || { echo "SKIP: no $c command"; return 77; }
	done
	[ "$count" -ge 2 ] && [ "$count" -le 26 ] || { echo "nslib: $count hosts: 2 to 26"; return 1; }
	NSDIR=/run/$tag.$$
	NS_SUBNET=$net.$k.0/24
	for ((i = 0; i < count; i++)); do
		NS_NAME[i]=$tag$(ns_letter $i)$$
		NS_IP[i]=$net.$k.$((i + 1))
	done
	trap ns_cleanup EXIT
	trap 'exit 130' INT TERM
	mkdir -p "$NSDIR" || return 1
	for ns in "${NS_NAME[@]}"; do
		ip netns add "$ns" 2>/dev/null || { echo "SKIP: cannot create network namespaces here"; return 77; }
	done
	if [ "$count" = 2 ]; then
		ip -n "${NS_NAME[0]}" link add eth0 type veth peer name eth0 netns "${NS_NAME[1]}" || return 1
	else
		NS_SWITCH=${tag}S$$
		ip netns add "$NS_SWITCH" || return 1
		ip -n "$NS_SWITCH" link add br0 type bridge || return 1
		ip -n "$NS_SWITCH" link set br0 up
		for ((i = 0; i < count; i++)); do
			ip -n "$NS_SWITCH" link add "p$i" type veth peer name eth0 netns "${NS_NAME[i]}" || return 1
			ip -n "$NS_SWITCH" link set "p$i" master br0 up || return 1
		done
	fi
	for ((i = 0; i < count; i++)); do
		ns=${NS_NAME[i]}
		ip -n "$ns" addr add "${NS_IP[i]}/24" dev eth0
		ip -n "$ns" link set lo up
		ip -n "$ns" link set eth0 up
		# ip netns exec mounts these over /etc/hosts: the hostnames resolve.
		mkdir -p "/etc/netns/$ns"
		{
			echo "127.0.0.1 localhost"
			for ((l = 0; l < count; l++)); do echo "${NS_IP[l]} ${NS_NAME[l]}"; done
		} >"/etc/netns/$ns/hosts"
		touch "$NSDIR/$i.uts" "$NSDIR/$i.ipc"
		unshare --uts="$NSDIR/$i.uts" --ipc="$NSDIR/$i.ipc" hostname "$ns" ||
			{ echo "SKIP: cannot make persistent UTS/IPC namespaces"; return 77; }
	done
	# The links must be up at every end before a library lists its
	# interfaces (UCX leaves out one whose carrier is not up yet, and then
	# finds no path).
	for ((l = 0; l < 50; l++)); do
		for ((i = 0; i < count; i++)); do ns_link_up "${NS_NAME[i]}" || break; done
		[ "$i" = "$count" ] && return 0
		sleep 0.1
	done
	echo "nslib: the links between the hosts do not come up"
	return 1
}

# ns_in I|LETTER CMD...: run CMD on that host (all three namespaces).
ns_in() {
	local i
	i=$(ns_index "$1")
	shift
	ip netns exec "${NS_NAME[i]}" nsenter --uts="$NSDIR/$i.uts" --ipc="$NSDIR/$i.ipc" -- "$@"
}

# The launchers' remote agent, called as ssh would be: [options] HOST
# WORDS...; it skips the options, joins the words and runs them with bash
# inside that host.
ns_agent() {
	local i
	{
		echo '#!/bin/bash'
		echo 'while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done'
		echo 'case $1 in'
		for i in "${!NS_NAME[@]}"; do
			echo "${NS_IP[i]}|${NS_NAME[i]}) i=$i ns=${NS_NAME[i]} ;;"
		done
		echo '*) echo "nslib agent: unknown host $1" >&2; exit 255 ;;'
		echo 'esac'
		echo 'shift'
		echo "exec ip netns exec \"\$ns\" nsenter --uts=\"$NSDIR/\$i.uts\" --ipc=\"$NSDIR/\$i.ipc\" -- bash -c \"\$*\""
	} >"$1"
	chmod 700 "$1"
}
