#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The performance benchmark of docs/performance.md (issue: performance).

    ninja -C build && python3 tools/bench/run_bench.py [--quick]
    python3 tools/bench/run_bench.py --groups     (only the key-group regex over ZMQ)
    python3 tools/bench/run_bench.py --cpu        (only CPU per event against the floor, paced)
    python3 tools/bench/run_bench.py --ladder     (only the paced ladder, the floor beside it)
    python3 tools/bench/run_bench.py --budget     (only the cores a paced 1M events/s takes: sender, floor, exporter)
    python3 tools/bench/run_bench.py --scrape     (only the exporter's whole scrape of 10,000 tenants)

Runs on loopback only, every phase bounded in events and time, and prints
the machine, then each measurement.  Numbers are printed, never asserted."""
import gzip
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
B = os.path.join(ROOT, "build")
EXPORTER = os.path.join(B, "mooncake-kv-exporter")
BLASTER = os.path.join(B, "tools", "mooncake-kv-blaster")
BENCH = os.path.join(B, "tools", "mooncake-kv-bench")
BENCH_MEM = os.path.join(B, "tools", "bench-memory")
QUICK = "--quick" in sys.argv
KEYS = 1000000
# The floor's allocator keeps 1 MiB free at an arena's top, as the exporter's
# does (main.c, raise_malloc_thresholds): the same receive.
FLOOR_ENV = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.trim_threshold=1048576")


CHILDREN = []


def spawn(*args, **kwargs):
    """subprocess.Popen, remembered: whatever ends the benchmark (an error, a
    closed pipe, Ctrl-C, SIGTERM), main's `finally` stops what is still
    running, so no exporter or sender outlives it."""
    p = subprocess.Popen(*args, **kwargs)
    CHILDREN.append(p)
    return p


def stop_children():
    for p in CHILDREN:
        if p.poll() is None:
            p.kill()
            p.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def machine():
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    return "%s, %d cores, %s" % (model, os.cpu_count(), os.uname().release)


def out(what, **kv):
    print(json.dumps(dict(what=what, **kv)), flush=True)


class Exporter:
    def __init__(self, extra=()):
        self.zmq_port, self.port = free_port(), free_port()
        self.endpoint = "tcp://127.0.0.1:%d" % self.zmq_port
        self.proc = spawn([EXPORTER, "--zmq.endpoint", self.endpoint, "--web.listen-address",
                                      "127.0.0.1:%d" % self.port, "--limits.max-objects", "20000000",
                                      "--log.level", "error"] + list(extra), stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                self.scrape()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("exporter did not start")

    def scrape(self, timeout=5, headers=None, raw=False):
        """The body, gunzipped: text, or bytes with raw (the protobuf exposition)."""
        req = urllib.request.Request("http://127.0.0.1:%d/metrics" % self.port, headers=headers or {})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
            body = gzip.decompress(body) if r.headers.get("Content-Encoding") == "gzip" else body
            return body if raw else body.decode()

    def figures(self):
        text = self.scrape()
        f = {"applied": 0.0}
        for line in text.splitlines():
            if line.startswith("mooncake_kv_events_received_total{"):
                f["applied"] += float(line.rsplit(" ", 1)[1])
            for name in ("messages_received_total", "sequence_missing_total", "last_sequence",
                         "transport_lost_events_total", "tracked_objects"):
                if line.startswith("mooncake_kv_" + name):
                    f[name] = float(line.rsplit(" ", 1)[1])
        return f

    def ingest_cpu(self):
        """utime + stime of the ingest thread, in seconds."""
        for tid in os.listdir("/proc/%d/task" % self.proc.pid):
            base = "/proc/%d/task/%s/" % (self.proc.pid, tid)
            if open(base + "comm").read().strip().startswith("kvx-in:"):
                fields = open(base + "stat").read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return 0.0

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def blast(exp, events, rate=0, load=False, scrape_every=None, extra=(), keys=KEYS):
    """Runs the blaster against the exporter and waits until the exporter has
    applied all it received.  Nothing samples the exporter meanwhile, except
    the optional scraper (a plain GET, as Prometheus does)."""
    argv = [BLASTER, "--pub", exp.endpoint, "--keys", str(keys), "--events", str(events), "--rate", str(rate)]
    argv += list(extra)
    if load:
        argv.append("--load")
    before, cpu0 = exp.figures(), exp.ingest_cpu()
    t0 = time.time()
    p = spawn(argv, stdout=subprocess.PIPE, text=True)
    scrapes = []
    while True:
        pid, _, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            p.returncode = 0
            break
        if scrape_every:
            t = time.time()
            body = exp.scrape()
            scrapes.append((time.time() - t, len(body)))
            time.sleep(max(0.0, scrape_every - (time.time() - t)))
        else:
            time.sleep(0.05)
    report = json.loads(p.stdout.read())
    # drained: the last sequence arrived, or nothing changed for 0.5 s
    last, t_last = None, time.time()
    while time.time() - t_last < 0.5:
        f = exp.figures()
        if f.get("last_sequence") == report["last_seq"]:
            t_last = time.time()
            break
        if f["applied"] != last:
            last, t_last = f["applied"], time.time()
        time.sleep(0.02)
    after = exp.figures()
    applied = after["applied"] - before["applied"]
    return dict(report=report, applied=applied, wall=t_last - t0, cpu=exp.ingest_cpu() - cpu0,
                sender_cpu=usage.ru_utime + usage.ru_stime,
                missing=after["sequence_missing_total"] - before.get("sequence_missing_total", 0),
                received=after["messages_received_total"] - before.get("messages_received_total", 0),
                lost_events=after.get("transport_lost_events_total", 0) - before.get("transport_lost_events_total", 0),
                objects=after.get("tracked_objects"), scrapes=scrapes)


def ns_per_event(r):
    return round(r["cpu"] * 1e9 / max(r["applied"], 1))


GROUP_REGEX = "^(?<model>[^/]+)/(?<tp>[^/]+)/"


def key_groups_over_zmq():
    """The key-group regex's cost end to end: two exporters, one without and
    one with a typical two-group regex, each loaded with the 1M keys, then
    paced at 1M events/s in turn, three rounds; the ingest thread's CPU per
    event and the missing numbers, per round and as medians."""
    plain, grouped = Exporter(), Exporter(["--key.group-regex", GROUP_REGEX])
    for exp in (plain, grouped):
        blast(exp, 0, load=True)
    ns = {"no_regex": [], "regex": []}
    missing = {"no_regex": 0, "regex": 0}
    for _ in range(3):
        for name, exp in (("no_regex", plain), ("regex", grouped)):
            r = blast(exp, 4000000 // 64 * 64, rate=1000000)
            ns[name].append(ns_per_event(r))
            missing[name] += r["missing"]
    groups = float(next(l.rsplit(" ", 1)[1] for l in grouped.scrape().splitlines()
                        if l.startswith("mooncake_kv_tracked_key_groups ")))
    a, b = statistics.median(ns["no_regex"]), statistics.median(ns["regex"])
    out("key groups over ZMQ, paced 1M events/s, 1M live keys", regex=GROUP_REGEX, key_groups=groups,
        ingest_ns_per_event_no_regex=ns["no_regex"], ingest_ns_per_event_regex=ns["regex"],
        median_cost_percent=round(100 * (b - a) / a, 1), missing_no_regex=missing["no_regex"],
        missing_regex=missing["regex"])
    plain.stop()
    grouped.stop()


def process_cpu(pid):
    """utime + stime of every thread of a process, in seconds."""
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def floor_paced(events, rate, extra=(), own=False):
    """The floor (ZMQ receive + decode, no state, an unbounded receive queue)
    fed `events` by the blaster at `rate` (extra: more of the blaster's
    arguments): its report, with the rate at which it received them, the
    CPU seconds its whole process took, and those the blaster's took.  Its
    decode is msgpack-c's tree (issue 31's floor), or with `own` the
    exporter's one-pass decoder."""
    port = free_port()
    recv = spawn([BENCH, "recv", "tcp://127.0.0.1:%d" % port, str(events)] + (["own"] if own else []),
                            stdout=subprocess.PIPE, text=True, env=FLOOR_ENV)
    time.sleep(0.3)
    sender = spawn([BLASTER, "--pub", "tcp://127.0.0.1:%d" % port, "--events", str(events), "--sndhwm",
                               "0", "--rate", str(rate)] + list(extra), stdout=subprocess.DEVNULL)
    _, status, sent = os.wait4(sender.pid, 0)
    sender.returncode = 0
    if status:
        raise SystemExit("the blaster failed")
    report = json.loads(recv.stdout.read())
    _, _, usage = os.wait4(recv.pid, 0)
    recv.returncode = 0
    return report, usage.ru_utime + usage.ru_stime, sent.ru_utime + sent.ru_stime


def ladder(exp):
    # the highest paced rate with no gap: a ladder, ~4 s a step; at each step
    # the floor first, paced the same: on a machine whose cores the sender
    # shares, a rate the floor cannot take is the machine's limit, not the
    # exporter's
    best = best_floor = 0
    for target in ([500000, 1000000] if QUICK else [250000, 500000, 750000, 1000000, 1250000, 1500000]):
        n = int(target * 4) // 64 * 64
        fl = floor_paced(n, target)[0]
        own = floor_paced(n, target, own=True)[0]
        floor_keeps_up = fl["events_per_s"] > 0.97 * target
        r = blast(exp, n, rate=target)
        out("paced", target_events_per_s=target, achieved=r["report"]["rate"],
            missing_sequence_numbers=r["missing"], messages_sent=r["report"]["messages"],
            messages_received=r["received"], ingest_cpu_ns_per_event=ns_per_event(r),
            floor_events_per_s=fl["events_per_s"], floor_keeps_up=floor_keeps_up,
            own_decoder_floor_events_per_s=own["events_per_s"],
            sender_cores=round(r["sender_cpu"] / max(r["report"]["seconds"], 1e-9), 2))
        if r["missing"] == 0 and r["received"] == r["report"]["messages"] and r["report"]["rate"] > 0.97 * target:
            best = target
        if floor_keeps_up:
            best_floor = target
    out("highest paced rate without a gap", events_per_s=best, floor_keeps_up_to=best_floor)


def budget(exp, rate=1000000, target=1500000):
    """Where this machine's cores go at a paced rate every process keeps up
    with: the whole-process CPU per event of the sender (the blaster), of the
    floor and of the exporter, over the same paced stream (the exporter
    loaded first; the floor decodes as the exporter does), and the cores a
    sender and each receiver would need together at `target`, against the
    cores there are.  The sender's CPU
    includes encoding its 2,048 messages once (a few milliseconds)."""
    n = int(rate * 4) // 64 * 64
    floor, floor_cpu, floor_sender = floor_paced(n, rate, own=True)
    cpu0 = process_cpu(exp.proc.pid)
    r = blast(exp, n, rate=rate)
    exp_cpu = process_cpu(exp.proc.pid) - cpu0
    per = lambda cpu, events: cpu * 1e9 / max(events, 1)
    s_floor, f = per(floor_sender, n), per(floor_cpu, floor["events"])
    s_exp, e = per(r["sender_cpu"], n), per(exp_cpu, r["applied"])
    out("cores at a paced rate", rate=rate, sender_ns_per_event_to_floor=round(s_floor),
        floor_ns_per_event=round(f), sender_ns_per_event_to_exporter=round(s_exp), exporter_ns_per_event=round(e),
        floor_events=floor["events"], exporter_events=r["applied"], exporter_missing=r["missing"],
        target_events_per_s=target, cores_for_sender_and_floor_at_target=round(target * (s_floor + f) / 1e9, 2),
        cores_for_sender_and_exporter_at_target=round(target * (s_exp + e) / 1e9, 2), cores=os.cpu_count())


def cpu_against_floor(keys, rate=300000, events=3200000, key_bytes=64, sndhwm=0):
    """Issue 31's measure: whole-process CPU per event of the exporter against
    the floor's (ZMQ receive + msgpack-c decode, no state), over the same
    stream; and against a floor that decodes as the exporter does (own).  Paced
    at a rate both keep up with, neither spends CPU on messages a high-water
    mark then drops; flat out (rate 0), the exporter's I/O thread receives
    messages its receive queue drops, and their CPU is charged to the events
    that got through (the floor's queue is unbounded).  sndhwm: the
    publisher's high-water mark towards the exporter (0: none, as towards the
    floor; upstream's is 10,000).  The exporter is loaded with `keys` objects
    first."""
    shape = ["--key-bytes", str(key_bytes), "--sndhwm", "0"]
    floor, floor_cpu, _ = floor_paced(events, rate, ["--keys", str(keys)] + shape[:2])
    own, own_cpu, _ = floor_paced(events, rate, ["--keys", str(keys)] + shape[:2], own=True)
    exp = Exporter()  # room for 20M objects
    blast(exp, 0, load=True, extra=shape, keys=keys)
    cpu0 = process_cpu(exp.proc.pid)
    r = blast(exp, events, rate=rate, extra=shape[:2] + ["--sndhwm", str(sndhwm)], keys=keys)
    cpu = process_cpu(exp.proc.pid) - cpu0
    exp.stop()
    floor_ns, exp_ns = floor_cpu * 1e9 / max(floor["events"], 1), cpu * 1e9 / max(r["applied"], 1)
    own_ns = own_cpu * 1e9 / max(own["events"], 1)
    out("whole-process CPU per event against the floor", keys=keys, key_bytes=key_bytes, rate=rate or "flat out",
        exporter_sndhwm=sndhwm,
        floor_ns_per_event=round(floor_ns), exporter_ns_per_event=round(exp_ns),
        ratio=round(exp_ns / floor_ns, 2), own_decoder_floor_ns_per_event=round(own_ns),
        ratio_to_own_decoder_floor=round(exp_ns / own_ns, 2), floor_events=floor["events"],
        exporter_events=r["applied"],
        exporter_missing=r["missing"], ingest_thread_ns_per_event=ns_per_event(r))


# what Prometheus 2.42 sends with --enable-feature=native-histograms
# (its scrapeAcceptHeaderWithProtobuf): the protobuf exposition first
PROTOBUF_ACCEPT = ("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,"
                   "application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,"
                   "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def whole_scrape(tenants=10000, rounds=6):
    """The exporter's whole scrape, as Prometheus makes it, of `tenants`
    tenants (200,000 objects spread over them): plain, gzip, OpenMetrics
    with gzip and the protobuf exposition with gzip (Prometheus with native
    histograms), round by round.  Each is timed by the exporter itself
    (mooncake_kv_exporter_last_scrape_duration_seconds, read by the next
    scrape): snapshot, render, shaping and compression, not the transfer."""
    exp = Exporter(["--limits.max-tenants", str(2 * tenants)])
    blast(exp, 0, load=True, keys=200000, extra=["--tenants", str(tenants)])

    def last_ms():
        for line in exp.scrape(60, {"Accept-Encoding": "gzip"}).splitlines():
            if line.startswith("mooncake_kv_exporter_last_scrape_duration_seconds "):
                return float(line.split()[1]) * 1e3
        return None

    kinds = {"plain": {}, "gzip": {"Accept-Encoding": "gzip"},
             "openmetrics, gzip": {"Accept-Encoding": "gzip",
                                   "Accept": "application/openmetrics-text;version=1.0.0"},
             "protobuf, gzip": {"Accept-Encoding": "gzip", "Accept": PROTOBUF_ACCEPT}}
    ms = {k: [] for k in kinds}
    exp.scrape(60)  # the first scrape sizes the next ones' buffers
    for _ in range(rounds):
        for kind, headers in kinds.items():
            exp.scrape(60, headers, raw=True)
            ms[kind].append(last_ms())
    for kind, v in ms.items():
        out("whole scrape, as the exporter times it", tenants=tenants, kind=kind, best_ms=round(min(v), 1),
            median_ms=round(statistics.median(v), 1), rounds=rounds, each_ms=[round(x, 1) for x in v])
    exp.stop()


def main():
    print("machine: " + machine(), flush=True)
    if "--scrape" in sys.argv:
        return whole_scrape()
    if "--groups" in sys.argv:
        return key_groups_over_zmq()
    if "--ladder" in sys.argv:
        exp = Exporter()
        blast(exp, 0, load=True)
        ladder(exp)
        exp.stop()
        return
    if "--budget" in sys.argv:
        exp = Exporter()
        blast(exp, 0, load=True)
        for _ in range(3):
            budget(exp)
        exp.stop()
        return
    if "--cpu" in sys.argv:
        for keys in (2000000, 10000000):
            cpu_against_floor(keys)
        cpu_against_floor(2000000, rate=0)
        cpu_against_floor(2000000, rate=0, sndhwm=10000)
        return
    for mode in ("decode", "groups"):
        for line in subprocess.run([BENCH, mode], capture_output=True, text=True, check=True).stdout.splitlines():
            print(line, flush=True)

    # floor: ZMQ receive + decode from the blaster, no state
    floor = floor_paced(3200000 if QUICK else 12800000, 0)[0]
    print(json.dumps(floor), flush=True)

    # ingest flat out, 1M live keys, with the upstream publisher's SNDHWM and the exporter's defaults
    exp = Exporter()
    blast(exp, 0, load=True)
    r = blast(exp, 3200000 if QUICK else 12800000)
    rate = r["applied"] / r["wall"]
    out("ingest flat out over ZMQ, exporter defaults, 1M live keys", events_per_s=round(rate),
        percent_of_recv_floor=round(100 * rate / floor["events_per_s"], 1), blaster_rate=r["report"]["rate"],
        live_objects=r["objects"], missing_sequence_numbers=r["missing"], ingest_cpu_ns_per_event=ns_per_event(r),
        ingest_thread_capacity_events_per_s=round(1e9 / max(ns_per_event(r), 1)))

    ladder(exp)
    budget(exp)

    # scraping once a second while ingesting: paced at 1M events/s, then flat out
    n = 3200000 if QUICK else 8000000
    for target in (1000000, 0):
        quiet = blast(exp, n, rate=target)
        scraped = blast(exp, n, rate=target, scrape_every=1.0)
        lat = sorted(s[0] for s in scraped["scrapes"])
        r0, r1 = quiet["applied"] / quiet["wall"], scraped["applied"] / scraped["wall"]
        out("scrape every second while ingesting", target_events_per_s=target or "flat out",
            ingest_events_per_s_quiet=round(r0), ingest_events_per_s_scraped=round(r1),
            rate_change_percent=round(100 * (r1 - r0) / r0, 1),
            ingest_ns_per_event_quiet=ns_per_event(quiet), ingest_ns_per_event_scraped=ns_per_event(scraped),
            missing_quiet=quiet["missing"], missing_scraped=scraped["missing"],
            scrape_ms_median=round(1e3 * statistics.median(lat), 2) if lat else None,
            scrape_ms_max=round(1e3 * lat[-1], 2) if lat else None, scrapes=len(lat))

    # event-to-metrics latency, idle exporter
    p = spawn([BLASTER, "--pub", exp.endpoint, "--keys", str(KEYS), "--probe"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lats = []
    for _ in range(20 if QUICK else 100):
        p.stdin.write("go\n")
        p.stdin.flush()
        seq, t_send = p.stdout.readline().split()
        while exp.figures().get("last_sequence") != float(seq):
            pass
        lats.append(time.time() - float(t_send))
        time.sleep(0.02)
    p.stdin.close()
    p.wait(10)
    lats.sort()
    out("event to /metrics latency, idle", median_ms=round(1e3 * statistics.median(lats), 2),
        p90_ms=round(1e3 * lats[int(0.9 * len(lats))], 2), samples=len(lats),
        note="includes one scrape of /metrics per poll")
    exp.stop()

    key_groups_over_zmq()

    for line in subprocess.run([BENCH, "render"], capture_output=True, text=True, check=True).stdout.splitlines():
        print(line, flush=True)
    whole_scrape(rounds=3 if QUICK else 6)
    for n in ([1000000] if QUICK else [1000000, 10000000]):
        r = subprocess.run([BENCH_MEM, str(n), "16", "100"], capture_output=True, text=True, check=True).stdout
        out("memory", objects=n, report=" | ".join(l.strip() for l in r.splitlines()))


if __name__ == "__main__":
    if "-h" in sys.argv or "--help" in sys.argv:
        sys.exit(__doc__)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped"))
    try:
        main()
    finally:
        stop_children()
