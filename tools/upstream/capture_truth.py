#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""By hand, after a capture (tools/upstream/README.md, "Captures"): turns
X.zmqcap, the master's model (X.model.json) and the publisher's status
(X.status.json) into the fixture's X.decoded.jsonl.gz and X.truth.json.

The lifetimes come from the wire, read here with Python's msgpack under the
issue's rules (a life begins with the event that makes an object present
while its tenant is exact, i.e. after a cleared, and ends with the one that
makes it absent), and are only written if they agree with the master's model:
the same objects and media per tenant, the same number of lives seen whole
and unseen.  So the truth rests on the model (what the master did) and the
publisher's own timestamps, not on the exporter.

For main since #3818 (the driver's main3818) the model gives both what was
published (which the wire must match, as above) and what the master holds
(`master`), which differs by the objects it erased without a removal on the
wire (`unannounced`); the truth keeps both, the RemoveAlls that published a
cleared and those that withheld it, and the model context every event carries.

usage: capture_truth.py X.zmqcap COMMIT DRIVER_COMMAND
Needs python3-msgpack (Debian); never run by the build or the tests."""
import collections
import gzip
import json
import os
import struct
import sys

import msgpack

# docs/guide.md, "Residency": the buckets of mooncake_kv_object_lifetime_seconds
BOUNDS_S = [1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400]


def records(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        n, = struct.unpack_from(">I", data, at)
        at += 4
        frames = []
        for _ in range(n):
            ln, = struct.unpack_from(">I", data, at)
            frames.append(data[at + 4:at + 4 + ln])
            at += 4 + ln
        yield frames


def main():
    cap, commit, command = sys.argv[1:4]
    base = cap[:-len(".zmqcap")]
    model = json.load(open(base + ".model.json"))
    status = json.load(open(base + ".status.json"))

    exact = collections.defaultdict(bool)
    media = collections.defaultdict(dict)     # tenant -> key -> set of media
    birth = collections.defaultdict(dict)     # tenant -> key -> ms, while the tenant is exact
    lives = collections.defaultdict(list)     # tenant -> lifetimes in ms
    unseen = collections.Counter()
    clears, found = collections.Counter(), collections.Counter()  # cleared events, objects they found
    stored, removed, dups = collections.Counter(), collections.Counter(), collections.Counter()
    backends, messages, events, last_seq = set(), 0, 0, 0
    contexts = set()  # (model_name, lora_name, block_size, additional_salt, dp_rank, batch dp_rank)

    def end(t, k, ts):
        b = birth[t].pop(k, None)
        if b is None:
            unseen[t] += 1
        else:
            assert ts >= b, (t, k, b, ts)
            lives[t].append(ts - b)

    with gzip.open(base + ".decoded.jsonl.gz", "wt", compresslevel=9) as out:
        for i, frames in enumerate(records(cap)):
            seq, = struct.unpack(">Q", frames[1])
            assert seq == last_seq + 1, "a gap in the capture at %d" % seq
            last_seq = seq
            payload = msgpack.unpackb(frames[2], raw=False, strict_map_key=False)
            out.write(json.dumps({"msg_index": i, "frame_count": len(frames), "topic_hex": frames[0].hex(),
                                  "seq": seq, "payload_len": len(frames[2]), "payload": payload}) + "\n")
            messages += 1
            for ev in payload[1]:
                events += 1
                t, ts, kind = ev["tenant_id"], ev["timestamp"], ev["event_type"]
                backends.add(ev["backend_id"])
                contexts.add(tuple(ev.get(f) for f in ("model_name", "lora_name", "block_size", "additional_salt",
                                                       "dp_rank")) + (payload[2],))
                if kind == "cleared":
                    clears[t] += 1
                    found[t] += len(media[t])  # RemoveAll published each object's removal first
                    for k in list(media[t]):
                        end(t, k, ts)
                    media[t].clear()
                    exact[t] = True
                    continue
                k, m = ev["object_key"], ev["medium"]
                held = media[t].setdefault(k, set())
                if kind == "stored":
                    if not held and exact[t]:
                        birth[t][k] = ts
                    stored[t] += 1
                    dups[t] += m in held  # a commit announces every medium again
                    held.add(m)
                else:
                    removed[t] += 1
                    assert m in held, ("a removal of a medium not held", t, k, m)
                    held.discard(m)
                    if not held:
                        end(t, k, ts)
                if not held:
                    del media[t][k]

    assert len(backends) == 1
    assert len(contexts) == 1, contexts  # one publisher, one configuration
    tenants = {}
    for t, want in sorted(model.items()):
        held = media[t].values()
        got = {"objects": len(held), "cpu": sum("cpu" in h for h in held),
               "disk": sum("disk" in h for h in held), "lives_whole": len(lives[t]), "lives_unseen": unseen[t]}
        mine = {k: want[k] for k in got}
        assert got == mine, ("the wire and the master's model disagree", t, got, mine)
        if "cleared_published" in want:
            assert clears[t] == want["cleared_published"], ("cleared", t, clears[t], want)
        le = [sum(1 for x in lives[t] if x <= b * 1000) for b in BOUNDS_S]
        tenants[t] = dict(got, both=sum(len(h) == 2 for h in held), cleared=clears[t], cleared_found_objects=found[t],
                          lifetime_count=len(lives[t]),
                          lifetime_sum_ms=sum(lives[t]), lifetime_le=le)
        if "master" in want:  # main3818: what the master holds, and the wire's event counts
            tenants[t].update({k: want[k] for k in ("master", "unannounced", "cleared_withheld")},
                              stored_events=stored[t], removed_events=removed[t], stored_duplicates=dups[t])
    truth = {
        "made_by": "tools/upstream/check.sh with the driver's capture, then tools/upstream/capture_truth.py",
        "upstream_commit": commit,
        "driver": command,
        "backend_id": backends.pop(),
        "publisher_stats": status,
        "model_context": dict(zip(("model_name", "lora_name", "block_size", "additional_salt", "dp_rank",
                                   "batch_dp_rank"), contexts.pop())),
        "messages": messages,
        "events": events,
        "bucket_bounds_s": BOUNDS_S,
        "tenants": tenants,
    }
    with open(base + ".truth.json", "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    print("%d messages, %d events; per tenant: %s" % (messages, events, {
        t: (v["objects"], v["lifetime_count"], v["lives_unseen"]) for t, v in tenants.items()}))


if __name__ == "__main__":
    main()
