#!/usr/bin/env bash
# The demo: builds, starts the bundled simulator (a Mooncake master's event
# publisher and status endpoint) and the exporter on loopback, shows a few
# live metric lines, and keeps both running until Ctrl-C.
#   tools/demo.sh            (DEMO_SECONDS=N stops by itself after N seconds)
set -euo pipefail
cd "$(dirname "$0")/.."

tools/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null

PUB=tcp://127.0.0.1:55557 STATUS=127.0.0.1:59003 WEB=127.0.0.1:19557
logdir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo; echo "demo stopped (logs were in $logdir)"
}
trap cleanup EXIT INT TERM

# --master.reconcile: tenant default is rebuilt from the master's own key
# listing, so it is exact from the first minute (and after every gap).
# --key.group-regex: objects per model, from LMCache-shaped keys
# (fmt@model@world_size@worker_id@chunk_hash; docs/key-groups.md).
build/mooncake-kv-exporter --zmq.endpoint "$PUB" --master.url "http://$STATUS" --master.reconcile \
  --master.reconcile-interval 5s --master.poll-interval 1s --web.listen-address "$WEB" \
  --key.group-regex '^(?<fmt>[^@]+)@(?<model>[^@]+)@' > "$logdir/exporter.log" 2>&1 &
pids+=($!)
# A master as upstream runs it, holding 6,000 objects from before the exporter
# started (no event will ever tell of them): four tenants, random stored/removed/upserts at
# 2,000 events/s (and removals that publish nothing, as upstream's BatchRemove),
# a queue-overflow burst, a publisher restart whose new process drops events
# before its first send, then steady traffic; keys as LMCache makes them, for
# three models.
build/tools/mooncake-kv-sim --pub "$PUB" --status "$STATUS" --seed 42 --queue 2000 --preload 6000 \
  --key-style lmcache --models 3 \
  --phase steady:rate=2000,seconds=3 --phase burst:events=5000 --phase sleep:seconds=1.5 \
  --phase restart --phase burst:events=3000 \
  --phase steady:rate=2000 > "$logdir/sim.log" 2>&1 &
pids+=($!)

for _ in $(seq 50); do curl -sf "http://$WEB/-/ready" >/dev/null && break; sleep 0.2; done
sleep 9
cat <<MSG

  exporter   http://$WEB/metrics     (landing page: http://$WEB/)
  simulator  events on $PUB, status on http://$STATUS/kv_events/status
  logs       $logdir

A few live lines:
MSG
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_(objects|messages_received_total|master_published_events_total|subscriber_connected)[{ ]' | head -8
echo
echo "Loss by cause (every missing sequence number in one bucket) and the restart, counted once:"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_(sequence_missing|queue_lost_events|transport_lost_messages|unattributed_lost_messages|master_restarts|publisher_resets)_total[{ ]|^mooncake_kv_sequence_behind[{ ]'
echo
echo "Reconciliation with the master (tenant default exact, what the stream alone had missed):"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_(reconciliations_total\{.*"ok"|reconcile_corrections_total\{|master_keys\{|(objects|state_stale)\{.*tenant_id="default")'
echo
echo "Who holds the cache: objects per key group (format/model), tenant default:"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_objects_by_key_group\{.*tenant_id="default"'
echo
echo "Ctrl-C stops both."
if [ -n "${DEMO_SECONDS:-}" ]; then sleep "$DEMO_SECONDS"; else wait; fi
