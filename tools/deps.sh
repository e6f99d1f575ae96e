#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tools/deps.sh PACKAGE...: install the Debian packages that are missing
# (`make deps` passes the list kept in the Makefile), and TEST_PACKAGES
# below.  Does nothing, and needs no network, when all are present.
set -euo pipefail

# What the tests need besides the Makefile's list: a real single-node
# Slurm (slurmctld, slurmd, srun) with munge, for tests/test_mpi_slurm.sh.
# That test starts its own daemons in a temporary folder; the services
# and /etc files these packages install are never used.
TEST_PACKAGES=(slurm-wlm munge)

installed() {
	dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

main() {
	local missing=() pkg sudo=()

	if ! command -v dpkg >/dev/null; then
		echo "deps: not a Debian system; install the equivalents of: $*" >&2
		return 0
	fi
	for pkg in "$@"; do
		installed "$pkg" || missing+=("$pkg")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		echo "deps: all ${#} packages present"
		return 0
	fi
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null; then
			echo "deps: missing packages: ${missing[*]}" >&2
			echo "deps: run as root: apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
			return 1
		fi
		sudo=(sudo)
	fi
	echo "deps: installing ${missing[*]}"
	# env, because sudo would drop an exported DEBIAN_FRONTEND.
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends "${missing[@]}"
}

main "$@" "${TEST_PACKAGES[@]}"
