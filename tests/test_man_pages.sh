#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Every manual page in man/ renders without a warning (man -l, all
# warnings on, as groff sees it), and every VIPL call listed for vipl(3)
# is declared in vipl.h -- and every call vipl.h declares is listed.
#
# Usage: test_man_pages.sh BUILD_DIR          (exit 0 pass, 1 fail, 77 skip)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
command -v man >/dev/null || { echo "SKIP: no man"; exit 77; }
fails=0
for page in "$SRC"/man/*.[13]; do
	err=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=all -l "$page" 2>&1 >/dev/null)
	if [ -n "$err" ]; then
		echo "FAIL: $(basename "$page"): $err"
		fails=$((fails + 1))
	elif [ "$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$page" 2>/dev/null | wc -l)" -lt 10 ]; then
		echo "FAIL: $(basename "$page") renders to almost nothing"
		fails=$((fails + 1))
	else
		echo "ok: $(basename "$page")"
	fi
done
declared=$(grep -oE '\bVip[A-Z][A-Za-z]+[[:space:]]*\(' "$SRC/include/vipl.h" |
	sed 's/[[:space:](]//g' | sort -u)
listed=$(sort -u "$SRC/man/calls.txt")
if [ "$declared" != "$listed" ]; then
	echo "FAIL: man/calls.txt and vipl.h disagree:"
	diff <(echo "$declared") <(echo "$listed")
	fails=$((fails + 1))
else
	echo "ok: vipl(3) lists the $(wc -l <<<"$listed") calls vipl.h declares"
fi
[ "$fails" -eq 0 ]
