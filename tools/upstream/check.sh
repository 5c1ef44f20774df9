#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# By hand, never from the build or the tests: compiles upstream Mooncake's
# real KvEventPublisher from a fetched repository, drives it as the master's
# call sites do (driver.cpp), serves its counters as the master's
# /kv_events/status, and compares the exporter's figures with the master's.
#
#   tools/upstream/check.sh MOONCAKE_GIT_DIR COMMIT main|conductor [OPS] [RATE]
#   tools/upstream/check.sh STORED_DIR main3818 [OPS] [RATE]
#
# e.g. tools/upstream/check.sh /work/.mirror/kvcache-ai+Mooncake/repo 3b5a594 main 100000 20000
#      tools/upstream/check.sh /work/.mirror/kvcache-ai+Mooncake/repo 19ffa6e conductor 100000 20000
#      tools/upstream/check.sh /tmp/up3818 main3818 100000 20000
# main3818 (main since PR #3818) is newer than any fetchable snapshot of the
# repository: STORED_DIR holds the four files the README names, at their
# repository paths (mooncake-store/include/..., mooncake-store/src/kv_event/...).
# Needs build/mooncake-kv-exporter; installs g++, glog and msgpack-cxx headers if missing.
# The driver's DRIVER_* variables pass through (driver.cpp); with DRIVER_CAPTURE=X.zmqcap
# the master's model and status are kept beside it as X.model.json and X.status.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${2:-}" = main3818 ]; then
  stored=$1 calls=main3818 ops=${3:-100000} rate=${4:-20000} def=-DMAIN_3818
else
  git_dir=$1 commit=$2 calls=$3 ops=${4:-100000} rate=${5:-20000}
  case $calls in main) def= ;; conductor) def=-DDIALECT_CONDUCTOR ;; *) echo "main, conductor or main3818" >&2; exit 2 ;; esac
fi
for p in g++ libgoogle-glog-dev libmsgpack-cxx-dev libzmq3-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$p" >/dev/null; }
done
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
if [ "$calls" = main3818 ]; then
  for f in src/kv_event/kv_event_publisher.cpp include/kv_event/kv_event_publisher.h \
           include/kv_event/kv_event_config.h include/tenant/tenant_id.h; do
    [ -f "$stored/mooncake-store/$f" ] || { echo "$stored/mooncake-store/$f: missing (tools/upstream/README.md)" >&2; exit 2; }
  done
  cp -r "$stored/mooncake-store" "$work/"
else
  git --git-dir="$git_dir" archive "$commit" mooncake-store/include mooncake-store/src/kv_event | tar -x -C "$work"
fi
g++ -std=c++20 -O2 -DMOONCAKE_ENABLE_KV_EVENTS=1 $def -I"$work/mooncake-store/include" \
  tools/upstream/driver.cpp "$work/mooncake-store/src/kv_event/kv_event_publisher.cpp" \
  -lzmq -lglog -lpthread -o "$work/driver"

port() { python3 -c 'import random; print(random.randint(20000, 30000))'; }
pub=$(port) admin=$(port) web=$(port)
echo '{"enabled":false}' > "$work/status.json"
python3 - "$admin" "$work/status.json" <<'PY' &
import http.server, sys
path = sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/kv_events/status":
            self.send_response(404); self.end_headers(); return
        body = open(path, "rb").read()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
build/mooncake-kv-exporter --zmq.endpoint "tcp://127.0.0.1:$pub" --master.url "http://127.0.0.1:$admin" \
  --web.listen-address "127.0.0.1:$web" --master.poll-interval 1s > "$work/exporter.log" 2>&1 &
sleep 0.5
"$work/driver" "tcp://127.0.0.1:$pub" "$ops" "$rate" "$work/status.json" "$work/truth.json"
if [ -n "${DRIVER_CAPTURE:-}" ]; then
  cp "$work/truth.json" "${DRIVER_CAPTURE%.zmqcap}.model.json"
  cp "$work/status.json" "${DRIVER_CAPTURE%.zmqcap}.status.json"
fi
sleep 3
curl -s "http://127.0.0.1:$web/metrics" > "$work/metrics.txt"
python3 - "$work/truth.json" "$work/metrics.txt" "$work/status.json" "$calls" <<'PY'
import json, re, sys
calls = sys.argv[4]
label = "published" if calls == "main3818" else "master"  # main3818: the master holds more (README)
truth = json.load(open(sys.argv[1]))
status = json.load(open(sys.argv[3]))
m = {}
for line in open(sys.argv[2]):
    g = re.match(r'^(\w+)\{(.*)\} (\S+)$', line)
    if g:
        m[(g.group(1), g.group(2))] = float(g.group(3))
def get(name, **labels):
    return sum(v for (n, l), v in m.items() if n == name and all('%s="%s"' % kv in l for kv in labels.items()))
dialect = [l for (n, l) in m if n == "mooncake_kv_publisher_dialect"]
print("publisher status:", status)
print("dialect:", dialect)
print("received %d messages, missing %d" % (get("mooncake_kv_messages_received_total"),
                                            get("mooncake_kv_sequence_missing_total")))
ok = True
for t, want in sorted(truth.items()):
    got = {k: get("mooncake_kv_objects" if k == "objects" else "mooncake_kv_objects_by_medium",
                  tenant_id=t, **({} if k == "objects" else {"medium": k})) for k in ("objects", "cpu", "disk")}
    same = got["objects"] == want["objects"]
    if "master" in want:  # main3818: the exporter must hold what was published, media too
        same &= (got["cpu"], got["disk"]) == (want["cpu"], want["disk"])
        print("%-9s master holds %s; erased unannounced %d, RemoveAll cleared %d withheld %d" % (
            t, want.pop("master"), want.pop("unannounced"), want.pop("cleared_published"),
            want.pop("cleared_withheld")))
    if "lives_whole" in want:  # conductor, main3818: lives a subscriber from the first message sees whole
        got["lives_whole"] = get("mooncake_kv_object_lifetime_seconds_count", tenant_id=t)
        got["lives_unseen"] = get("mooncake_kv_object_lifetime_unobserved_total", tenant_id=t)
        same &= (got["lives_whole"], got["lives_unseen"]) == (want["lives_whole"], want["lives_unseen"])
    ok &= same
    print("%-9s %s %s  exporter %s  %s" % (t, label, want, got, "equal" if same else "DIFFER"))
print("all counts equal the %s" % ("published ones" if calls == "main3818" else "master's") if ok else "counts differ")
PY
