# SPDX-License-Identifier: MIT
#
# Hosts on one machine: network namespaces joined by a veth pair (two
# hosts) or by a bridge (three), for the tests that need several hosts.
# Source it, then
#     vd_netns_up [3]        two hosts: $VD_NS_A ($VD_IP_A), $VD_NS_B ($VD_IP_B);
#                            with 3, also $VD_NS_C ($VD_IP_C), all three on
#                            a bridge in a namespace of its own
#     vd_in A|B|C CMD...     run CMD on that host
#     vd_link down|up        take B's end of the link down / up again
#     vd_netns_agent FILE    write a launcher's remote agent to FILE:
#                            called as ssh is ([options] HOST WORDS...), it
#                            runs the words with sh in that host
# Everything is removed when the script exits, or by a watchdog when it
# is killed.  Not root, or no
# CAP_NET_ADMIN: exit 77 with the reason.  Traffic stays in the
# namespaces made here (10.231.N.0/24, N from our pid).

vd_netns_cleanup() {
	local ns
	for ns in "$VD_NS_A" "$VD_NS_B" "${VD_NS_C:-}" "${VD_NS_S:-}"; do
		[ -z "$ns" ] || ip netns del "$ns" 2>/dev/null
	done
}

# The EXIT trap does not run when the test is killed outright (ctest's
# timeout, kill -9): a detached watchdog removes the namespaces once this
# shell is gone.  It holds none of the test's output pipes.
vd_netns_watchdog() {
	local owner=$$
	setsid bash -c "while kill -0 $owner 2>/dev/null; do sleep 1; done
		for ns in vdA$$ vdB$$ vdC$$ vdS$$; do ip netns del \$ns 2>/dev/null; done" \
		</dev/null >/dev/null 2>&1 &
}

# Hosts A, B and C, each with a veth to a bridge in namespace $VD_NS_S.
vd_netns_bridge() {
	local h
	VD_NS_C=vdC$$
	VD_NS_S=vdS$$
	VD_IP_C=${VD_IP_A%.1}.3
	ip netns add "$VD_NS_C" 2>/dev/null && ip netns add "$VD_NS_S" 2>/dev/null || {
		echo "SKIP: cannot create network namespaces here"
		exit 77
	}
	# A kernel without bridges cannot make the third host: skip (CI, which
	# has them, refuses the skip).
	ip -n "$VD_NS_S" link add br0 type bridge 2>/dev/null || {
		echo "SKIP: cannot create a bridge here (three hosts need one)"
		exit 77
	}
	ip -n "$VD_NS_S" link set br0 up
	for h in a:"$VD_NS_A" b:"$VD_NS_B" c:"$VD_NS_C"; do
		ip -n "$VD_NS_S" link add "p${h%%:*}" type veth peer name "v${h%%:*}" \
			netns "${h#*:}" || exit 1
		ip -n "$VD_NS_S" link set "p${h%%:*}" master br0 up || exit 1
	done
	ip -n "$VD_NS_C" addr add "$VD_IP_C/24" dev vc
	ip -n "$VD_NS_C" link set lo up
	ip -n "$VD_NS_C" link set vc up
	export VD_NS_C VD_NS_S VD_IP_C
}

vd_netns_up() {
	local n=$(( $$ % 250 + 1 ))
	VD_NS_A=vdA$$
	VD_NS_B=vdB$$
	VD_IP_A=10.231.$n.1
	VD_IP_B=10.231.$n.2
	if [ "$(id -u)" -ne 0 ]; then
		echo "SKIP: network namespaces need root (CAP_NET_ADMIN)"
		exit 77
	fi
	command -v ip >/dev/null || { echo "SKIP: no ip command (iproute2)"; exit 77; }
	trap vd_netns_cleanup EXIT
	vd_netns_watchdog
	if ! ip netns add "$VD_NS_A" 2>/dev/null || ! ip netns add "$VD_NS_B" 2>/dev/null; then
		echo "SKIP: cannot create network namespaces here"
		exit 77
	fi
	if [ "${1:-2}" = 3 ]; then
		vd_netns_bridge
	else
		ip -n "$VD_NS_A" link add va type veth peer name vb netns "$VD_NS_B" || exit 1
	fi
	ip -n "$VD_NS_A" addr add "$VD_IP_A/24" dev va
	ip -n "$VD_NS_B" addr add "$VD_IP_B/24" dev vb
	for ns in "$VD_NS_A" "$VD_NS_B"; do
		ip -n "$ns" link set lo up
	done
	ip -n "$VD_NS_A" link set va up
	ip -n "$VD_NS_B" link set vb up
	export VD_NS_A VD_NS_B VD_IP_A VD_IP_B
}

vd_in() {
	local host=$1
	shift
	case $host in
	A) ip netns exec "$VD_NS_A" "$@" ;;
	B) ip netns exec "$VD_NS_B" "$@" ;;
	C) ip netns exec "$VD_NS_C" "$@" ;;
	esac
}

vd_link() {
	ip -n "$VD_NS_B" link set vb "$1"
}

# Hydra's (and any ssh-like launcher's) way onto the hosts.
vd_netns_agent() {
	cat >"$1" <<EOS
#!/bin/bash
while [ \$# -gt 0 ] && [ "\${1#-}" != "\$1" ]; do shift; done
case \$1 in
$VD_IP_A) ns=$VD_NS_A ;;
$VD_IP_B) ns=$VD_NS_B ;;
${VD_IP_C:-none}) ns=${VD_NS_C:-none} ;;
*) echo "nsrsh: unknown host \$1" >&2; exit 255 ;;
esac
shift
exec ip netns exec "\$ns" sh -c "\$*"
EOS
	chmod 700 "$1"
}
