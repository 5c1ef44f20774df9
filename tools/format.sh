#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Formats every C file git knows with the project's .clang-format.
#   tools/format.sh           rewrite the files
#   tools/format.sh --check   change nothing; list the files that differ, exit 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "${1:-}" = "--check" ]; then
	bad=()
	for f in "${files[@]}"; do
		clang-format "$f" | cmp -s - "$f" || bad+=("$f")
	done
	if [ ${#bad[@]} -gt 0 ]; then
		echo "format: not in the project's style (run tools/format.sh): ${bad[*]}" >&2
		exit 1
	fi
	echo "format: ${#files[@]} files in style"
	exit 0
fi
clang-format -i "${files[@]}"
