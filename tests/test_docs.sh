#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What users read names the papers by title, never by the project's
# internal numbering or its issue tracker: README, docs/, the public
# headers, the manual pages and what the benchmarks print.
#
# Usage: test_docs.sh BUILD_DIR               (exit 0 pass, 1 fail)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
hits=$(cd "$SRC" && grep -rnIE '\b[Ss]eed [0-9]{3}\b|\b[Ii]ssue[- ][0-9]+\b|the issue'"'"'s|seeds/' \
	README.md docs include man bench 2>/dev/null)
if [ -n "$hits" ]; then
	echo "FAIL: internal references where users read:"
	echo "$hits"
	exit 1
fi
echo "ok: no internal seed or issue numbers in README, docs, headers, man pages, benchmarks"
