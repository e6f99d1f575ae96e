#!/bin/bash
# SPDX-License-Identifier: MIT
# An unprivileged user with Debian's default 8 MiB RLIMIT_MEMLOCK sends and
# receives 64 MiB with every large protocol, data checked: message buffers
# are registered without pinning on a provider that copies by virtual
# address.  (MPI_Send of 16 MiB used to fail with MPI_ERR_NO_MEM.)  With
# VIADUCT_MPI_PIN=1 the same send fails, and the message gives the limit,
# the size and what to do.  Root only (it becomes nobody); else skipped.
. "$(dirname "$0")/mpi/runlib.sh"
mt_need bigmsg
mt_as_nobody_setup bigmsg
as_nobody() {
	(cd / && env "$MT_NB_ENV" "$@" timeout -k 5 120 prlimit --memlock=8388608 \
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$MT_NB_VDRUN" -n 2 "$MT_NB_DIR/mpitest_bigmsg" 64 2>&1)
}
for proto in get rndv auto; do
	if out=$(as_nobody VIADUCT_MPI_PROTOCOL=$proto); then
		mt_ok "64 MiB, $proto, 8 MiB memlock, as nobody"
	else
		mt_bad "64 MiB, $proto, 8 MiB memlock, as nobody"
		echo "$out" | head -20 | sed 's/^/     | /'
	fi
done
out=$(as_nobody VIADUCT_MPI_PIN=1 VIADUCT_MPI_PROTOCOL=get)
if [ $? -ne 0 ] && grep -q "RLIMIT_MEMLOCK is 8388608 bytes" <<<"$out" &&
	grep -q "ulimit -l" <<<"$out" && grep -q "67108864-byte" <<<"$out"; then
	mt_ok "pinned: refused with the limit, the size and what to do"
else
	mt_bad "pinned: no clear error"
	echo "$out" | head -20 | sed 's/^/     | /'
fi
mt_done
