// SPDX-License-Identifier: Apache-2.0
// Validates every object of deploy/kubernetes offline against the real
// schemas (kubernetes-models, @kubernetes-models/prometheus-operator), and
// checks what a schema cannot: the PrometheusRule is alerts/'s rules, the
// dashboard ConfigMaps are dashboards/'s JSON, every exporter flag exists,
// and every exporter container is non-root, read-only and probed.
//
//   node validate.mjs REPO_ROOT EXPORTER
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import path from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { ConfigMap, Secret, Service } from "kubernetes-models/v1";
import { Deployment, StatefulSet } from "kubernetes-models/apps/v1";
import { PodMonitor, PrometheusRule, ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
import jsonpatch from "fast-json-patch";

const [root, exporter] = process.argv.slice(2);
const dir = path.join(root, "deploy", "kubernetes");
const models = {
  "v1/ConfigMap": ConfigMap, "v1/Secret": Secret, "v1/Service": Service,
  "apps/v1/Deployment": Deployment, "apps/v1/StatefulSet": StatefulSet,
  "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
  "monitoring.coreos.com/v1/PodMonitor": PodMonitor,
};
let failures = 0, checks = 0;
function check(what, fn) {
  checks++;
  try {
    fn();
    console.log("ok   " + what);
  } catch (e) {
    failures++;
    console.log("FAIL " + what + ": " + (e.message || e).toString().slice(0, 2000));
  }
}
function assert(cond, msg) { if (!cond) throw new Error(msg); }

const objects = [];
const files = readdirSync(dir).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml").sort();
for (const f of files) {
  for (const doc of parseAllDocuments(readFileSync(path.join(dir, f), "utf8"))) {
    assert(!doc.errors.length, f + ": " + doc.errors.join("; "));
    const obj = doc.toJS();
    if (obj) objects.push({ file: f, obj });
  }
}
for (const { file, obj } of objects) {
  check(`${file}: ${obj.kind} ${obj.metadata && obj.metadata.name} is valid`, () => {
    const Model = models[`${obj.apiVersion}/${obj.kind}`];
    assert(Model, `no schema for ${obj.apiVersion} ${obj.kind}`);
    new Model(obj).validate();
  });
}

check("kustomization.yaml lists every manifest but the example", () => {
  const k = parse(readFileSync(path.join(dir, "kustomization.yaml"), "utf8"));
  const want = files.filter((f) => f !== "sidecar-example.yaml");
  assert(isDeepStrictEqual([...k.resources].sort(), want), `resources ${k.resources} != ${want}`);
});

check("the PrometheusRule's rules are alerts/mooncake-kv.rules.yml's", () => {
  const rule = objects.find((o) => o.obj.kind === "PrometheusRule").obj;
  const rules = parse(readFileSync(path.join(root, "alerts", "mooncake-kv.rules.yml"), "utf8"));
  assert(isDeepStrictEqual(rule.spec, rules), "they differ: run tools/gen/gen_k8s.py");
});

check("the dashboard ConfigMaps are dashboards/'s JSON, labelled for Grafana's sidecar", () => {
  const maps = objects.filter((o) => o.obj.kind === "ConfigMap" && o.file === "dashboards.yaml").map((o) => o.obj);
  const jsons = readdirSync(path.join(root, "dashboards")).filter((f) => f.endsWith(".json")).sort();
  assert(maps.length === jsons.length, `${maps.length} ConfigMaps for ${jsons.length} dashboards`);
  for (const m of maps) {
    assert(m.metadata.labels.grafana_dashboard === "1", m.metadata.name + " lacks grafana_dashboard=1");
    for (const [key, text] of Object.entries(m.data)) {
      const file = JSON.parse(readFileSync(path.join(root, "dashboards", key), "utf8"));
      assert(isDeepStrictEqual(JSON.parse(text), file), key + " differs");
    }
  }
});

check("the kube-prometheus-stack component puts release= on the ServiceMonitor and the PrometheusRule", () => {
  const c = parse(readFileSync(path.join(dir, "components", "kube-prometheus-stack", "kustomization.yaml"), "utf8"));
  assert(c.kind === "Component", "not a kustomize Component");
  const rendered = objects.filter((o) => o.file !== "sidecar-example.yaml").map((o) => structuredClone(o.obj));
  for (const p of c.patches)
    for (const obj of rendered)
      if (obj.kind === p.target.kind && obj.apiVersion.startsWith(p.target.group + "/"))
        jsonpatch.applyPatch(obj, parse(p.patch), true, true);
  for (const kind of ["ServiceMonitor", "PrometheusRule"]) {
    const obj = rendered.find((o) => o.kind === kind);
    assert(obj.metadata.labels.release === "kube-prometheus-stack", kind + " has no release label");
    assert(obj.metadata.labels["app.kubernetes.io/name"] === "mooncake-kv-exporter", kind + " lost its labels");
  }
  for (const obj of rendered.filter((o) => !["ServiceMonitor", "PrometheusRule"].includes(o.kind)))
    assert(!(obj.metadata.labels || {}).release, obj.kind + " got the release label");
});

check("sidecar-example.yaml is a topology that works: publishers on, HA for two masters, exporters scraped", () => {
  const ex = objects.filter((o) => o.file === "sidecar-example.yaml").map((o) => o.obj);
  const sts = ex.find((o) => o.kind === "StatefulSet");
  const master = sts.spec.template.spec.containers.find((c) => c.name === "master");
  const arg = (name) => (master.args.find((a) => a.startsWith(name + "=")) || "").split("=").slice(1).join("=");
  assert(arg("--kv_events_backend_id"), "no --kv_events_backend_id: upstream disables the publisher");
  assert(arg("--enable_kv_events") === "true", "KV events off");
  assert(sts.spec.replicas < 2 || arg("--enable_ha") === "true", "several masters without --enable_ha");
  const labels = sts.spec.template.metadata.labels;
  const scraper = ex.find((o) => o.kind === "PodMonitor" || o.kind === "ServiceMonitor");
  assert(scraper, "no PodMonitor or ServiceMonitor: its exporters are never scraped");
  for (const [k, v] of Object.entries(scraper.spec.selector.matchLabels)) assert(labels[k] === v, "selects no pod");
  const port = scraper.spec.podMetricsEndpoints[0].port;
  const exp = sts.spec.template.spec.containers.find((c) => c.image.startsWith("mooncake-kv-exporter"));
  assert(exp.ports.some((p) => p.name === port), "scrapes a port the exporter does not have");
});

check("deployment.yaml rolls without losing the state: a new pod first, and it takes the old one's from the Service", () => {
  const dep = objects.find((o) => o.file === "deployment.yaml" && o.obj.kind === "Deployment").obj;
  const svc = objects.find((o) => o.file === "service.yaml" && o.obj.kind === "Service").obj;
  const ru = (dep.spec.strategy || {}).rollingUpdate || {};
  assert(dep.spec.strategy.type === "RollingUpdate" && ru.maxSurge === 1 && ru.maxUnavailable === 0,
    "not maxSurge 1, maxUnavailable 0: the old pod goes before the new one can take its state");
  const c = dep.spec.template.spec.containers.find((x) => x.image.startsWith("mooncake-kv-exporter"));
  assert(c.args.includes("--state.serve"), "the old pod does not serve its state");
  const peer = (c.args.find((a) => a.startsWith("--state.peer=")) || "").split("=").slice(1).join("=");
  const u = new URL(peer);
  assert(u.hostname === svc.metadata.name, "--state.peer is not the Service: " + peer);
  assert(svc.spec.ports.some((p) => String(p.port) === u.port), "--state.peer's port is not the Service's");
  const timeout = (c.args.find((a) => a.startsWith("--state.peer-timeout=")) || "=30s").split("=")[1];
  const live = c.livenessProbe.periodSeconds * c.livenessProbe.failureThreshold + (c.livenessProbe.initialDelaySeconds || 0);
  assert(parseInt(timeout, 10) + 5 < live, "the bootstrap (timeout + 5 s to connect) outlasts the liveness probe");
});

// docs/sizing.md's memory, for what a container's arguments allow
const sizing = readFileSync(path.join(root, "docs", "sizing.md"), "utf8");
function plannedBytes(args) {
  const get = (flag, dflt) => { const a = args.find((x) => x.startsWith(flag + "=")); return a ? Number(a.split("=")[1]) : dflt; };
  const objects = get("--limits.max-objects", 10000000);
  const source = args.find((a) => a.startsWith("--source=")) || "";
  const masters = Math.max(1, (source.match(/master=/g) || []).length);
  const reconcile = /reconcile=true/.test(source) || args.includes("--master.reconcile") || args.includes("--master.reconcile=true");
  return 35 * 2 ** 20 + 23 * objects + 50e6 * masters + (reconcile ? 39 * objects : 0);
}
function bytesOf(q) {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(q);
  return Number(m[1]) * { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, undefined: 1 }[m[2]];
}
check("docs/sizing.md still gives the formula the manifests are checked against", () => {
  for (const term of ["15 MiB", "up to ~20 MiB", "18–23 B × live objects", "rcvhwm × message size × masters", "29–39 B × objects of a tenant"])
    assert(sizing.includes(term), "sizing.md no longer says " + term);
});

const help = execFileSync(exporter, ["--help"], { encoding: "utf8" });
const flags = new Set(help.match(/--[a-z][a-z0-9.-]*/g));
for (const { file, obj } of objects) {
  const spec = obj.spec && obj.spec.template && obj.spec.template.spec;
  if (!spec) continue;
  for (const c of spec.containers.filter((c) => c.image.startsWith("mooncake-kv-exporter"))) {
    check(`${file}: the exporter container is non-root, read-only, limited and probed`, () => {
      const sc = c.securityContext || {}, psc = spec.securityContext || {};
      assert(sc.runAsNonRoot || psc.runAsNonRoot, "runAsNonRoot");
      assert(sc.readOnlyRootFilesystem === true, "readOnlyRootFilesystem");
      assert(sc.allowPrivilegeEscalation === false, "allowPrivilegeEscalation");
      assert(sc.capabilities && sc.capabilities.drop.includes("ALL"), "capabilities drop ALL");
      assert((sc.seccompProfile || psc.seccompProfile || {}).type === "RuntimeDefault", "seccomp RuntimeDefault");
      assert(c.resources && c.resources.limits && c.resources.limits.memory, "a memory limit");
      const want = plannedBytes(c.args), got = bytesOf(c.resources.limits.memory);
      assert(got >= want, `memory limit ${c.resources.limits.memory} below docs/sizing.md's ${(want / 2 ** 20).toFixed(0)} MiB`);
      assert(c.livenessProbe.httpGet.path === "/-/healthy", "liveness on /-/healthy");
      assert(c.readinessProbe.httpGet.path === "/-/ready", "readiness on /-/ready");
    });
    check(`${file}: every exporter argument is a flag of --help`, () => {
      for (const a of c.args) {
        const flag = a.split("=")[0];
        assert(flags.has(flag), flag + " is not in --help");
      }
    });
  }
}

console.log(`${checks - failures} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
