#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# protobuf-c's C for Prometheus's metrics.proto as Debian ships it
# (golang-github-prometheus-client-model-dev), with the timestamp.proto it
# imports, into OUTDIR, flat: what tests/proto_decode.c decodes with.
#   gen_metrics_pb.sh PROTOC_C METRICS_PROTO PROTO_INCLUDE OUTDIR
set -eu
protoc_c=$1 metrics=$2 include=$3 out=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$protoc_c" --c_out="$tmp" -I"$(dirname "$metrics")" -I"$include" "$metrics" google/protobuf/timestamp.proto
for f in metrics.pb-c.c metrics.pb-c.h google/protobuf/timestamp.pb-c.c google/protobuf/timestamp.pb-c.h; do
  sed 's|"google/protobuf/timestamp.pb-c.h"|"timestamp.pb-c.h"|' "$tmp/$f" >"$out/$(basename "$f")"
done
