#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The demo: builds, starts the bundled simulator (three Mooncake stores on
# loopback: one of two highly available masters as Mooncake main runs them, one
# a master still on release v0.3.12) and the exporter, and tells what the
# exporter sees in four stages, each a table read from its /metrics
# by tools/demo_view.py: the start, trouble (a queue overflow, a publisher
# restart, a silent quota eviction), a failover, and a handover to a second
# exporter (started with --metrics.all-series). After the first table, a line
# on the protobuf exposition with native histograms; after the fourth, what the
# tenants cost in series on each exporter. Then it keeps the table up to date
# until Ctrl-C.
#   tools/demo.sh            (DEMO_SECONDS=N: stops by itself N seconds after the story)
# Also read: KV_EXPORTER, KV_SIM (binaries to run instead of building build/),
# DEMO_PORT_BASE (ten loopback ports from there instead of the usual ones),
# DEMO_WAIT_FACTOR (multiplies every wait's bound: slow builds), DEMO_JSON
# (a file the viewer appends each table to, with the /metrics text it read),
# DEMO_SCREENSHOT (a PNG file: headless Chromium takes /status there after the
# failover, 1280 px wide; how docs/status-page.png is made), DEMO_KEEP_LOGS
# (keep the log folder after a clean stop too; a failed run always keeps it).
# Every line it prints fits 80 columns (the terminal's width, else COLUMNS).
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."
shot=${DEMO_SCREENSHOT:-}
if [ -n "$shot" ]; then
  case $shot in /*) ;; *) shot=$caller/$shot ;; esac
  browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
  if [ -z "$browser" ]; then
    echo "demo: DEMO_SCREENSHOT needs a headless Chromium (Debian: apt-get install chromium)" >&2
    exit 1
  fi
fi

if [ -z "${KV_EXPORTER:-}" ] || [ -z "${KV_SIM:-}" ]; then
  tools/deps.sh demo  # what the demo needs only: tools/test.sh installs the test tools
  echo "building (meson + ninja in build/): under a minute the first time, seconds after"
  # the simulator comes with -Dtests=true; only the two programs are built
  if [ -d build ]; then meson configure build -Dtests=true >/dev/null; else meson setup build >/dev/null; fi
  # on a terminal, ninja's progress on one line; its whole output only if it fails
  built=$(mktemp)
  trap 'rm -f "$built"' EXIT
  progress() {
    while IFS= read -r line; do
      case $line in "["*/*"]"*) printf '\r  %s' "${line%%]*}]" ;; esac
    done
    printf '\r\033[K'
  }
  ok=true
  if [ -t 1 ]; then
    ninja -C build mooncake-kv-exporter tools/mooncake-kv-sim 2>&1 | tee "$built" | progress || ok=false
  else
    ninja -C build mooncake-kv-exporter tools/mooncake-kv-sim >"$built" 2>&1 || ok=false
  fi
  if ! $ok; then
    # Ctrl-C: ninja stops, says so and exits; bash then goes on (its child
    # did not die of the signal), so the demo stops here, without the log
    tail -n 1 "$built" | grep -q "interrupted by user" && exit 130
    cat "$built"
    echo "demo: the build failed" >&2
    exit 1
  fi
  rm -f "$built"
  trap - EXIT
  echo "built; $(build/mooncake-kv-exporter --version | sed -n 's/^gzip: //p') gzips its scrapes"
fi
exporter=${KV_EXPORTER:-build/mooncake-kv-exporter}
sim=${KV_SIM:-build/tools/mooncake-kv-sim}
view=(python3 -S tools/demo_view.py)  # -S: the standard library only, a quicker start

if [ -n "${DEMO_PORT_BASE:-}" ]; then
  b=$DEMO_PORT_BASE
  ports=($b $((b + 1)) $((b + 2)) $((b + 3)) $((b + 4)) $((b + 5)) $((b + 6)) $((b + 7)) $((b + 8)) $((b + 9)))
else
  ports=(19557 19558 55557 55558 55559 55560 59003 59004 59005 59006)
fi
WEB=127.0.0.1:${ports[0]} WEB2=127.0.0.1:${ports[1]}
PUB=tcp://127.0.0.1:${ports[2]} STATUS=127.0.0.1:${ports[6]}
PUB2=tcp://127.0.0.1:${ports[3]} STATUS2=127.0.0.1:${ports[7]}
PUB3=tcp://127.0.0.1:${ports[4]} STATUS3=127.0.0.1:${ports[8]}
PUB4=tcp://127.0.0.1:${ports[5]} STATUS4=127.0.0.1:${ports[9]}
"${view[@]}" ports "${ports[@]}"

logdir=$(mktemp -d "${TMPDIR:-/tmp}/mooncake-kv-demo.XXXXXX")
pids=()
alive=()  # --alive PID:NAME for every wait: a process that dies fails it at once
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for _ in $(seq 50); do
    local left=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && left=1; done
    [ $left -eq 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null || true
  echo
  if [ "$rc" -ne 0 ]; then
    for f in "$logdir"/*.log; do
      [ -s "$f" ] && { echo "--- the last lines of $f:"; tail -n 5 "$f"; }
    done >&2
    echo "demo: failed (exit $rc); every process stopped; its logs are kept, to" >&2
    echo "  see why, in $logdir" >&2
  elif [ -n "${DEMO_KEEP_LOGS:-}" ]; then
    echo "demo stopped: every process it started has exited; its logs are kept"
    echo "  (DEMO_KEEP_LOGS) in $logdir"
  else
    rm -rf -- "$logdir"
    echo "demo stopped: every process it started has exited; its logs removed"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 0' INT      # Ctrl-C: a clean stop
trap 'exit 143' TERM
start() {  # name, argv...: runs it in the background, its output in $logdir/name.log
  local name=$1; shift
  "$@" > "$logdir/$name.log" 2>&1 &
  pids+=($!)
  alive+=(--alive "$!:$name")
}
# wait_for URL WHAT SECONDS CONDITION...: until every condition holds on URL's
# /metrics (tools/demo_view.py wait; DEMO_WAIT_FACTOR scales the bound), else
# exit 1 saying what did not come
wait_for() {
  local url=$1 what=$2 secs=$3; shift 3
  "${view[@]}" wait --what "$what" --timeout "$secs" "${alive[@]}" "http://$url" "$@"
}
# stage URL TITLE WHAT SECONDS CONDITION...: as wait_for, then the table of
# the answer that showed the conditions, under its title
stage() {
  local url=$1 title=$2 what=$3 secs=$4; shift 4
  "${view[@]}" show --title "$title" --since "$t0" ${DEMO_JSON:+--json "$DEMO_JSON"} ${legend:+--legend} \
    --what "$what" --timeout "$secs" "${alive[@]}" "http://$url" "$@"
  echo
}
t0=$(date +%s.%N)
legend=1  # under the first table only

# One exporter, three sources:
# - default: one store of two HA masters (master= once per member), as
#   Mooncake main runs them (since #3818, the guide's media dialect). The
#   exporter follows whichever leads, tracks each one's stream on its own and
#   counts a failover as such, not as a restart. reconcile=true: tenant
#   default is rebuilt from the leader's own key listing (upstream lists no
#   other tenant). --key.group-regex: objects per model, from LMCache-shaped
#   keys (fmt@model@world_size@worker_id@chunk_hash; docs/key-groups.md).
# - fresh: a new master the exporter watches from empty, still on release
#   v0.3.12 (the object dialect): the demo shows both releases.
# - listed: a master with tools/upstream/tenant-listing.patch, which lists
#   every tenant's keys: every tenant is reconciled, not only default.
# --state.serve: it hands its state to the next exporter (stage 4).
exporter_args=(--source "name=default,master=$PUB@http://$STATUS,master=$PUB2@http://$STATUS2,reconcile=true"
  --source "name=fresh,zmq=$PUB3,status=http://$STATUS3"
  --source "name=listed,zmq=$PUB4,status=http://$STATUS4,reconcile=true"
  --master.reconcile-interval 5s --master.poll-interval 1s
  --key.group-regex '^(?<fmt>[^@]+)@(?<model>[^@]+)@' --state.serve)
start exporter "$exporter" "${exporter_args[@]}" --web.listen-address "$WEB"

# default's masters, as Mooncake main runs them (since #3818, the guide's
# media dialect: every medium of a put, every removal and tier eviction
# published, the model context of the master's configuration on every event,
# here meta-llama/Llama-3.1-8B-Instruct with blocks of 16 tokens): 6,000
# objects from before the exporter started (no event will ever tell of them),
# four tenants at 2,000 operations/s, keys as LMCache makes them for two
# releases of that model, tenant quotas (some tenants over theirs). The
# story's cues are files: on "trouble", a 5,000-event burst overflows the
# queue of 2,000, the publisher restarts and its new process drops events
# before its first send; on "failover", the second master leads (its
# publisher numbers from 1 on its own endpoint) and refuses 25 puts for a
# quota.
start sim-default "$sim" --pub "$PUB" --status "$STATUS" --pub "$PUB2" --status "$STATUS2" --seed 42 \
  --mooncake main --model-name meta-llama/Llama-3.1-8B-Instruct --block-size 16 \
  --queue 2000 --preload 6000 --key-style lmcache --models 2 --quotas on --quota-bytes 4000000 \
  --phase "steady:rate=2000,until=$logdir/go-trouble" --phase burst:events=5000 --phase sleep:seconds=1.5 \
  --phase restart --phase burst:events=3000 --phase "steady:rate=2000,until=$logdir/go-failover" \
  --phase failover --phase quota-reject:count=25 --phase steady:rate=2000
# fresh's master starts empty with the exporter already watching: a master
# still on release v0.3.12 (the object dialect: one event per put and per
# erased object, no model context, tier changes silent), quotas on. It waits
# until the exporter has proven its store empty from its answers, then four
# tenants' traffic; on "trouble" its quota eviction erases objects of
# tenant-2, which v0.3.12 publishes nothing for.
start sim-fresh "$sim" --pub "$PUB3" --status "$STATUS3" --seed 7 --mooncake v0.3.12 --foreign-keys 0 \
  --tenants 4 --keys 400 \
  --quotas on --quota-bytes 100000000 --phase "gate:$logdir/fresh-gate" \
  --phase "steady:rate=1000,until=$logdir/go-trouble" --phase quota-evict:count=300,tenant=2 --phase steady:rate=1000
# listed's master (Mooncake main, serving another model) holds 2,000 objects
# from before the exporter started and lists any tenant (the patched master,
# --lists-tenants yes): its four tenants are stale at first, then each is
# rebuilt from its own listing.
start sim-listed "$sim" --pub "$PUB4" --status "$STATUS4" --seed 9 --tenants 4 --keys 1000 --preload 2000 \
  --mooncake main --model-name Qwen/Qwen2.5-7B-Instruct --block-size 32 \
  --lists-tenants yes --phase steady:rate=1000

cat <<MSG

Started: the exporter and three simulated Mooncake stores. While the demo runs
(Ctrl-C stops it):
  http://$WEB/status   what the exporter knows, for a person
  http://$WEB/metrics  the same for Prometheus (the tables below)
  http://$WEB/runbook  what each alert means and what to do
  every process's log, removed when the demo stops cleanly:
  $logdir/

MSG

wait_for "$WEB" "the exporter to prove fresh's store empty" 20 ready \
  'mooncake_kv_watched_from_empty{source="fresh"} == 1'
touch "$logdir/fresh-gate"
stage "$WEB" "1/4 Start: the exporter has just joined three simulated stores, default (two HA masters \
as Mooncake main runs them, since #3818 the guide's media dialect, serving Llama-3.1-8B; they already held \
thousands of objects it never saw stored), fresh (a new, empty master still on release v0.3.12, the object \
dialect) and listed (a master of main with tools/upstream/tenant-listing.patch, which lists every tenant's \
keys: upstream lists tenant default only); notice the model each store's events \
name, every tenant it could rebuild from a key listing or watch from empty exact already, and default's \
other tenants stale since startup." \
  "tenant default of source default reconciled, every tenant of listed exact, fresh's traffic" 20 \
  'mooncake_kv_state_stale{source="default",tenant_id="default"} == 0' \
  'count(mooncake_kv_state_stale{source="listed"} == 0) == 4' \
  'count(mooncake_kv_objects{source="fresh"} > 0) == 4'
legend=
# what a Prometheus with --enable-feature=native-histograms gets: the protobuf
# exposition, every histogram native (once a tenant has seen a life whole)
"${view[@]}" formats ${DEMO_JSON:+--json "$DEMO_JSON"} --what "a life seen whole" --timeout 20 "${alive[@]}" \
  "http://$WEB" 'count(mooncake_kv_object_lifetime_seconds_count > 0) >= 1'
echo

touch "$logdir/go-trouble"
wait_for "$WEB" "default's publisher restart, its queue's loss and fresh's quota eviction" 20 \
  'mooncake_kv_master_restarts_total{source="default"} >= 1' \
  'mooncake_kv_queue_lost_events_total{source="default"} > 0' \
  'mooncake_kv_state_stale_reason{source="fresh",tenant_id="tenant-2",reason="quota_eviction"} == 1'
stage "$WEB" "2/4 Trouble: default's leader got a burst of 5,000 events for a queue of 2,000 (3,000 \
dropped) and then restarted its publisher, whose new process dropped more before its first send, and \
fresh's master, a master still on release v0.3.12, whose quota eviction publishes nothing, evicted objects \
of tenant-2 for quota; notice the loss counted by cause, tenant default rebuilt from its master's listing \
again, and fresh's tenant-2 stale since the eviction." \
  "tenant default of source default rebuilt after the loss" 20 \
  'mooncake_kv_state_stale{source="default",tenant_id="default"} == 0'

touch "$logdir/go-failover"
wait_for "$WEB" "the failover to default's second master" 20 \
  'mooncake_kv_master_failovers_total{source="default"} >= 1' \
  "mooncake_kv_master_leader{source=\"default\",member=\"$STATUS2\"} == 1" \
  "mooncake_kv_subscriber_connected{source=\"default\",member=\"$STATUS2\"} == 1"
# The second exporter starts now: it connects to every master first, and
# gives a standby that publishes nothing 5 s before it asks for the state.
# --metrics.all-series: it serves every series, as exporters did before they
# served a tenant's series only while they carry news (stage 4 compares).
start exporter-2 "$exporter" "${exporter_args[@]}" --web.listen-address "$WEB2" --state.peer "http://$WEB" \
  --metrics.all-series
stage "$WEB" "3/4 Failover: default's first master stepped down and the second leads now, refusing 25 \
puts for quota; notice the leader, one failover counted (not a restart), the new leader's own sequence, and \
tenant default rebuilt from the new leader's listing." \
  "the new leader's 25 refused puts and tenant default rebuilt from its listing" 20 \
  'mooncake_kv_tenant_quota_rejects_total{source="default"} >= 25' \
  'mooncake_kv_state_stale{source="default",tenant_id="default"} == 0'
if [ -n "$shot" ]; then
  # what a person sees at this point, as the README shows it: the page at 1280 px,
  # tall enough for every source and tenant
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$logdir/chromium" --hide-scrollbars --window-size=1280,2000 \
    --screenshot="$shot" "http://$WEB/status" > "$logdir/chromium.log" 2>&1 || {
    echo "demo: chromium could not take the screenshot (see $logdir/chromium.log)" >&2
    exit 1
  }
  echo "The status page as it is now, in:"
  echo "  $shot"
  echo
fi

stage "$WEB2" "4/4 Handover: a second exporter, http://$WEB2, started with --state.peer http://$WEB \
and took its state instead of starting blind; notice fresh's tenants as exact as before, each master's \
stream proving it continues the copy, and default's old leader, a standby that publishes nothing, still \
waiting; both exporters keep serving." \
  "the second exporter to take the first one's state" 30 ready \
  'mooncake_kv_bootstrap_total{result="taken"} == 3' \
  'mooncake_kv_bootstrap_joins_total{result="continued"} == 3'
"${view[@]}" series ${DEMO_JSON:+--json "$DEMO_JSON"} "http://$WEB" "http://$WEB2"
echo

echo "That is the story. Both exporters keep serving until the demo stops (the"
echo "second took over from the first):"
echo "  the first:  http://$WEB/status  http://$WEB/metrics"
echo "  the second: http://$WEB2/status  http://$WEB2/metrics"
echo "  the runbook: http://$WEB/runbook"
echo "Alerts for these figures: alerts/mooncake-kv.rules.yml, each linking its"
echo "runbook section. Many clusters on one Prometheus or VictoriaMetrics:"
echo "docs/fleet.md, and the fleet dashboard, dashboards/mooncake-kv-fleet.json."
echo
"${view[@]}" watch "http://$WEB2" --seconds "${DEMO_SECONDS:-0}" --every 2 --since "$t0" \
  --title "Live: the second exporter's table, as the stores keep running" \
  ${DEMO_JSON:+--json "$DEMO_JSON"}
