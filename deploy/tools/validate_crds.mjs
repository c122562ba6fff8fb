// Validates Prometheus Operator resources (ServiceMonitor, PrometheusRule) against the schemas
// of @kubernetes-models/prometheus-operator, generated from the operator's Go API types.
// Input on stdin: a JSON array of {file, doc} (scripts/check_deploy.sh converts the YAML).
// It checks types, required fields, enums and patterns (durations, schemes); it does not
// reject unknown fields, which those generated schemas allow.
import { readFileSync } from "node:fs";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";

const models = { "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor, "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule };
const items = JSON.parse(readFileSync(0, "utf8"));
let failed = 0;
for (const { file, doc } of items) {
  const key = `${doc.apiVersion}/${doc.kind}`;
  const name = `${file} ${doc.kind}/${doc.metadata?.name}`;
  const Model = models[key];
  if (!Model) {
    console.log(`ERROR ${name}: no schema for ${key}`);
    failed++;
    continue;
  }
  try {
    new Model(doc).validate();
    console.log(`INFO ${name} passed`);
  } catch (error) {
    console.log(`ERROR ${name}: ${error.message}`);
    failed++;
  }
}
if (items.length === 0) {
  console.log("ERROR no resources given");
  failed++;
}
process.exit(failed ? 1 : 0);
