#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# By hand, never from the build or the tests: compiles upstream Mooncake's
# real KvEventPublisher from a fetched repository, drives it as the master's
# call sites do (driver.cpp), serves its counters as the master's
# /kv_events/status, and compares the exporter's figures with the master's.
#
#   tools/upstream/check.sh MOONCAKE_GIT_DIR COMMIT main|conductor [OPS] [RATE]
#
# e.g. tools/upstream/check.sh /work/.mirror/kvcache-ai+Mooncake/repo 3b5a594 main 100000 20000
#      tools/upstream/check.sh /work/.mirror/kvcache-ai+Mooncake/repo 19ffa6e conductor 100000 20000
# Needs build/mooncake-kv-exporter; installs g++, glog and msgpack-cxx headers if missing.
# The driver's DRIVER_* variables pass through (driver.cpp); with DRIVER_CAPTURE=X.zmqcap
# the master's model and status are kept beside it as X.model.json and X.status.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
git_dir=$1 commit=$2 calls=$3 ops=${4:-100000} rate=${5:-20000}
case $calls in main) def= ;; conductor) def=-DDIALECT_CONDUCTOR ;; *) echo "main or conductor" >&2; exit 2 ;; esac
for p in g++ libgoogle-glog-dev libmsgpack-cxx-dev libzmq3-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$p" >/dev/null; }
done
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
git --git-dir="$git_dir" archive "$commit" mooncake-store/include mooncake-store/src/kv_event | tar -x -C "$work"
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
python3 - "$work/truth.json" "$work/metrics.txt" "$work/status.json" <<'PY'
import json, re, sys
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
    if "lives_whole" in want:  # conductor: lives a subscriber from the first message sees whole
        got["lives_whole"] = get("mooncake_kv_object_lifetime_seconds_count", tenant_id=t)
        got["lives_unseen"] = get("mooncake_kv_object_lifetime_unobserved_total", tenant_id=t)
        same &= (got["lives_whole"], got["lives_unseen"]) == (want["lives_whole"], want["lives_unseen"])
    ok &= same
    print("%-9s master %s  exporter %s  %s" % (t, want, got, "equal" if same else "DIFFER"))
print("all counts equal the master's" if ok else "counts differ")
PY
