// The deployment examples worker mode documents: the Docker Compose file
// (examples/worker-mode), the Helm chart with each example's values
// (charts/queryflux), and the native-sidecar manifest. Compose files are
// checked by docker-compose itself; the chart is rendered by Go's
// text/template as Helm does (tests/deploy/helm_render.go: Debian has no
// Helm); every QueryFlux config they carry is checked by `queryflux
// validate`, and what the chart wires together (ports, probes, Secrets,
// Services, selectors) must agree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join, resolve } from 'node:path';
import YAML from 'yaml';
import { runCli, writeConfig } from './support/gateway.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const chart = join(repo, 'charts/queryflux');

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 120000, ...opts });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/// `queryflux validate` of a config given as data or text: its output.
function validate(config) {
  const { file } = writeConfig(typeof config === 'string' ? config : YAML.stringify(config));
  const r = runCli(['validate', '--config', file]);
  assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
  return r.stdout + r.stderr;
}

function deepMerge(base, over) {
  if (over === null || typeof over !== 'object' || Array.isArray(over)
      || base === null || typeof base !== 'object' || Array.isArray(base)) return over;
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = k in base ? deepMerge(base[k], v) : v;
  return out;
}

/// `helm template <release> charts/queryflux -f ...` (an example's name, or
/// a path) as objects; throws
/// with the renderer's message when the chart refuses the values.
function render(release, ...valueFiles) {
  let values = YAML.parse(readFileSync(join(chart, 'values.yaml'), 'utf8'));
  for (const f of valueFiles) {
    const path = f.startsWith('/') ? f : join(chart, 'examples', f);
    values = deepMerge(values, YAML.parse(readFileSync(path, 'utf8')));
  }
  const meta = YAML.parse(readFileSync(join(chart, 'Chart.yaml'), 'utf8'));
  const ctx = {
    Values: values,
    Chart: { Name: meta.name, Version: meta.version, AppVersion: meta.appVersion },
    Release: { Name: release, Namespace: 'default', Service: 'Helm' },
  };
  const { file } = writeConfig(JSON.stringify(ctx), 'context.json');
  const r = run('go', ['run', join(repo, 'tests/deploy/helm_render.go'), chart, file],
    { env: { ...process.env, GOCACHE: join(dirname(file), 'gocache') } });
  if (r.code !== 0) throw new Error(r.stderr.trim());
  const docs = YAML.parseAllDocuments(r.stdout).map((d) => {
    assert.deepEqual(d.errors, [], `${r.stdout}`);
    return d.toJSON();
  }).filter(Boolean);
  return { values, docs, of: (kind) => docs.filter((d) => d.kind === kind) };
}

function one(list, what) {
  assert.equal(list.length, 1, `one ${what}, got ${list.length}`);
  return list[0];
}

/// What every rendering must hold, whatever the role.
function checkWiring({ values, of }) {
  const secret = one(of('Secret'), 'Secret');
  const config = YAML.parse(Buffer.from(secret.data['config.yaml'], 'base64').toString());
  assert.match(validate(config), /OK/);
  assert.equal(config.queryflux.role, values.role, 'the config runs the release\'s role');

  const workload = one(of(values.kind), values.kind);
  const pod = workload.spec.template;
  for (const [k, v] of Object.entries(workload.spec.selector.matchLabels))
    assert.equal(pod.metadata.labels[k], v, `the selector's ${k} is on the pod`);
  const [container] = pod.spec.containers;
  const named = Object.fromEntries(container.ports.map((p) => [p.name, p.containerPort]));
  // The ports the chart opens are the ones the config listens on.
  const frontends = config.queryflux.frontends ?? {};
  for (const [name, port] of Object.entries(values.ports)) {
    const key = name.toLowerCase();
    if (!port) {
      assert.equal(named[key], undefined, `${name} is off`);
      continue;
    }
    assert.equal(named[key], port, `${name} is open`);
    if (name === 'admin') assert.equal(config.queryflux.adminApi.port, port, 'adminApi.port');
    else assert.equal(frontends[name]?.port, port, `frontends.${name}.port`);
  }
  // The probes ask the ops port, in TLS when it speaks only TLS.
  const scheme = config.queryflux.adminApi.tls ? 'HTTPS' : 'HTTP';
  for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
    assert.equal(container[probe].httpGet.port, 'admin', `${probe} asks the ops port`);
    assert.equal(container[probe].httpGet.scheme, scheme, `${probe} in ${scheme}`);
  }
  assert.equal(container.startupProbe.httpGet.path, '/readyz');
  const mounts = Object.fromEntries(container.volumeMounts.map((m) => [m.name, m.mountPath]));
  assert.equal(mounts.config, '/etc/queryflux');
  const volumes = Object.fromEntries(pod.spec.volumes.map((v) => [v.name, v]));
  assert.equal(volumes.config.secret.secretName, secret.metadata.name);
  assert.deepEqual(container.args, ['serve', '--config', '/etc/queryflux/config.yaml']);

  for (const service of of('Service')) {
    assert.deepEqual(service.spec.selector, workload.spec.selector.matchLabels);
    for (const p of service.spec.ports)
      assert.ok(named[p.targetPort], `the Service's ${p.targetPort} is a container port`);
  }
  return { config, workload, container, mounts, volumes, service: of('Service')[0] };
}

test('the Compose example: docker-compose accepts it, and the configs it mounts fit together', () => {
  const dir = join(repo, 'examples/worker-mode');
  const r = run('docker-compose', ['-f', join(dir, 'compose.yaml'), 'config'], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  const { services } = YAML.parse(r.stdout);
  assert.deepEqual(Object.keys(services).sort(), ['control-plane', 'postgres', 'worker-a', 'worker-b']);
  const configs = {};
  for (const name of ['control-plane', 'worker-a', 'worker-b']) {
    // docker-compose prints a volume long ({source, target}) or short
    // ("source:target:mode"), by version.
    const mounts = services[name].volumes.map((v) => {
      if (typeof v !== 'string') return v;
      const [source, target] = v.split(':');
      return { source, target };
    });
    const mount = mounts.find((v) => v.target === '/etc/queryflux/config.yaml');
    assert.ok(mount && existsSync(mount.source), `${name} mounts its config`);
    assert.match(validate(readFileSync(mount.source, 'utf8')), /OK/);
    configs[name] = YAML.parse(readFileSync(mount.source, 'utf8')).queryflux;
  }
  const cp = configs['control-plane'];
  assert.equal(cp.role, 'controlPlane');
  assert.equal(new URL(cp.persistence.url).hostname, 'postgres');
  const secret = cp.workerApi.sharedSecret;
  const names = new Set();
  for (const w of ['worker-a', 'worker-b']) {
    const url = new URL(configs[w].controlPlane.url);
    assert.equal(url.hostname, 'control-plane');
    assert.equal(Number(url.port), cp.adminApi.port);
    assert.equal(configs[w].controlPlane.auth.sharedSecret, secret);
    names.add(configs[w].workerName);
  }
  assert.equal(names.size, 2, 'two workers, two names');
  // Studio and the admin API are published by the control plane.
  assert.ok(services['control-plane'].ports.some((p) => Number(p.target) === cp.adminApi.port));
});

test('Helm: the control plane example, its replicas named for each other, TLS on the admin port', () => {
  const r = render('queryflux-control', 'control-plane-values.yaml');
  const { config, mounts, workload } = checkWiring(r);
  assert.equal(mounts.tls, '/tls');
  assert.ok(config.queryflux.adminApi.tls.certFile.startsWith('/tls/'));
  assert.equal(workload.kind, 'StatefulSet');
  assert.equal(workload.spec.replicas, 2);
  assert.equal(r.of('HorizontalPodAutoscaler').length, 0);
  // Each replica advertises its canonical name, <pod>.<serviceName>: a
  // headless Service of that name must select the pods (a draining owner
  // included), or the others cannot reach the lease owner.
  const headless = r.of('Service').find((s) => s.spec.clusterIP === 'None');
  assert.ok(headless, 'a headless Service');
  assert.equal(workload.spec.serviceName, headless.metadata.name);
  assert.equal(headless.spec.publishNotReadyAddresses, true);
  assert.equal(config.queryflux.workerApi.advertiseUrl, undefined, 'the default URL is the one');
});

test('Helm: shared-service workers keep a client on its pod and list their peers', () => {
  const r = render('queryflux-workers', 'worker-values.yaml');
  const { config, mounts, volumes } = checkWiring(r);
  const [service, headless] = [...r.of('Service')].sort((a, b) =>
    a.metadata.name.length - b.metadata.name.length);
  assert.equal(service.spec.sessionAffinity, 'ClientIP');
  assert.equal(headless.spec.clusterIP, 'None');
  assert.equal(headless.spec.publishNotReadyAddresses, undefined, 'only ready workers are peers');
  // peerBootstrap resolves the headless Service, on the ops port.
  const [host, port] = config.queryflux.controlPlane.peerBootstrap.address.split(':');
  assert.equal(host, headless.metadata.name);
  assert.equal(Number(port), config.queryflux.adminApi.port);
  assert.equal(config.queryflux.workerLabelsFile, `${mounts.podinfo}/labels`);
  assert.equal(volumes.podinfo.downwardAPI.items[0].path, 'labels');
  assert.ok(config.queryflux.controlPlane.tls.caFile.startsWith(`${mounts.ca}/`));
});

test('Helm: autoscaled workers leave the replica count to the autoscaler', () => {
  const r = render('queryflux-workers', 'worker-values.yaml', 'worker-autoscaling-values.yaml');
  checkWiring(r);
  const deployment = one(r.of('Deployment'), 'Deployment');
  assert.equal(deployment.spec.replicas, undefined);
  const hpa = one(r.of('HorizontalPodAutoscaler'), 'HorizontalPodAutoscaler');
  assert.equal(hpa.spec.scaleTargetRef.name, deployment.metadata.name);
  assert.equal(hpa.spec.maxReplicas, 20);
  // Utilization is of the request: the container has one.
  assert.equal(deployment.spec.template.spec.containers[0].resources.requests.cpu, '500m');
});

test('Helm: pod labels and annotations go on the pods, not into the selector', () => {
  const extra = writeConfig('podLabels: { team: checkout }\npodAnnotations: { owner: data-platform }\n',
    'values.yaml').file;
  const r = render('queryflux-workers', 'worker-values.yaml', extra);
  const { workload } = checkWiring(r);
  assert.equal(workload.spec.template.metadata.labels.team, 'checkout');
  assert.equal(workload.spec.template.metadata.annotations.owner, 'data-platform');
  assert.equal(workload.spec.selector.matchLabels.team, undefined);
  assert.match(workload.spec.template.metadata.annotations['checksum/config'], /^[0-9a-f]{64}$/);
});

test('Helm: one worker per node, reached on its own node', () => {
  const r = render('queryflux-node-workers', 'worker-daemonset-values.yaml');
  const { workload } = checkWiring(r);
  assert.equal(workload.spec.replicas, undefined);
  assert.equal(workload.spec.updateStrategy.rollingUpdate.maxUnavailable, 1);
  assert.equal(one(r.of('Service'), 'Service').spec.internalTrafficPolicy, 'Local');
  assert.equal(r.of('HorizontalPodAutoscaler').length, 0);
});

test('Helm: a role or kind the chart does not know, or no config, is refused in words', () => {
  const cases = [
    ['role: bogus\nconfig: {queryflux: {role: worker}}\n', /role is controlPlane, worker or standalone/],
    ['kind: ReplicaSet\nconfig: {queryflux: {role: worker}}\n', /kind is Deployment, DaemonSet or StatefulSet/],
    ['role: worker\n', /set config/],
    ['config: {queryflux: {role: worker}}\nautoscaling: {enabled: true}\n', /needs resources.requests.cpu/],
  ];
  for (const [text, message] of cases)
    assert.throws(() => render('x', writeConfig(text, 'values.yaml').file), message);
});

test('the native sidecar manifest: a worker beside the application, its config valid', () => {
  const docs = YAML.parseAllDocuments(
    readFileSync(join(chart, 'examples/worker-sidecar-manifest.yaml'), 'utf8')).map((d) => d.toJSON());
  const secret = one(docs.filter((d) => d.kind === 'Secret'), 'Secret');
  const config = YAML.parse(secret.stringData['config.yaml']);
  assert.match(validate(config), /OK/);
  const pod = one(docs.filter((d) => d.kind === 'Deployment'), 'Deployment').spec.template.spec;
  const [sidecar] = pod.initContainers;
  assert.equal(sidecar.restartPolicy, 'Always', 'a native sidecar');
  const ports = Object.fromEntries(sidecar.ports.map((p) => [p.name, p.containerPort]));
  assert.equal(ports.admin, config.queryflux.adminApi.port);
  assert.equal(ports.postgreswire, config.queryflux.frontends.postgresWire.port);
  assert.equal(sidecar.startupProbe.httpGet.path, '/readyz');
  const volumes = Object.fromEntries(pod.volumes.map((v) => [v.name, v]));
  const configMount = sidecar.volumeMounts.find((m) => m.mountPath === '/etc/queryflux');
  assert.equal(volumes[configMount.name].secret.secretName, secret.metadata.name);
  const app = pod.containers[0].env.find((e) => e.name === 'DATABASE_URL').value;
  assert.equal(Number(new URL(app).port), ports.postgreswire, 'the application reaches its worker');
});
