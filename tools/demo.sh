#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The demo: builds, starts the bundled simulator (two highly available
# Mooncake masters: event publishers and admin endpoints) and the exporter on
# loopback, shows a few live metric lines, and keeps both running until Ctrl-C.
#   tools/demo.sh            (DEMO_SECONDS=N stops by itself after N seconds)
set -euo pipefail
cd "$(dirname "$0")/.."

tools/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null

PUB=tcp://127.0.0.1:55557 STATUS=127.0.0.1:59003 WEB=127.0.0.1:19557 WEB2=127.0.0.1:19558
PUB2=tcp://127.0.0.1:55558 STATUS2=127.0.0.1:59004
PUB3=tcp://127.0.0.1:55559 STATUS3=127.0.0.1:59005
PUB4=tcp://127.0.0.1:55560 STATUS4=127.0.0.1:59006
logdir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo; echo "demo stopped (logs were in $logdir)"
}
trap cleanup EXIT INT TERM

# One source of two masters (master= once per member): the exporter follows
# whichever leads, tracks each one's stream on its own, and counts a
# failover as such, not as a restart.
# reconcile=true: tenant default is rebuilt from the leader's own key
# listing, so it is exact from the first minute (and after every gap or failover).
# --key.group-regex: objects per model, from LMCache-shaped keys
# (fmt@model@world_size@worker_id@chunk_hash; docs/key-groups.md).
# A second source, "fresh": a new master the exporter watches from empty.
# A third, "listed": a master with tools/upstream/tenant-listing.patch, which
# lists every tenant's keys: every tenant is reconciled, not only default.
# --state.serve: it hands its state to the next exporter (at the end).
exporter_args=(--source "name=default,master=$PUB@http://$STATUS,master=$PUB2@http://$STATUS2,reconcile=true"
  --source "name=fresh,zmq=$PUB3,status=http://$STATUS3"
  --source "name=listed,zmq=$PUB4,status=http://$STATUS4,reconcile=true"
  --master.reconcile-interval 5s --master.poll-interval 1s
  --key.group-regex '^(?<fmt>[^@]+)@(?<model>[^@]+)@' --state.serve)
build/mooncake-kv-exporter "${exporter_args[@]}" --web.listen-address "$WEB" > "$logdir/exporter.log" 2>&1 &
first=$!
pids+=($first)
# A master as Mooncake main runs it (the `object` dialect: one event per put and
# per erased object, tier evictions and offloads silent), holding 6,000 objects
# from before the exporter started (no event will ever tell of them): four
# tenants, puts, removes, evictions, offloads and upserts at 2,000 operations/s,
# a queue-overflow burst, a publisher restart whose new process drops events
# before its first send, then a failover to the second master (its publisher
# numbers from 1 on its own endpoint) and steady traffic; keys as LMCache
# makes them, for three models; tenant quotas, some tenants over theirs, and
# 25 puts the new leader refuses for a quota.
build/tools/mooncake-kv-sim --pub "$PUB" --status "$STATUS" --pub "$PUB2" --status "$STATUS2" --seed 42 \
  --queue 2000 --preload 6000 --key-style lmcache --models 3 --quotas on --quota-bytes 4000000 \
  --phase steady:rate=2000,seconds=3 --phase burst:events=5000 --phase sleep:seconds=1.5 \
  --phase restart --phase burst:events=3000 --phase steady:rate=2000,seconds=2 --phase failover \
  --phase quota-reject:count=25 --phase steady:rate=2000 > "$logdir/sim.log" 2>&1 &
pids+=($!)

# The "fresh" master starts empty with the exporter already watching (Mooncake main's
# dialect, quotas on): once the exporter has proven its store empty from its answers
# (nothing published, no key, nothing published), it opens the gate; four tenants'
# traffic follows, then the master's quota eviction erases objects of tenant-2
# without an event, as main does.
gate=$logdir/fresh-gate
build/tools/mooncake-kv-sim --pub "$PUB3" --status "$STATUS3" --seed 7 --foreign-keys 0 --tenants 4 --keys 400 \
  --quotas on --quota-bytes 100000000 --phase "gate:$gate" --phase steady:rate=1000,seconds=4 \
  --phase quota-evict:count=300,tenant=2 --phase steady:rate=1000 > "$logdir/sim-fresh.log" 2>&1 &
pids+=($!)
# The "listed" master holds 2,000 objects from before the exporter started, as the
# first does, and lists any tenant (the patched master, --lists-tenants yes): its
# four tenants are stale at first, then each is rebuilt from its own listing.
build/tools/mooncake-kv-sim --pub "$PUB4" --status "$STATUS4" --seed 9 --tenants 4 --keys 1000 --preload 2000 \
  --lists-tenants yes --phase steady:rate=1000 > "$logdir/sim-listed.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -s "http://$WEB/metrics" | grep -q '^mooncake_kv_watched_from_empty{source="fresh"} 1' && break
  sleep 0.2
done
touch "$gate"

for _ in $(seq 50); do curl -sf "http://$WEB/-/ready" >/dev/null && break; sleep 0.2; done
# until the failover is done (the new leader waits for the exporter to reconnect)
for _ in $(seq 100); do
  curl -s "http://$WEB/metrics" | grep -q '^mooncake_kv_master_failovers_total{source="default"} 1' && break
  sleep 0.2
done
# until the fresh master's quota eviction has shown
for _ in $(seq 100); do
  curl -s "http://$WEB/metrics" | grep -q '^mooncake_kv_state_stale_reason{source="fresh".*reason="quota_eviction"' && break
  sleep 0.2
done
# until every tenant of the "listed" master has been reconciled
for _ in $(seq 100); do
  [ "$(curl -s "http://$WEB/metrics" | grep -c '^mooncake_kv_state_stale{source="listed".*} 0')" = 4 ] && break
  sleep 0.2
done
sleep 2
cat <<MSG

  exporter   http://$WEB/metrics     (landing page: http://$WEB/, the alerts' runbook: http://$WEB/runbook)
             OpenMetrics when asked: curl -H 'Accept: application/openmetrics-text' http://$WEB/metrics
  simulator  two masters: events on $PUB and $PUB2, admin on http://$STATUS and http://$STATUS2;
             source "fresh": a new master (events on $PUB3, admin on http://$STATUS3) watched from empty
             source "listed": a master that lists every tenant (events on $PUB4, admin on http://$STATUS4)
  logs       $logdir

A few live lines:
MSG
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_(objects|messages_received_total|master_published_events_total|subscriber_connected)[{ ]' | head -8
echo
echo "What a removed means on each master, told by its /kv_events/status fields (object: Mooncake main, media: the guide):"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_publisher_dialect\{'
echo
echo "Loss by cause (every missing sequence number in one bucket; tail_late: of a lost tail, came after all) and the restart, counted once:"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_(sequence_missing|queue_lost_events|transport_lost_messages|unattributed_lost_messages|sequence_tail_late_messages|master_restarts|publisher_resets)_total[{ ]|^mooncake_kv_sequence_behind[{ ]'
echo
echo "Reconciliation with the master (tenant default exact, what the stream alone had missed):"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_(reconciliations_total\{.*"ok"|reconcile_corrections_total\{|master_keys\{|(objects|state_stale)\{.*tenant_id="default")'
echo
echo "How far to trust the other tenants of source default (its master held objects before the exporter started;"
echo "upstream main sends no cleared, and lists tenant default only, so only default is reconciled): stale since"
echo "when, and why; and the masters' answer to the per-tenant listing (0: default only):"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_state_stale_(since_timestamp_seconds|reason)\{source="default"' | head -4
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_master_lists_tenants\{source="default"'
echo
echo "A master that lists every tenant (source listed: upstream with tools/upstream/tenant-listing.patch): it held"
echo "objects before the exporter started, and every tenant is exact, each rebuilt from its own listing while"
echo "events flow:"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_(master_lists_tenants|state_stale|objects|tenant_exact_transitions_total)\{source="listed"' | grep -v 'cause="\(cleared\|empty_store\)"'
echo
echo "A store watched from empty (source fresh): its master proved it empty before its publisher's first message,"
echo "so every tenant is exact and every life is seen whole, until its quota eviction erased objects of"
echo "tenant-2 without an event (Mooncake main): tenant-2 alone is stale, and says why:"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_(watched_from_empty\{|state_stale\{source="fresh"|state_stale_reason\{source="fresh"|tenant_evicted_bytes_total\{source="fresh",tenant_id="tenant-2"|object_lifetime_seconds_count\{source="fresh")'
echo
echo "Who holds the cache: objects per key group (format/model), tenant default:"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_objects_by_key_group\{.*tenant_id="default"'
echo
echo "Residency: how long tenant default keeps its objects (lives seen whole since a reconciliation made it"
echo "exact, by the publisher's clock; the others' lives end unseen: upstream main sends no cleared; source fresh"
echo "has every tenant's, above):"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_object_(lifetime_seconds_(count|sum)|lifetime_unobserved_total|age_mean_seconds)\{.*tenant_id="default"'
echo
echo "Two masters, one failover: who leads, each master's own stream:"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_(master_leader|master_failovers_total|master_view_version|last_sequence|publisher_resets_total)[{ ]'
echo
echo "Tenant quotas, from the leader: over quota is the normal state of a full cache; refused puts are what hurts:"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_tenant_(over_quota|quota_rejects_total)\{'
echo
echo "What this scrape cost the exporter, and how long scrapes held each source's lock while its ingestion waited:"
curl -s "http://$WEB/metrics" | grep -E '^mooncake_kv_exporter_last_scrape_(duration_seconds|bytes) |^mooncake_kv_scrape_lock_hold_seconds_(sum|count)\{'
echo
echo "Restarting the exporter without losing what it knows: a second exporter starts with --state.peer"
echo "http://$WEB, takes the first one's state, and trusts it for each master once that master's stream proves"
echo "it continues the copy; then the first stops.  The second (http://$WEB2) has source fresh as exact as"
echo "before (tenant-2 stale since its quota eviction, as it was; the old leader of source default, now a"
echo "standby, publishes nothing that could prove its stream: it waits):"
build/mooncake-kv-exporter "${exporter_args[@]}" --web.listen-address "$WEB2" --state.peer "http://$WEB" \
  > "$logdir/exporter2.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://$WEB2/-/ready" >/dev/null && break; sleep 0.2; done
for _ in $(seq 50); do
  curl -s "http://$WEB2/metrics" | grep -q '^mooncake_kv_bootstrap_joins_total{source="fresh",result="continued"} 1' && break
  sleep 0.2
done
kill "$first" 2>/dev/null || true
curl -s "http://$WEB2/metrics" | grep -E '^mooncake_kv_(bootstrap_total\{.*result="taken"|bootstrap_joins_total\{.*result="continued"|bootstrap_joins_waiting|state_stale\{source="fresh")'
grep -h 'state taken from a peer' "$logdir/exporter2.log" | head -3
echo
echo "Alerts: alerts/mooncake-kv.rules.yml (critical pages only when a store's figures are frozen or wrong for"
echo "everyone; a standby is never a page), routed and inhibited by alerts/alertmanager.example.yml, each"
echo "linking its runbook section (alerts/runbook-base.txt; this exporter serves it too, at /runbook)."
echo
echo "Ctrl-C stops everything (the second exporter now serves on http://$WEB2)."
if [ -n "${DEMO_SECONDS:-}" ]; then sleep "$DEMO_SECONDS"; else wait; fi
