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
import { PrometheusRule, ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";

const [root, exporter] = process.argv.slice(2);
const dir = path.join(root, "deploy", "kubernetes");
const models = {
  "v1/ConfigMap": ConfigMap, "v1/Secret": Secret, "v1/Service": Service,
  "apps/v1/Deployment": Deployment, "apps/v1/StatefulSet": StatefulSet,
  "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
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
  assert(isDeepStrictEqual(rule.spec, rules), "they differ: run tools/gen_k8s.py");
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
