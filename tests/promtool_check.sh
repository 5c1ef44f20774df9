#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# promtool check metrics on the exposition of replayed captures.
#   promtool_check.sh RENDER_DUMP PROMTOOL CAPTURE...
set -euo pipefail
dump=$1 promtool=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$dump" "$@" > "$out"
echo "$(grep -vc '^#' "$out") samples, $(grep -c '^# TYPE' "$out") families"
"$promtool" check metrics < "$out"
