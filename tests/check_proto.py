#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The protobuf exposition against an independent decoder and the text.

    check_proto.py RENDER_DUMP PROTO_DECODE FIXTURES_DIR

Every upstream capture together (one source each), every tenant and key
group with the lives LIVES_MS ended (after a capture's own, if any), rendered by tests/render_dump in the
text format (which check_render_golden.py holds byte for byte) and in
protobuf, with and without --metrics.exclude and --metrics.tenant-summary.
The protobuf is decoded by tests/proto_decode (protobuf-c, generated from
Prometheus's metrics.proto) and must say the same: every family with a
sample, its help and type, every sample with its labels and value, every
classic bucket.  The native buckets must hold what this script works out
from LIVES_MS with Prometheus's definition (bucket i of schema s holds
(2^((i-1)/2^s), 2^(i/2^s)], at most 16 buckets from the finest schema that
fits, 3 at most); every other histogram's must add up to its count and
agree with its classic buckets."""
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_render_golden import EXCLUDE, captures  # noqa: E402

# lives in ms: 0 (the zero bucket), a cluster between 1 and 2 s, a few
# minutes, and an hour: the schema must come down to fit
LIVES_MS = [0, 1000, 1100, 1250, 1500, 1500, 1999, 2000, 45000, 240000, 3600000]
MAX_BUCKETS, SCHEMA_START, SCHEMA_MIN = 16, 3, -4

MODES = {
    "text": [],
    "exclude": ["--exclude", EXCLUDE],
    "summary": ["--tenant-summary"],
    "exclude-summary": ["--exclude", EXCLUDE, "--tenant-summary"],
}


def bucket(v, s):
    i = math.floor(math.log2(v) * 2 ** s) - 2
    while not v <= 2.0 ** (i / 2 ** s):
        i += 1
    return i


def native_truth(values_s):
    """schema, zero count, {index: count} of these observations"""
    pos = [v for v in values_s if v > 2 ** -128]
    for s in range(SCHEMA_START, SCHEMA_MIN - 1, -1):
        idx = [bucket(v, s) for v in pos]
        if not idx or max(idx) - min(idx) + 1 <= MAX_BUCKETS:
            break
    counts = {}
    for i in idx:
        counts[i] = counts.get(i, 0) + 1
    return s, len(values_s) - len(pos), counts


def split_labels(s):
    """name{a="x",b="y"} value -> (name, frozenset of pairs), value"""
    head, value = s.rsplit(" ", 1)
    if "{" not in head:
        return (head, frozenset()), value
    name, rest = head.split("{", 1)
    pairs, i, rest = [], 0, rest[:-1]
    while i < len(rest):
        eq = rest.index("=", i)
        j, v = eq + 2, []
        while rest[j] != '"':
            if rest[j] == "\\":
                j += 1
            v.append(rest[j])
            j += 1
        pairs.append((rest[i:eq], "".join(v)))
        i = j + 2
    return (name, frozenset(pairs)), value


def parse(text):
    """{family: (help, type)}, {(name, labels): value}, [native lines]"""
    families, samples, natives = {}, {}, []
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, help_ = line[7:].split(" ", 1)
            families[name] = [help_, None]
        elif line.startswith("# TYPE "):
            name, kind = line[7:].split(" ", 1)
            families[name][1] = kind
        elif line.startswith("#native "):
            natives.append(line[8:])
        elif line and not line.startswith("#"):
            key, value = split_labels(line)
            if key in samples:
                raise SystemExit("twice: %s" % line)
            name, labels = key
            le = dict(labels).get("le")
            if le is not None and le != "+Inf":  # a bound as a number, as written
                key = (name, frozenset((k, v if k != "le" else repr(float(v))) for k, v in labels))
            samples[key] = float(value)
    return families, samples, natives


def check_natives(natives, samples, lives_s, where):
    truth = native_truth(lives_s)
    lifetimes = 0
    for line in natives:
        parts = line.split(" ")
        (name, labels), _ = split_labels(parts[0] + " 0")
        schema, threshold, zero = int(parts[1]), float(parts[2]), int(parts[3])
        buckets = {}
        if len(parts) > 4 and parts[4]:
            for b in parts[4].split(","):
                i, c = b.split(":")
                buckets[int(i)] = int(c)
        count = samples[(name + "_count", labels)]
        if zero + sum(buckets.values()) != count:
            raise SystemExit("%s: %s native buckets hold %d, its count is %d" % (where, parts[0], zero + sum(buckets.values()), count))
        if any(c < 0 for c in buckets.values()) or len(buckets) and max(buckets) - min(buckets) + 1 > MAX_BUCKETS:
            raise SystemExit("%s: %s native buckets out of bounds: %s" % (where, parts[0], parts[4]))
        if threshold != 2 ** -128 or not SCHEMA_MIN <= schema <= SCHEMA_START:
            raise SystemExit("%s: %s schema %d, zero threshold %g" % (where, parts[0], schema, threshold))
        # the classic buckets: a native bucket wholly below a bound is in it,
        # one wholly above is not
        for (sname, slabels), v in samples.items():
            le = dict(slabels).get("le")
            if sname != name + "_bucket" or le in (None, "+Inf") or slabels - {("le", le)} != labels:
                continue
            le = float(le)
            below = zero + sum(c for i, c in buckets.items() if 2.0 ** (i / 2 ** schema) <= le)
            reach = zero + sum(c for i, c in buckets.items() if 2.0 ** ((i - 1) / 2 ** schema) < le)
            if not below <= v <= reach:
                raise SystemExit("%s: %s le=%g holds %d, its native buckets %d to %d" % (where, parts[0], le, v, below, reach))
        buckets = {i: c for i, c in buckets.items() if c}  # the empty ones a span holds
        # a capture's own lives (conductor's) add to LIVES_MS: only checked
        # against the classic buckets, above
        if name == "mooncake_kv_object_lifetime_seconds" and count == len(lives_s):
            lifetimes += 1
            if (schema, zero, buckets) != truth:
                raise SystemExit("%s: %s native buckets %s, the lives give %s" % (where, parts[0], (schema, zero, buckets), truth))
    return lifetimes


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__)
    dump, decode, fixtures = argv[1:]
    files = dict(captures(fixtures))["all"]
    lives = ",".join(str(ms) for ms in LIVES_MS)
    for mode, flags in MODES.items():
        args = flags + ["--lives", lives] + files
        text = subprocess.run([dump] + args, capture_output=True, check=True, timeout=120).stdout.decode()
        proto = subprocess.run([dump, "--protobuf"] + args, capture_output=True, check=True, timeout=120).stdout
        got = subprocess.run([decode], input=proto, capture_output=True, timeout=120)
        if got.returncode:
            sys.exit("%s: protobuf-c: %s" % (mode, got.stderr.decode()))
        t_fam, t_samples, _ = parse(text)
        p_fam, p_samples, natives = parse(got.stdout.decode())
        # a family without a sample is not sent in protobuf
        with_samples = {n for n in t_fam if any(k[0] == n or k[0].rsplit("_", 1)[0] == n for k in t_samples)}
        if set(p_fam) != with_samples:
            sys.exit("%s: families only in text %s, only in protobuf %s" %
                     (mode, sorted(with_samples - set(p_fam)), sorted(set(p_fam) - with_samples)))
        for name, (help_, kind) in p_fam.items():
            if t_fam[name] != [help_, kind]:
                sys.exit("%s: %s: text says %s, protobuf %s" % (mode, name, t_fam[name], (help_, kind)))
        if t_samples != p_samples:
            only_t = sorted(set(t_samples) - set(p_samples), key=str)[:5]
            only_p = sorted(set(p_samples) - set(t_samples), key=str)[:5]
            differ = [(k, t_samples[k], p_samples[k]) for k in t_samples if k in p_samples and t_samples[k] != p_samples[k]][:5]
            sys.exit("%s: samples differ: only in text %s; only in protobuf %s; values %s" % (mode, only_t, only_p, differ))
        histograms = sum(1 for k in t_samples if k[0].endswith("_count") and k[0][:-6] in t_fam and t_fam[k[0][:-6]][1] == "histogram")
        if len(natives) != histograms:
            sys.exit("%s: %d histograms, %d with native buckets" % (mode, histograms, len(natives)))
        lifetimes = check_natives(natives, p_samples, [ms / 1000 for ms in LIVES_MS], mode)
        print("%s: %d families, %d samples, %d histograms (%d lifetimes) the same" %
              (mode, len(p_fam), len(p_samples), histograms, lifetimes))
        if mode == "text" and not lifetimes:
            sys.exit("no lifetime histogram: nothing checked against the lives")


if __name__ == "__main__":
    main(sys.argv)
