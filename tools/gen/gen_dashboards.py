#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the Grafana dashboards of dashboards/ from the panel lists below.

Edit here, then run `tools/gen/gen_dashboards.py`: tests check that the JSON in
dashboards/ is what this script writes, and that every query uses metrics
the exporter exports."""
import json
import os
import sys

DS = {"type": "prometheus", "uid": "${datasource}"}
# every exporter may call its source "default" (one per master): the
# exporter is part of every selection and every legend
# cluster, namespace and job narrow the exporters where the scrape has those
# labels (an absent label matches their "All", .*)
WHERE = 'cluster=~"$cluster",namespace=~"$namespace",job=~"$job",instance=~"$instance"'
SRC = WHERE + ',source=~"$source"'
TEN = SRC + ',tenant_id=~"$tenant_id"'
RI = "$__rate_interval"
# 0 for every selected tenant: what a rate of a counter that appears at its first event is before it
TENANT_ZERO = f"0 * sum by (instance, source, tenant_id) (mooncake_kv_objects{{{TEN}}})"


# A histogram read in either form Prometheus stores it: classic (_bucket, _sum,
# _count series; a text scrape, or a protobuf one without native histograms)
# or native (one series; Prometheus with native histograms on keeps only that).
# Each reads the one form, and `or` takes whichever has series.
def quantile(q, name, by, sel, window):
    return (f"histogram_quantile({q}, sum by ({by}, le) (rate({name}_bucket{{{sel}}}[{window}]))) or "
            f"histogram_quantile({q}, sum by ({by}) (rate({name}{{{sel}}}[{window}])))")


def hist_rate(part, name, by, sel, window):
    """sum by (by) of the rate of a histogram's count or sum ("count", "sum")."""
    return (f"(sum by ({by}) (rate({name}_{part}{{{sel}}}[{window}])) or "
            f"sum by ({by}) (histogram_{part}(rate({name}{{{sel}}}[{window}]))))")



def var_datasource():
    return {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "refresh": 1}


def var_query(name, label, query, multi=True):
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
            "definition": query, "refresh": 2, "multi": multi, "includeAll": multi,
            "allValue": ".*" if multi else None, "current": {}, "sort": 1, "hide": 0}


def panel(kind, title, targets, unit="short", w=12, h=8, stack=False, desc="", mappings=None, **opts):
    p = {"type": kind, "title": title, "description": desc, "datasource": DS,
         "gridPos": {"w": w, "h": h},
         "targets": [{"datasource": DS, "expr": e, "legendFormat": lf, "refId": chr(65 + i),
                      "instant": kind in ("table", "bargauge")}
                     for i, (e, lf) in enumerate(targets)],
         "fieldConfig": {"defaults": {"unit": unit, "mappings": mappings or []}, "overrides": []},
         "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                     "tooltip": {"mode": "multi", "sort": "desc"}}}
    if kind == "timeseries":
        p["fieldConfig"]["defaults"]["custom"] = {
            "drawStyle": "line", "lineWidth": 1, "fillOpacity": 30 if stack else 0,
            "stacking": {"mode": "normal" if stack else "none", "group": "A"}, "showPoints": "never"}
    if kind == "stat":
        p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "background", "graphMode": "none", "textMode": "value_and_name"}
    if kind == "table":
        p["options"] = {"showHeader": True}
        p["transformations"] = [{"id": "labelsToFields", "options": {}}]
    p["options"].update(opts)
    return p


def news_increase(series, guard, window="1h"):
    """increase() of a counter that appears at its first event (a tenant's or key group's rare events): one
    that appeared within the window while its entity (guard, offset by the window) was there counts whole,
    having been 0 before; the others by increase() (alerts/mooncake-kv.rules.yml does the same)."""
    first = f"(({series} unless {series} offset {window}) and ({guard} offset {window}))"
    return f"((increase({series}[{window}]) unless {first}) or {first})"


def news_count(hist, guard, window="1h"):
    """news_increase of a histogram's count in either form: classic (its _count) or native."""
    sel = hist[hist.index("{"):] if "{" in hist else ""
    name = hist[:len(hist) - len(sel)]
    native = f"{name}{sel}"
    first = f"((histogram_count({native}) unless {native} offset {window}) and ({guard} offset {window}))"
    return (f"({news_increase(f'{name}_count{sel}', guard, window)} or "
            f"((histogram_count(increase({native}[{window}])) unless {first}) or {first}))")


def row(title):
    """A row: the panels after it, up to the next row, are its."""
    return {"type": "row", "title": title, "collapsed": False, "panels": [], "gridPos": {"w": 24, "h": 1}}


def layout(panels):
    x = y = row_h = 0
    for i, p in enumerate(panels, 1):
        w, h = p["gridPos"]["w"], p["gridPos"]["h"]
        if x + w > 24:
            x, y, row_h = 0, y + row_h, 0
        p["gridPos"].update(x=x, y=y)
        p["id"] = i
        x += w
        row_h = max(row_h, h)
    return panels


def dashboard(uid, title, desc, variables, panels):
    return {"uid": uid, "title": title, "description": desc, "tags": ["mooncake", "kv-cache"],
            "schemaVersion": 39, "version": 1, "editable": True, "graphTooltip": 1,
            "time": {"from": "now-6h", "to": "now"}, "refresh": "30s", "timezone": "",
            "templating": {"list": variables}, "annotations": {"list": []},
            "links": [{"title": "Mooncake KV", "type": "dashboards", "tags": ["mooncake"], "asDropdown": True}],
            "panels": layout(panels)}


SOURCE_VAR = var_query("source", "Source", 'label_values(mooncake_kv_messages_received_total{%s}, source)' % WHERE)
TENANT_VAR = var_query("tenant_id", "Tenant", 'label_values(mooncake_kv_objects{%s}, tenant_id)' % SRC)
# the exporters: by cluster, namespace and job where the scrape has them, then by instance
SCOPE_VARS = [
    var_query("cluster", "Cluster", "label_values(mooncake_kv_exporter_build_info, cluster)"),
    var_query("namespace", "Namespace", 'label_values(mooncake_kv_exporter_build_info{cluster=~"$cluster"}, namespace)'),
    var_query("job", "Job", 'label_values(mooncake_kv_exporter_build_info{cluster=~"$cluster",namespace=~"$namespace"}, job)'),
    var_query("instance", "Exporter", 'label_values(mooncake_kv_exporter_build_info{cluster=~"$cluster",'
              'namespace=~"$namespace",job=~"$job"}, instance)'),
]
LEADER_MAPPING = [{"type": "value", "options": {"0": {"text": "standby", "color": "blue"},
                                                "1": {"text": "leader", "color": "green"}}}]
UP_MAPPING = [{"type": "value", "options": {"0": {"text": "down", "color": "red"},
                                            "1": {"text": "up", "color": "green"}}}]


RESIDENCY = ("Lives the exporter saw whole: from the event that made an object present to the one that made "
             "it absent, by the publisher's timestamps. A birth is seen only while the tenant is exact (a "
             "cleared, or tenant default reconciled), so on Mooncake release v0.3.12 (object dialect, no cleared) only "
             "a reconciled default has any. "
             "Short lifetimes on a tenant below its quota mean another tenant's pressure: see the quota panels.")


def overview():
    return dashboard("mooncake-kv-overview", "Mooncake KV / Overview",
                     "Health of each source's KV event stream and master.", [var_datasource(), *SCOPE_VARS, SOURCE_VAR], [
        panel("stat", "Subscriber connected",
              [(f"mooncake_kv_subscriber_connected{{{SRC}}}", "{{instance}} {{source}} {{member}}")],
              w=6, h=4, mappings=UP_MAPPING, desc="1 while the ZMQ subscriber is connected to the master's publisher."),
        panel("stat", "Master status", [(f"mooncake_kv_master_up{{{SRC}}}", "{{instance}} {{source}} {{member}}")], w=6, h=4,
              mappings=UP_MAPPING, desc="Last GET /kv_events/status answered."),
        panel("stat", "Publisher enabled", [(f"mooncake_kv_master_publisher_enabled{{{SRC}}}", "{{instance}} {{source}}")],
              w=6, h=4, mappings=UP_MAPPING),
        panel("stat", "Tracked objects", [(f"sum(mooncake_kv_objects{{{SRC}}})", "objects")], w=6, h=4),
        panel("timeseries", "Events applied by type",
              [(f"sum by (instance, source, event_type) (rate(mooncake_kv_events_received_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} {{event_type}}")], unit="ops"),
        panel("timeseries", "Messages received",
              [(f"sum by (instance, source) (rate(mooncake_kv_messages_received_total{{{SRC}}}[{RI}]))", "{{instance}} {{source}}"),
               (f"sum by (instance, source) (rate(mooncake_kv_master_published_batches_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} published by the master")], unit="ops"),
        panel("timeseries", "Sequence gaps and publisher resets",
              [(f"sum by (instance, source) (increase(mooncake_kv_sequence_gaps_total{{{SRC}}}[{RI}]))", "{{instance}} {{source}} gaps"),
               (f"sum by (instance, source) (increase(mooncake_kv_publisher_resets_total{{{SRC}}}[{RI}]))", "{{instance}} {{source}} resets"),
               (f"sum by (instance, source) (increase(mooncake_kv_subscriber_reconnects_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} reconnects")]),
        panel("timeseries", "Missing sequence numbers",
              [(f"sum by (instance, source) (rate(mooncake_kv_sequence_missing_total{{{SRC}}}[{RI}]))", "{{instance}} {{source}}"),
               (f"sum by (instance, source) (rate(mooncake_kv_sequence_tail_late_messages_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} of a lost tail, came after all")],
              unit="ops", desc="One per event the publisher's queue dropped, one per message lost after it. A tail "
                               "counted lost whose messages came after all stays in the missing numbers: the "
                               "second line says how much of it did."),
        panel("timeseries", "Missing sequence numbers by cause",
              [(f"sum by (instance, source) (rate(mooncake_kv_queue_lost_events_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} dropped by the publisher's queue"),
               (f"sum by (instance, source) (rate(mooncake_kv_transport_lost_messages_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} lost in transport"),
               (f"sum by (instance, source) (rate(mooncake_kv_unattributed_lost_messages_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} unattributed")], unit="ops", stack=True,
              desc="Each missing number lands in one bucket at the next status poll: explained by the master's "
                   "dropped_events, lost after the publisher, or unattributed (the counters that could explain it "
                   "were lost with a restart). The three add up to the missing numbers."),
        panel("timeseries", "Events dropped by the publisher and lost in transport",
              [(f"sum by (instance, source) (rate(mooncake_kv_master_dropped_events_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} dropped by the publisher"),
               (f"sum by (instance, source) (rate(mooncake_kv_transport_lost_events_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} lost in transport (event ids)")], unit="ops"),
        panel("timeseries", "Exporter behind the master",
              [(f"mooncake_kv_sequence_behind{{{SRC}}}", "{{instance}} {{source}}")],
              desc="Sequence numbers the master had used by the previous poll that have not arrived: above 0, the "
                   "exporter is more than a poll interval behind and its receive queue is filling."),
        panel("timeseries", "Stream coverage of the master's keys",
              [(f"source:mooncake_kv_stream_coverage:ratio{{{SRC}}}", "{{instance}} {{source}}")],
              unit="percentunit",
              desc="Objects the exporter shows / master_key_count of the master's /metrics. Below 1: objects "
                   "from before the exporter started or lost events; above 1: removals upstream publishes no "
                   "event for (BatchRemove, RemoveAll). Reconciliation brings tenant default back to 1."),
        panel("timeseries", "Reconciliations and corrections",
              [(f"sum by (instance, source, result) (increase(mooncake_kv_reconciliations_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} {{result}}"),
               (f"sum by (instance, source, kind) (increase(mooncake_kv_reconcile_corrections_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} corrected: {{kind}}")],
              desc="Reconciliations of tenant default with the master by result, and the objects each corrected: "
                   "the drift the stream alone would have shown."),
        panel("timeseries", "Publisher drop ratio (60 s)",
              [(f"mooncake_kv_master_drop_ratio{{{SRC}}}", "{{instance}} {{source}}")], unit="percentunit"),
        panel("timeseries", "Event lag (receive time - publish time)",
              [(quantile(0.5, "mooncake_kv_event_lag_seconds", "instance, source", SRC, RI),
                "{{instance}} {{source}} p50"),
               (quantile(0.99, "mooncake_kv_event_lag_seconds", "instance, source", SRC, RI),
                "{{instance}} {{source}} p99")], unit="s"),
        panel("timeseries", "Connection state",
              [(f"mooncake_kv_subscriber_connected{{{SRC}}}", "{{instance}} {{source}} {{member}} subscriber"),
               (f"mooncake_kv_master_up{{{SRC}}}", "{{instance}} {{source}} {{member}} master"),
               (f"mooncake_kv_master_standby{{{SRC}}}", "{{instance}} {{source}} {{member}} standby")]),
        panel("table", "Model each master serves",
              [(f"mooncake_kv_publisher_model_info{{{SRC}}}", "")], w=16, h=6,
              desc="The model context each master's publisher stamps on its events, as the last one carried it: "
                   "model_name, lora_name, block_size, dp_rank, and whether an additional_salt (a hash "
                   "namespace) is set. Empty values: none stamped (Mooncake release v0.3.12 stamps none; Mooncake "
                   "main since #3818 and dev/conductor stamp what they are configured with)."),
        panel("timeseries", "Model context changes",
              [(f"sum by (instance, source, member) (increase(mooncake_kv_publisher_model_changes_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} {{member}}")], w=8, h=6,
              desc="Events whose model context differed from the event before: a master reconfigured or "
                   "replaced by one serving another model (a step), or a publisher that stamps each key's own "
                   "model (a steady rate)."),
        panel("state-timeline", "Leader per master",
              [(f"mooncake_kv_master_leader{{{SRC}}}", "{{instance}} {{source}} {{member}}")], mappings=LEADER_MAPPING,
              desc="Which master of each source serves (highly available masters, or one sidecar per master). "
                   "Standbys have no publisher: a standby's subscriber is never connected, and that is health."),
        panel("timeseries", "Failovers and split brains",
              [(f"sum by (instance, source) (increase(mooncake_kv_master_failovers_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} failovers"),
               (f"max by (instance, source) (mooncake_kv_master_split_brain{{{SRC}}})", "{{instance}} {{source}} split brain"),
               (f"sum by (instance, source) (increase(mooncake_kv_standby_events_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} events from a master that does not serve")],
              desc="A failover is a leadership change (the serving master changed or view_version moved), not a "
                   "publisher restart: each master's stream is tracked on its own."),
    ])


OBJECTS_EXACT = ("Exact for every event seen, in both dialects (see Publisher dialect). Silent erasures apply "
                 "to Mooncake release v0.3.12 (object dialect: quota evictions, BatchRemove, RemoveAll) and to "
                 "Mooncake main's evictions that empty an object (quota eviction included): only reconciliation, "
                 "of tenant default, sees those.")
MEDIA_EXACT = ("Exact in the media dialect (the guide's per-medium events: Mooncake main since #3818, "
               "dev/conductor). In the object dialect (Mooncake release v0.3.12) it is what the puts announced: "
               "v0.3.12 publishes nothing when one tier of an object is evicted while another stays, or when an "
               "offload adds a disk copy; reconciliation corrects tenant default.")


def tenants():
    return dashboard("mooncake-kv-tenants", "Mooncake KV / Tenants",
                     "Objects per tenant, their medium mix and placement, and which tenants can be trusted.",
                     [var_datasource(), *SCOPE_VARS, SOURCE_VAR, TENANT_VAR], [
        panel("timeseries", "Objects per tenant", [(f"mooncake_kv_objects{{{TEN}}}", "{{instance}} {{source}} {{tenant_id}}")],
              stack=True, w=24, desc=OBJECTS_EXACT),
        panel("timeseries", "Medium mix", [(f"sum by (medium) (mooncake_kv_objects_by_medium{{{TEN}}})", "{{medium}}")],
              stack=True, desc="An object on both media counts under both. " + MEDIA_EXACT),
        panel("timeseries", "Placement",
              [(f"sum(mooncake_kv_objects{{{TEN}}}) - sum(mooncake_kv_objects_by_medium{{{TEN},medium=\"disk\"}})",
                "cpu_only"),
               (f"sum(mooncake_kv_objects{{{TEN}}}) - sum(mooncake_kv_objects_by_medium{{{TEN},medium=\"cpu\"}})",
                "disk_only"),
               (f"sum(mooncake_kv_objects_by_medium{{{TEN}}}) - sum(mooncake_kv_objects{{{TEN}}})", "cpu_and_disk")],
              stack=True,
              desc="From the objects and the medium mix (mooncake_kv_objects_by_placement is served only with "
                   "--metrics.all-series). " + MEDIA_EXACT),
        panel("stat", "Publisher dialect",
              [(f"mooncake_kv_publisher_dialect{{{SRC}}}", "{{instance}} {{source}} {{member}} {{dialect}}")],
              w=24, h=4,
              desc="What a removed event means, as each master's /kv_events/status tells: object (Mooncake release "
                   "v0.3.12: the whole object is gone) or media (the subscriber guide, Mooncake main since #3818 "
                   "and dev/conductor: that medium only). It decides which figures above are exact."),
        panel("bargauge", "Top 10 tenants by objects",
              [(f"topk(10, mooncake_kv_objects{{{TEN}}})", "{{instance}} {{source}} {{tenant_id}}")],
              displayMode="gradient", orientation="horizontal"),
        panel("table", "Exact or stale, since when and why",
              [(f"mooncake_kv_state_stale{{{TEN}}}", ""),
               (f"mooncake_kv_state_stale_since_timestamp_seconds{{{TEN}}} * 1000", ""),
               (f"mooncake_kv_state_stale_reason{{{TEN}}}", "")],
              w=24, mappings=[{"type": "value", "options": {"0": {"text": "exact"}, "1": {"text": "stale"}}}],
              desc="Per tenant: exact (its figures are all there is: watched from empty, cleared or reconciled, "
                   "nothing lost since) or stale; while stale, since when, and each reason (docs/guide.md, \"Stale "
                   "tenants\"; runbook, Tenants stale). quota_eviction and drift mean the master erased objects "
                   "without an event: that applies to Mooncake release v0.3.12 (object dialect) and to Mooncake "
                   "main's evictions that empty an object."),
        panel("timeseries", "How long each stale tenant has been stale",
              [(f"source_tenant:mooncake_kv_state_stale_age:seconds{{{TEN}}}", "{{instance}} {{source}} {{tenant_id}}")],
              unit="s",
              desc="Since when the tenant's figures may be incomplete: start-up, or the first loss since it was last "
                   "exact. Mooncake release v0.3.12 never sends cleared: there only a reconciliation ends it, or (a new "
                   "store) the master proving it empty; Mooncake main since #3818 also ends it with a cleared."),
        panel("timeseries", "Removals of objects the exporter did not know",
              [(f"source_tenant:mooncake_kv_removed_unknown:ratio_rate1h{{{TEN}}}",
                "{{instance}} {{source}} {{tenant_id}}")], unit="percentunit",
              desc="Share of the tenant's removed events (last hour) that named an object the exporter did not "
                   "hold: objects from before it started, or whose stored event was lost. High: the tenant's "
                   "object count is low by about that much of its churn."),
        panel("timeseries", "Stale tenants by reason",
              [(f"mooncake_kv_stale_tenants{{{SRC}}}", "{{instance}} {{source}} {{reason}}")]),
        panel("timeseries", "Tenants turning stale and exact",
              [(f"sum by (instance, source, reason) (increase(mooncake_kv_tenant_stale_transitions_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} stale: {{reason}}"),
               (f"sum by (instance, source, cause) (increase(mooncake_kv_tenant_exact_transitions_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} exact: {{cause}}")],
              desc="Tenants that stopped being exact, by the reason that did it, and stale tenants made exact "
                   "again, by cause (cleared, reconciled, empty_store)."),
        panel("stat", "Watched from empty",
              [(f"mooncake_kv_watched_from_empty{{{SRC}}}", "{{instance}} {{source}}")], h=4,
              mappings=[{"type": "value", "options": {"0": {"text": "no"}, "1": {"text": "yes"}}}],
              desc="Yes: the master proved the store empty before its publisher's first message and nothing was "
                   "lost since, so every tenant first seen is exact (docs/guide.md, \"Stale tenants\")."),
        panel("stat", "Master lists every tenant",
              [(f"mooncake_kv_master_lists_tenants{{{SRC}}}", "{{instance}} {{source}} {{member}}")], h=4,
              mappings=[{"type": "value", "options": {"0": {"text": "default only"}, "1": {"text": "yes"}}}],
              desc="Yes: the master lists any tenant's keys (tools/upstream/tenant-listing.patch), so every tenant "
                   "is reconciled and made exact again; default only: upstream as released, only tenant default "
                   "is (docs/guide.md, \"Every tenant reconciled\"). No value until a tenant other than default, "
                   "stale or due its periodic check, gave a reason to ask, or a peer's state said it (a "
                   "handover)."),
        panel("timeseries", "Bytes evicted for the quota",
              [(f"sum by (instance, source, tenant_id) "
                f"(increase(mooncake_kv_tenant_evicted_bytes_total{{{TEN}}}[{RI}]))",
                "{{instance}} {{source}} {{tenant_id}}")], unit="bytes",
              desc="What the leader's quota eviction freed of each tenant (the master's "
                   "mooncake_tenant_evict_bytes_total). Applies to Mooncake release v0.3.12 (object dialect), which "
                   "publishes nothing for the objects it erases, and to Mooncake main, whose eviction of an "
                   "object's last replica publishes nothing: the tenant turns stale (quota_eviction)."),
        panel("timeseries", "Events per tenant",
              [(f"sum by (instance, source, tenant_id, event_type) (rate(mooncake_kv_events_received_total{{{TEN}}}[{RI}]))",
                "{{instance}} {{source}} {{tenant_id}} {{event_type}}")], unit="ops"),
        panel("timeseries", "Quota use per tenant",
              [(f"source_tenant:mooncake_kv_tenant_quota_use:ratio{{{TEN}}}", "{{instance}} {{source}} {{tenant_id}}")],
              unit="percentunit",
              desc="Charged bytes / effective quota, from the leader's /api/v1/tenant_quotas (empty when the "
                   "master has no tenant quotas). Above 100% the tenant is over its quota."),
        panel("timeseries", "Bytes per object per tenant",
              [(f"source_tenant:mooncake_kv_tenant_bytes_per_object:ratio{{{TEN}}}", "{{instance}} {{source}} {{tenant_id}}")],
              unit="bytes",
              desc="The leader's charged bytes over the objects the stream shows, beside the objects per tenant: "
                   "whether a tenant near its quota holds many objects or large ones."),
        panel("timeseries", "Puts refused for the quota",
              [(f"sum by (instance, source, tenant_id, reason) "
                f"(increase(mooncake_kv_tenant_quota_rejects_total{{{TEN}}}[{RI}]))",
                "{{instance}} {{source}} {{tenant_id}} {{reason}}")],
              desc="Puts the leader refused for the tenant's quota (the master's mooncake_tenant_quota_reject_total), "
                   "after evicting what it could of the tenant's own memory: what a tenant over its quota costs "
                   "its clients. Empty while nothing is refused."),
        panel("table", "Tenants over quota",
              [(f"mooncake_kv_tenant_over_quota{{{TEN}}} == 1", "")],
              desc="Normal for a full cache: the leader evicts the tenant's own objects before it refuses a put. "
                   "(admission_closed is another thing: a tenant with no explicit quota policy.)"),
        panel("timeseries", "Charged bytes and effective quota",
              [(f"mooncake_kv_tenant_charged_bytes{{{TEN}}}", "{{instance}} {{source}} {{tenant_id}} charged"),
               (f"mooncake_kv_tenant_quota_effective_bytes{{{TEN}}}", "{{instance}} {{source}} {{tenant_id}} quota")],
              unit="bytes"),
        row("Residency"),
        panel("timeseries", "Object lifetime per tenant (p50, p90, last hour)",
              [(f"source_tenant:mooncake_kv_object_lifetime_seconds:p50_1h{{{TEN}}}",
                "{{instance}} {{source}} {{tenant_id}} p50"),
               (f"source_tenant:mooncake_kv_object_lifetime_seconds:p90_1h{{{TEN}}}",
                "{{instance}} {{source}} {{tenant_id}} p90")], unit="s", desc=RESIDENCY),
        panel("timeseries", "Mean age of live objects",
              [(f"mooncake_kv_object_age_mean_seconds{{{TEN}}}", "{{instance}} {{source}} {{tenant_id}}")], unit="s",
              desc="On the publisher's clock, of the live objects whose birth was seen (how many: the panel "
                   "below). Rising while lifetimes stay short: a few old objects stay, the rest churn."),
        panel("timeseries", "Lives that ended unseen (share, last hour)",
              [(f"source_tenant:mooncake_kv_object_lifetime_unobserved:ratio_rate1h{{{TEN}}}",
                "{{instance}} {{source}} {{tenant_id}}")], unit="percentunit",
              desc="Lives that ended without their start seen (present before the tenant was exact, added by a "
                   "reconciliation, across a gap or restart) or with a timestamp gone backwards: the lifetimes "
                   "above leave them out. 100%: nothing is known of this tenant's residency yet."),
        panel("timeseries", "Lives ended per second",
              [(hist_rate("count", "mooncake_kv_object_lifetime_seconds", "instance, source, tenant_id", TEN, RI),
                "{{instance}} {{source}} {{tenant_id}} seen whole"),
               (f"sum by (instance, source, tenant_id) (rate(mooncake_kv_object_lifetime_unobserved_total{{{TEN}}}[{RI}]))"
                f" or {TENANT_ZERO}", "{{instance}} {{source}} {{tenant_id}} unseen")], unit="ops",
              desc="A tenant's counters of rare events appear at their first event: 0 until then."),
        panel("timeseries", "Live objects whose birth was seen",
              [(f"mooncake_kv_object_age_tracked_objects{{{TEN}}}", "{{instance}} {{source}} {{tenant_id}} birth seen"),
               (f"mooncake_kv_objects{{{TEN}}}", "{{instance}} {{source}} {{tenant_id}} all")], w=24,
              desc="The live objects the mean age describes, beside all the tenant holds: the rest were present "
                   "before the tenant was exact (start-up, a gap, a restart) and have no lifetime to give."),
        row("Events"),
        panel("timeseries", "Duplicate stores and unknown removals",
              [(f"sum by (instance, source, tenant_id) (rate(mooncake_kv_stored_duplicates_total{{{TEN}}}[{RI}]))"
                f" or {TENANT_ZERO}", "{{instance}} {{source}} {{tenant_id}} duplicate stored"),
               (f"sum by (instance, source, tenant_id) (rate(mooncake_kv_removed_unknown_total{{{TEN}}}[{RI}]))"
                f" or {TENANT_ZERO}", "{{instance}} {{source}} {{tenant_id}} unknown removed"),
               (f"sum by (instance, source, tenant_id) "
                f"(increase(mooncake_kv_events_received_total{{{TEN},event_type=\"cleared\"}}[{RI}])) or {TENANT_ZERO}",
                "{{instance}} {{source}} {{tenant_id}} cleared")], unit="ops",
              desc="Unknown removals: of a medium the object was not on (media dialect), of an object not held "
                   "(object dialect). Clears come only from masters of the media dialect (Mooncake main since #3818, "
                   "dev/conductor): release v0.3.12 never sends cleared (0 here)."),
    ])


def exporter():
    inst = WHERE
    return dashboard("mooncake-kv-exporter", "Mooncake KV / Exporter",
                     "The exporter's own health: scrape cost, decode errors, memory, limits.",
                     [var_datasource(), *SCOPE_VARS, SOURCE_VAR], [
        panel("table", "Build", [(f"mooncake_kv_exporter_build_info{{{inst}}}", "")], w=24, h=4),
        panel("timeseries", "Scrape duration", [(f"mooncake_kv_exporter_last_scrape_duration_seconds{{{inst}}}",
                                                 "{{instance}}")], unit="s"),
        panel("timeseries", "Scrape size", [(f"mooncake_kv_exporter_last_scrape_bytes{{{inst}}}", "{{instance}}")],
              unit="bytes"),
        panel("timeseries", "Ingestion held by scrapes (lock hold, mean and p99)",
              [(hist_rate("sum", "mooncake_kv_scrape_lock_hold_seconds", "instance, source", SRC, RI) + " / " +
                hist_rate("count", "mooncake_kv_scrape_lock_hold_seconds", "instance, source", SRC, RI),
                "{{instance}} {{source}} mean"),
               (quantile(0.99, "mooncake_kv_scrape_lock_hold_seconds", "instance, source", SRC, RI),
                "{{instance}} {{source}} p99")], unit="s",
              desc="How long each scrape held the source's lock to copy its figures; the source's ingestion waits "
                   "that long and its messages queue (up to --zmq.rcvhwm). About 1 ms at 10,000 tenants."),
        panel("table", "State taken from a peer at start-up",
              [(f"sum by (instance, source, result) (mooncake_kv_bootstrap_total{{{SRC}}}) > 0",
                "{{instance}} {{source}} {{result}}"),
               (f"sum by (instance, source, result) (mooncake_kv_bootstrap_joins_total{{{SRC}}}) > 0",
                "{{instance}} {{source}} join {{result}}")],
              desc="Empty unless the exporter started with --state.peer. taken: a peer's state was taken; any other "
                   "result says why a peer's was not (docs/guide.md, \"Restarts and upgrades\"). join continued: the "
                   "master's stream proved it continues the copy; join broken: it could not, and the tenants are "
                   "stale (bootstrap)."),
        panel("timeseries", "Receive backlog and lag behind the master",
              [(f"mooncake_kv_receive_backlog_messages{{{SRC}}}", "{{instance}} {{source}} messages drained since the socket was empty"),
               (f"mooncake_kv_sequence_behind{{{SRC}}}", "{{instance}} {{source}} sequence numbers behind the master")],
              desc="Both near 0 while the exporter keeps up; growing, it is falling behind and its receive queue "
                   "(--zmq.rcvhwm) is filling."),
        panel("timeseries", "Decode errors by reason",
              [(f"sum by (instance, source, reason) (rate(mooncake_kv_decode_errors_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} {{reason}}")], unit="ops"),
        panel("timeseries", "Event timestamps unusable for residency",
              [(f"sum by (instance, source, member, reason) "
                f"(rate(mooncake_kv_event_timestamps_unusable_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} {{member}} {{reason}}")], unit="ops",
              desc="Events whose timestamp gave no lifetime: older than one the same publisher process sent "
                   "(backwards: the master's clock stepped back) or no unix milliseconds (invalid). The events "
                   "are applied; only residency loses them. Runbook: Reading residency."),
        panel("timeseries", "Memory",
              [(f"process_resident_memory_bytes{{{inst}}}", "{{instance}} resident"),
               (f"sum by (instance) (mooncake_kv_object_table_bytes{{{inst}}})", "{{instance}} object tables")],
              unit="bytes"),
        panel("timeseries", "Tracked objects and limit",
              [(f"mooncake_kv_tracked_objects{{{inst}}}", "{{instance}} objects"),
               (f"mooncake_kv_limit_max_objects{{{inst}}}", "{{instance}} limit")]),
        panel("timeseries", "Tracked tenants and limit",
              [(f"mooncake_kv_tracked_tenants{{{inst}}}", "{{instance}} tenants"),
               (f"mooncake_kv_limit_max_tenants{{{inst}}}", "{{instance}} limit")]),
        panel("timeseries", "Limit overflow, and idle tenants forgotten",
              [(f"rate(mooncake_kv_tenants_overflow_total{{{inst}}}[{RI}])", "{{instance}} tenants refused"),
               (f"rate(mooncake_kv_objects_overflow_total{{{inst}}}[{RI}])", "{{instance}} objects refused"),
               (f"sum by (instance) (rate(mooncake_kv_tenants_expired_total{{{inst}}}[{RI}]))",
                "{{instance}} idle tenants forgotten (--limits.tenant-idle-timeout)")],
              unit="ops"),
        panel("timeseries", "CPU", [(f"rate(process_cpu_seconds_total{{{inst}}}[{RI}])", "{{instance}}")],
              unit="percentunit"),
        panel("timeseries", "Master poll errors by reason",
              [(f"sum by (instance, source, reason) (rate(mooncake_kv_master_poll_errors_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} status: {{reason}}"),
               (f"sum by (instance, source, reason) (rate(mooncake_kv_master_ha_poll_errors_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} /ha_status, /leader: {{reason}}"),
               (f"sum by (instance, source, reason) (rate(mooncake_kv_master_keys_poll_errors_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} master_key_count: {{reason}}"),
               (f"sum by (instance, source, reason) (rate(mooncake_kv_master_quota_poll_errors_total{{{SRC}}}[{RI}]))",
                "{{instance}} {{source}} tenant quotas: {{reason}}")], unit="ops",
              desc="Failed reads of the master's admin API, by endpoint and reason: the status (and with it the "
                   "loss attribution), leadership, the key count (drift, coverage) and the tenant quotas."),
        panel("timeseries", "Master poll duration",
              [(f"mooncake_kv_master_poll_duration_seconds{{{SRC}}}", "{{instance}} {{source}}")], unit="s"),
        panel("timeseries", "Events per message (median)",
              [(quantile(0.5, "mooncake_kv_batch_events", "instance, source", SRC, RI),
                "{{instance}} {{source}}")]),
        row("HTTP front door"),
        panel("timeseries", "Open HTTP connections",
              [(f"mooncake_kv_http_connections{{{inst}}}", "{{instance}}")], w=8,
              desc="Connections open to the exporter's HTTP server now: scrapers, probes, browsers. Beyond "
                   "--web.max-connections (or --web.max-connections-per-address from one address) new ones "
                   "are refused."),
        panel("timeseries", "Rejected connections by reason",
              [(f"sum by (instance, reason) (rate(mooncake_kv_http_connections_rejected_total{{{inst}}}[{RI}]))",
                "{{instance}} {{reason}}")], unit="ops", w=8, stack=True,
              desc="Connections the exporter refused or closed: limit, address_limit (over the connection "
                   "limits), header_timeout, request_timeout (a slow or stuck client), malformed (400/501). "
                   "Each is logged (level=warn) with the peer's address. Runbook: Exporter HTTP rejecting."),
        panel("timeseries", "Login failures by reason",
              [(f"sum by (instance, reason) (rate(mooncake_kv_http_login_failures_total{{{inst}}}[{RI}]))",
                "{{instance}} {{reason}}")], unit="ops", w=8, stack=True,
              desc="Basic-auth failures (with basic_auth_users in --web.config.file): missing (no credentials: a "
                   "browser's first request, not alerted on), malformed, unknown_user, wrong_password, throttled "
                   "(refused unchecked: too many failures from the peer, or too many checks at once). Each is "
                   "logged (level=warn) with the peer's address. Runbook: Exporter login failures."),
    ])


def keygroups():
    group_var = var_query("key_group", "Key group",
                          'label_values(mooncake_kv_objects_by_key_group{instance=~"$instance",source=~"$source"}, key_group)')
    KG = TEN + ',key_group=~"$key_group"'
    kg_objects = f"mooncake_kv_objects_by_key_group{{{KG}}}"
    KG_UNSEEN = ("sum by (key_group) " +
                 news_increase(f"mooncake_kv_key_group_object_lifetime_unobserved_total{{{KG}}}", kg_objects))
    KG_SEEN = ("sum by (key_group) " +
               news_count(f"mooncake_kv_key_group_object_lifetime_seconds{{{KG}}}", kg_objects))
    return dashboard("mooncake-kv-key-groups", "Mooncake KV / Key groups",
                     "Which model or release holds the cache: objects per key group (--key.group-regex), their media "
                     "and churn.", [var_datasource(), *SCOPE_VARS, SOURCE_VAR, TENANT_VAR, group_var], [
        panel("timeseries", "Objects per key group",
              [(f"sum by (key_group) (mooncake_kv_objects_by_key_group{{{KG}}})", "{{key_group}}")], stack=True, w=24,
              desc="Live objects whose key falls in each group, all selected tenants; \"\" is keys the regex does "
                   "not match, __overflow__ groups beyond --limits.max-key-groups. During a rolling upgrade the old "
                   "release's line should fall to 0."),
        panel("timeseries", "Medium mix per key group",
              [(f"sum by (key_group, medium) (mooncake_kv_objects_by_key_group_medium{{{KG}}})",
                "{{key_group}} {{medium}}")], desc="An object on both media counts under both. " + MEDIA_EXACT),
        panel("timeseries", "Churn per key group",
              [(f"sum by (key_group, event_type) (rate(mooncake_kv_key_group_events_total{{{KG}}}[{RI}]))",
                "{{key_group}} {{event_type}}")], unit="ops"),
        panel("bargauge", "Top 10 key groups by objects",
              [(f"topk(10, sum by (key_group) (mooncake_kv_objects_by_key_group{{{KG}}}))", "{{key_group}}")],
              displayMode="gradient", orientation="horizontal"),
        row("Residency"),
        panel("timeseries", "Object lifetime per key group (p50, p90)",
              [(quantile(0.5, "mooncake_kv_key_group_object_lifetime_seconds", "key_group", KG, "1h"), "{{key_group}} p50"),
               (quantile(0.9, "mooncake_kv_key_group_object_lifetime_seconds", "key_group", KG, "1h"),
                "{{key_group}} p90")],
              unit="s", desc=RESIDENCY + " Lives ended by a cleared count unseen here (no group is kept per object)."),
        panel("timeseries", "Lives that ended unseen per key group (share, last hour)",
              [(f"({KG_UNSEEN} or 0 * {KG_SEEN}) / (({KG_UNSEEN} + {KG_SEEN} or {KG_UNSEEN} or {KG_SEEN}) > 0)",
                "{{key_group}}")], unit="percentunit",
              desc="A group's counters appear at their first event: one that appeared within the hour counts "
                   "whole, as the recording rules count them."),
        row("Limits"),
        panel("timeseries", "Key groups against the limit",
              [("mooncake_kv_tracked_key_groups", "{{instance}} groups"),
               ("mooncake_kv_limit_max_key_groups", "{{instance}} --limits.max-key-groups"),
               (f"sum by (instance) (increase(mooncake_kv_key_groups_overflow_total[{RI}]))",
                "{{instance}} events into __overflow__")]),
    ])


def fleet():
    """Every cluster at a glance, on a central store fed by one shard scraper per cluster (docs/fleet.md):
    every query aggregates by cluster, the external label each shard adds."""
    return dashboard("mooncake-kv-fleet", "Mooncake KV / Fleet",
                     "Every Mooncake cluster at a glance, on a central store (docs/fleet.md): loss by cause, stale "
                     "tenants and why, objects and their media, the model each cluster serves.",
                     [var_datasource(), *SCOPE_VARS, SOURCE_VAR], [
        panel("stat", "Exporters per cluster",
              [(f"count by (cluster) (mooncake_kv_exporter_build_info{{{WHERE}}})", "{{cluster}}")], w=8, h=4,
              desc="Exporters whose samples reach this store, by the cluster label their shard scraper adds. A "
                   "cluster missing here has no shard writing, or one without the cluster external label."),
        panel("stat", "Masters up per cluster",
              [(f"sum by (cluster) (mooncake_kv_master_up{{{SRC}}})", "{{cluster}} up"),
               (f"count by (cluster) (mooncake_kv_master_up{{{SRC}}})", "{{cluster}} known")], w=8, h=4),
        panel("stat", "Tracked objects per cluster",
              [(f"sum by (cluster) (mooncake_kv_objects{{{SRC}}})", "{{cluster}}")], w=8, h=4),
        panel("table", "Model and dialect each cluster serves",
              [(f"count by (cluster, model_name, lora_name, block_size) (mooncake_kv_publisher_model_info{{{SRC}}})", ""),
               (f"count by (cluster, dialect) (mooncake_kv_publisher_dialect{{{SRC}}} == 1)", "")], w=24, h=6,
              desc="The model context the masters' publishers stamp (Mooncake main since #3818 and dev/conductor; "
                   "release v0.3.12 stamps none: empty names), and the dialect their removed events are read in, "
                   "with how many masters of the cluster say so. Two rows for one cluster: its masters differ."),
        panel("timeseries", "Missing sequence numbers by cause",
              [(f"sum by (cluster, cause) (source_cause:mooncake_kv_lost_sequences:rate5m{{{SRC}}})",
                "{{cluster}} {{cause}}")], unit="ops", stack=True,
              desc="Per cluster: dropped by the publisher's queue, lost in transport, unattributed (the recording "
                   "rule source_cause:mooncake_kv_lost_sequences:rate5m, evaluated on this store)."),
        panel("timeseries", "Publisher restarts, failovers and gaps",
              [(f"sum by (cluster) (increase(mooncake_kv_publisher_resets_total{{{SRC}}}[{RI}]))", "{{cluster}} restarts"),
               (f"sum by (cluster) (increase(mooncake_kv_master_failovers_total{{{SRC}}}[{RI}]))", "{{cluster}} failovers"),
               (f"sum by (cluster) (increase(mooncake_kv_sequence_gaps_total{{{SRC}}}[{RI}]))", "{{cluster}} gaps")]),
        panel("timeseries", "Stale tenants by reason",
              [(f"sum by (cluster, reason) (mooncake_kv_stale_tenants{{{SRC}}})", "{{cluster}} {{reason}}")],
              desc="A tenant can be stale for several reasons at once (docs/guide.md, \"Stale tenants\"); the "
                   "Tenants dashboard names them, with since when."),
        panel("timeseries", "Stale and exact tenants",
              [(f"sum by (cluster) (mooncake_kv_state_stale{{{SRC}}})", "{{cluster}} stale"),
               (f"sum by (cluster) (1 - mooncake_kv_state_stale{{{SRC}}})", "{{cluster}} exact")], stack=True),
        panel("timeseries", "Objects per cluster",
              [(f"sum by (cluster) (mooncake_kv_objects{{{SRC}}})", "{{cluster}}")], desc=OBJECTS_EXACT),
        panel("timeseries", "Medium mix per cluster",
              [(f"sum by (cluster) (mooncake_kv_objects{{{SRC}}}) - "
                f"sum by (cluster) (mooncake_kv_objects_by_medium{{{SRC},medium=\"disk\"}})", "{{cluster}} cpu only"),
               (f"sum by (cluster) (mooncake_kv_objects{{{SRC}}}) - "
                f"sum by (cluster) (mooncake_kv_objects_by_medium{{{SRC},medium=\"cpu\"}})", "{{cluster}} disk only"),
               (f"sum by (cluster) (mooncake_kv_objects_by_medium{{{SRC}}}) - sum by (cluster) (mooncake_kv_objects{{{SRC}}})",
                "{{cluster}} both")], stack=True,
              desc="From the objects and the objects by medium (both = cpu + disk - objects). " + MEDIA_EXACT),
        panel("timeseries", "Events applied per cluster",
              [(f"sum by (cluster, event_type) (source_event_type:mooncake_kv_events_received:rate1m{{{SRC}}})",
                "{{cluster}} {{event_type}}")], unit="ops"),
        panel("timeseries", "Event lag per cluster (p99)",
              [(quantile(0.99, "mooncake_kv_event_lag_seconds", "cluster", SRC, RI), "{{cluster}} p99")], unit="s"),
    ])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "dashboards")
    for name, d in (("overview", overview()), ("tenants", tenants()), ("exporter", exporter()),
                    ("key-groups", keygroups()), ("fleet", fleet())):
        with open(os.path.join(out, "mooncake-kv-%s.json" % name), "w") as f:
            json.dump(d, f, indent=2, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
