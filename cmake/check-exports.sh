#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# cmake/check-exports.sh LIBRARY.so INCLUDE-DIR: the shared library must
# export exactly the functions declared in the public headers -- no
# internal helper (ABI leak), none missing (a link error for users).
# Registered as the abi_exports test; the list lives in src/libviaduct.map.
set -euo pipefail

so=$1
incdir=$2
# Optional: the header files (names under incdir) this library implements;
# by default every header except mpi.h, which libviaduct_mpi implements.
shift 2
only=("$@")

# Prototypes start in column 0 in our headers; static inline ones are not
# exported.
headers() {
	if [ ${#only[@]} -gt 0 ]; then
		for h in "${only[@]}"; do echo "$incdir/$h"; done
	else
		find "$incdir" -name '*.h' ! -name mpi.h
	fi
}

declared() {
	{
		headers | xargs cat |
			grep -E '^[A-Za-z_][A-Za-z0-9_ *]*[ *][A-Za-z_][A-Za-z0-9_]*\(' |
			grep -vE '^(static|typedef|#)' |
			sed -E 's/^[^(]*[ *]([A-Za-z_][A-Za-z0-9_]*)\(.*/\1/'
		# exported data: `extern TYPE name[...];`
		headers | xargs cat |
			sed -nE 's/^extern [A-Za-z_][A-Za-z0-9_ ]*[ *]([A-Za-z_][A-Za-z0-9_]*)(\[[^]]*\])?;.*/\1/p'
	} | sort -u
}

exported() {
	nm -D --defined-only "$so" | awk '$2 ~ /^[TDBVWi]$/ { print $3 }' |
		sed 's/@.*//' | sort -u
}

decl=$(declared)
expo=$(exported)
extra=$(comm -13 <(echo "$decl") <(echo "$expo"))
missing=$(comm -23 <(echo "$decl") <(echo "$expo"))
status=0
if [ -n "$extra" ]; then
	echo "exported but not declared in $incdir (add to a header or keep local):"
	echo "$extra" | sed 's/^/  /'
	status=1
fi
if [ -n "$missing" ]; then
	echo "declared in $incdir but not exported (add to src/libviaduct.map):"
	echo "$missing" | sed 's/^/  /'
	status=1
fi
[ $status -eq 0 ] && echo "abi: $(echo "$expo" | wc -l) exported functions, all declared in $incdir"
exit $status
