// Kubernetes manifests: renders deploy/k8s with `kubectl kustomize` and checks the objects a
// cluster would get: probes on /health, ports, the environment the entry point reads, whole-core
// resources, grace periods that match qvl's, and that Service, HPA and PDB select the pods.
// Usage: node k8s.test.mjs. Exit 77 = skipped (no kubectl).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

const repo = new URL('../../', import.meta.url).pathname;
let rendered;
try {
  rendered = execFileSync('kubectl', ['kustomize', `${repo}deploy/k8s`], {
    encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000,
  });
} catch (error) {
  if (error.code === 'ENOENT') {
    console.log('SKIP: kubectl is not installed (scripts/setup.sh installs kubernetes-client)');
    process.exit(77);
  }
  throw error;
}
const objects = parseAllDocuments(rendered).map((doc) => doc.toJS());
const only = (kind) => {
  const found = objects.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0];
};
const deployment = only('Deployment');
const pod = deployment.spec.template;
const server = pod.spec.containers.find((c) => c.name === 'qvl');
const config = only('ConfigMap');
const entrypoint = readFileSync(`${repo}deploy/container/entrypoint.sh`, 'utf8');
const dockerfile = readFileSync(`${repo}deploy/Dockerfile`, 'utf8');
const matches = (selector, labels) =>
  Object.entries(selector).every(([key, value]) => labels[key] === value);
const cores = (quantity) => {
  assert.match(String(quantity), /^\d+$/, `whole cores, not ${quantity}`);
  return Number(quantity);
};

test('every object is labelled and the kinds are all there', () => {
  for (const kind of ['Service', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'PersistentVolumeClaim']) only(kind);
  for (const o of objects) assert.equal(o.metadata.labels['app.kubernetes.io/name'], 'qvl', o.kind);
});

test('the container listens where probes, Service and Prometheus look', () => {
  const port = server.ports.find((p) => p.name === 'http');
  assert.equal(port.containerPort, Number(config.data.QVL_PORT));
  for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
    assert.equal(server[probe].httpGet.path, '/health', probe);
    assert.ok([port.name, port.containerPort].includes(server[probe].httpGet.port), probe);
  }
  const annotations = pod.metadata.annotations;
  assert.equal(annotations['prometheus.io/scrape'], 'true');
  assert.equal(Number(annotations['prometheus.io/port']), port.containerPort);
  assert.equal(annotations['prometheus.io/path'], '/metrics');
  const service = only('Service');
  assert.ok(matches(service.spec.selector, pod.metadata.labels));
  assert.equal(service.spec.ports[0].targetPort, 'http');
});

test('probes give loading time and do not kill a busy server quickly', () => {
  const { startupProbe, livenessProbe, readinessProbe } = server;
  assert.ok(startupProbe.periodSeconds * startupProbe.failureThreshold >= 600, 'startup >= 10 min');
  assert.ok(livenessProbe.periodSeconds * livenessProbe.failureThreshold >= 60, 'liveness >= 1 min');
  assert.ok(readinessProbe.periodSeconds <= 5, 'readiness reacts within seconds');
});

test('environment: the generated ConfigMap feeds keys the entry point reads', () => {
  assert.ok(server.envFrom.some((e) => e.configMapRef?.name === config.metadata.name));
  for (const key of Object.keys(config.data)) {
    assert.match(key, /^QVL_/);
    assert.ok(entrypoint.includes(`\${${key}`), `${key} is read by entrypoint.sh`);
  }
  const threads = server.env.find((e) => e.name === 'QVL_THREADS');
  assert.deepEqual(threads.valueFrom.resourceFieldRef,
    { containerName: 'qvl', resource: 'limits.cpu', divisor: '1' });
  assert.ok(entrypoint.includes('${QVL_THREADS'));
  assert.ok(!String(server.image).match(/^qvl(:|$)/), `image is set by the kustomization: ${server.image}`);
});

test('resources: requests equal limits in whole cores (Guaranteed QoS)', () => {
  for (const c of [...pod.spec.containers, ...pod.spec.initContainers]) {
    assert.deepEqual(c.resources.requests, c.resources.limits, c.name);
    cores(c.resources.limits.cpu);
  }
  assert.ok(cores(server.resources.limits.cpu) >= 1);
});

test('termination grace covers preStop and qvl --shutdown-grace', () => {
  const preStop = server.lifecycle.preStop.exec.command;
  assert.equal(preStop[0], 'sleep');
  const grace = Number(config.data.QVL_SHUTDOWN_GRACE);
  assert.ok(pod.spec.terminationGracePeriodSeconds >= Number(preStop[1]) + grace + 1,
    `${pod.spec.terminationGracePeriodSeconds} >= ${preStop[1]} + ${grace} + 1`);
  assert.equal(deployment.spec.strategy.rollingUpdate.maxUnavailable, 0);
});

test('the model cache: init container pulls into the PVC the server reads', () => {
  const [pull] = pod.spec.initContainers;
  assert.deepEqual(pull.command.slice(1, 2), ['pull']);
  assert.ok(pull.command.includes('$(QVL_MODEL)'));
  assert.ok(pull.envFrom.some((e) => e.configMapRef?.name === config.metadata.name));
  const cacheDir = dockerfile.match(/HF_HOME=(\S+)/)[1];
  for (const c of [pull, server]) {
    const mount = c.volumeMounts.find((m) => m.name === 'hf-cache');
    assert.equal(mount.mountPath, cacheDir, c.name);
    assert.equal(c.env.find((e) => e.name === 'HF_HOME').value, cacheDir, c.name);
  }
  const volume = pod.spec.volumes.find((v) => v.name === 'hf-cache');
  assert.equal(volume.persistentVolumeClaim.claimName, only('PersistentVolumeClaim').metadata.name);
  assert.equal(server.env.find((e) => e.name === 'QVL_OFFLINE').value, '1');
  assert.equal(pod.spec.securityContext.runAsUser, Number(dockerfile.match(/--uid (\d+)/)[1]));
  assert.equal(pod.spec.securityContext.runAsNonRoot, true);
});

test('HPA and PDB act on these pods', () => {
  const hpa = only('HorizontalPodAutoscaler');
  assert.equal(hpa.spec.scaleTargetRef.kind, 'Deployment');
  assert.equal(hpa.spec.scaleTargetRef.name, deployment.metadata.name);
  assert.ok(hpa.spec.minReplicas >= 2);
  assert.equal(hpa.spec.metrics[0].resource.name, 'cpu');
  const pdb = only('PodDisruptionBudget');
  assert.ok(matches(pdb.spec.selector.matchLabels, pod.metadata.labels));
  assert.ok(matches(deployment.spec.selector.matchLabels, pod.metadata.labels));
});
