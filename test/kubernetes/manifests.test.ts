// The Kubernetes manifests of deploy/kubernetes checked offline: no cluster runs here.
// Every object against the Kubernetes API schemas (kubernetes-models: its JSON schemas
// and its TypeScript interfaces, both generated from Kubernetes' OpenAPI definitions),
// then the wiring between objects, and each process's configuration through the
// product's own loader, as the compose file's test does.
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertJsonRpcExposureAllowed, jsonRpcAuthStrategy, loadConfig } from '@bmaas/common';
import { ensureCertificate, ensureCertificateAuthority, parseCertificateArgument } from '@bmaas/pki';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { type KubernetesObject, kubernetesModelsVersion, schemaErrors, typeErrors } from './kubernetes-schema.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BASE = join(REPO, 'deploy', 'kubernetes');

interface Kustomization {
  namespace: string;
  resources: string[];
  images: Array<{ name: string }>;
}

function readObjects(file: string): KubernetesObject[] {
  return parseAllDocuments(readFileSync(join(BASE, file), 'utf8')).map((document) => {
    if (document.errors.length > 0) throw new Error(`${file}: ${document.errors[0]?.message}`);
    return document.toJS() as KubernetesObject;
  });
}

const kustomization = readObjects('kustomization.yaml')[0] as unknown as Kustomization;
/** The objects `kubectl apply -k` would send: the base's resources, in the kustomization's namespace. */
const objects = kustomization.resources.flatMap((file) => readObjects(file).map((object) => ({ file, object })));
/** The Secrets the operator makes (their shape), validated like the rest but never applied by the base. */
const exampleSecrets = readObjects('secrets.example.yaml');
const label = ({ file, object }: { file: string; object: KubernetesObject }) =>
  `${file}: ${object.kind} ${object.metadata?.name}`;

function find<T = Record<string, unknown>>(kind: string, name: string): T {
  const found = objects.find(({ object }) => object.kind === kind && object.metadata?.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the base`);
  return found.object as unknown as T;
}

interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: Array<{
    name: string;
    value?: string;
    valueFrom?: {
      fieldRef?: { fieldPath: string };
      secretKeyRef?: { name: string; key: string };
      configMapKeyRef?: { name: string; key: string };
    };
  }>;
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  volumeMounts?: Array<{ name: string; mountPath: string; subPath?: string; readOnly?: boolean }>;
  ports?: Array<{ name: string; containerPort: number }>;
}
interface PodSpec {
  hostNetwork?: boolean;
  initContainers?: Container[];
  containers: Container[];
  volumes?: Array<{
    name: string;
    configMap?: { name: string };
    secret?: { secretName: string; items?: Array<{ key: string; path: string }> };
    emptyDir?: unknown;
  }>;
}
interface Workload {
  metadata: { name: string };
  spec: {
    replicas?: number;
    serviceName?: string;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    volumeClaimTemplates?: Array<{ metadata: { name: string } }>;
  };
}
interface Service {
  spec: { clusterIP?: string; selector: Record<string, string>; ports: Array<{ port: number; targetPort: string }> };
}

const workloads = objects.filter(({ object }) => ['Deployment', 'StatefulSet', 'Job'].includes(object.kind));
const podOf = (object: KubernetesObject) => (object as unknown as Workload).spec.template.spec;

/** A pod's values of the Downward API for a pod named `podName` in the base's namespace on a node at HOST_IP. */
const DOWNWARD = (podName: string): Record<string, string> => ({
  'metadata.name': podName,
  'metadata.namespace': kustomization.namespace,
  'status.hostIP': '192.0.2.21',
});

/** `$(NAME)` references expanded as the kubelet does, from the container's earlier env entries. */
function expand(text: string, env: Record<string, string>): string {
  return text.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole);
}

const directory = mkdtempSync(join(tmpdir(), 'bmaas-kubernetes-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** Stand-ins for the Secret values the containers read through their environment. */
const SECRET_VALUES: Record<string, Record<string, string>> = {
  'bmaas-database': { connection: 'postgresql://bmaas:secret@db.example.net:5432/bmaas' },
  'bmaas-credentials': { 'json-rpc-password': 'json-rpc-secret' },
};

/**
 * A container's environment as the kubelet would give it: values, the Downward API,
 * Secret and ConfigMap keys; each `$(NAME)` expanded from the entries before it.
 */
function containerEnv(container: Container, podName: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) {
      const data = find<{ data: Record<string, string> }>('ConfigMap', source.configMapRef.name).data;
      Object.assign(env, data);
    }
  }
  for (const entry of container.env ?? []) {
    const from = entry.valueFrom;
    if (entry.value !== undefined) env[entry.name] = expand(entry.value, env);
    else if (from?.fieldRef) env[entry.name] = DOWNWARD(podName)[from.fieldRef.fieldPath] ?? '';
    else if (from?.secretKeyRef) {
      const value = SECRET_VALUES[from.secretKeyRef.name]?.[from.secretKeyRef.key];
      if (value === undefined) throw new Error(`${container.name}: no test value for ${from.secretKeyRef.name}`);
      env[entry.name] = value;
    }
  }
  return env;
}

/** `--config-file` files of a bmaas container, mapped from their mount to the ConfigMap's text written here. */
function configOf(workload: string, podName: string) {
  const object = workloads.find(({ object: o }) => o.metadata?.name === workload)?.object as KubernetesObject;
  const pod = podOf(object);
  const container = pod.containers[0] as Container;
  const command = container.command ?? [];
  const files = command.flatMap((arg, i) => (command[i - 1] === '--config-file' ? [arg] : []));
  const local = files.map((path) => {
    const mount = container.volumeMounts?.find((m) => m.mountPath === path);
    const volume = pod.volumes?.find((v) => v.name === mount?.name);
    if (!mount?.subPath || !volume?.configMap) throw new Error(`${workload}: ${path} is not a ConfigMap key`);
    const text = find<{ data: Record<string, string> }>('ConfigMap', volume.configMap.name).data[mount.subPath];
    if (text === undefined) throw new Error(`${workload}: ConfigMap ${volume.configMap.name} has no ${mount.subPath}`);
    const file = join(directory, `${workload}-${mount.subPath}`);
    writeFileSync(file, text);
    return file;
  });
  const env = Object.fromEntries(
    Object.entries(containerEnv(container, podName)).filter(([name]) => name.startsWith('BMAAS_')),
  );
  return { config: loadConfig({ configFiles: local, env, pluginSections: 'ignore' }), env, container, pod };
}

describe(`deploy/kubernetes against the Kubernetes API schemas (kubernetes-models ${kubernetesModelsVersion()})`, () => {
  it('lists every manifest of the directory in the kustomization, and only files that exist', () => {
    for (const file of kustomization.resources) expect(existsSync(join(BASE, file)), file).toBe(true);
    const manifests = readdirSync(BASE).filter(
      (file) => file.endsWith('.yaml') && file !== 'kustomization.yaml' && !file.endsWith('.example.yaml'),
    );
    expect([...manifests].sort()).toEqual([...kustomization.resources].sort());
    expect(kustomization.namespace).toBe('bmaas');
    expect(find('Namespace', 'bmaas')).toBeDefined();
  });

  it('validates every object, the example Secrets too, against its kind’s JSON schema', async () => {
    const all = [...objects.map(({ object }) => object), ...exampleSecrets];
    expect(all.length).toBeGreaterThanOrEqual(10);
    for (const object of all) {
      expect(await schemaErrors(object), `${object.kind} ${object.metadata?.name}`).toBeUndefined();
    }
  });

  it('knows every field of every object: no misspelt or unknown key, no wrong type', () => {
    const all = [...objects, ...exampleSecrets.map((object) => ({ file: 'secrets.example.yaml', object }))];
    expect(
      typeErrors(
        all.map(({ object }) => object),
        all.map(label),
      ),
    ).toEqual([]);
  });

  it('would refuse a misspelt field, a wrong type and a missing required field', async () => {
    const api = find<KubernetesObject>('Deployment', 'bmaas-api');
    const spec = api.spec as Record<string, unknown>;
    const misspelt = { ...api, spec: { ...spec, replica: 3 } } as KubernetesObject;
    const wrongType = { ...api, spec: { ...spec, replicas: 'three' } } as KubernetesObject;
    const noSelector = { ...api, spec: { ...spec, selector: undefined } } as KubernetesObject;
    delete (noSelector.spec as Record<string, unknown>).selector;
    expect(typeErrors([misspelt], ['misspelt']).join('\n')).toMatch(
      /'"replica"' does not exist in type 'IDeploymentSpec'/,
    );
    // Deep inside too: a container's misspelt field.
    const pod = podOf(api);
    const deep = structuredClone(api);
    podOf(deep).containers[0] = { ...(pod.containers[0] as Container), imagePullPolcy: 'Always' } as Container;
    expect(typeErrors([deep], ['deep']).join('\n')).toMatch(/'"imagePullPolcy"' does not exist in type 'IContainer'/);
    expect(await schemaErrors(wrongType)).toMatch(/replicas/);
    expect(await schemaErrors(noSelector)).toMatch(/selector/);
    expect(await schemaErrors({ apiVersion: 'apps/v1', kind: 'Deploymnet' })).toMatch(/no Kubernetes API schema/);
  });

  it('runs the API as a Deployment of several replicas behind a Service that selects it', () => {
    const api = find<Workload>('Deployment', 'bmaas-api');
    expect(api.spec.replicas).toBeGreaterThanOrEqual(2);
    expect(api.spec.selector.matchLabels).toEqual(api.spec.template.metadata.labels);
    const service = find<Service>('Service', 'bmaas-api');
    expect(service.spec.selector).toEqual(api.spec.selector.matchLabels);
    const container = podOf(api as unknown as KubernetesObject).containers[0] as Container;
    expect(container.ports?.map((p) => p.name)).toContain(service.spec.ports[0]?.targetPort);
  });

  it('runs the conductors as a StatefulSet with a headless Service: stable names for the hash ring', () => {
    const conductors = find<Workload>('StatefulSet', 'bmaas-conductor');
    expect(conductors.spec.replicas).toBeGreaterThanOrEqual(2);
    const headless = find<Service>('Service', conductors.spec.serviceName ?? '');
    expect(headless.spec.clusterIP).toBe('None');
    expect(headless.spec.selector).toEqual(conductors.spec.selector.matchLabels);
    expect(conductors.spec.template.metadata.labels).toMatchObject(conductors.spec.selector.matchLabels);
    expect(conductors.spec.template.spec.hostNetwork).toBe(true);
    expect(conductors.spec.volumeClaimTemplates?.map((c) => c.metadata.name)).toEqual(['httpboot']);
  });

  it('runs dnsmasq alone on the host network, with the provisioning settings it names', () => {
    const dnsmasq = find<Workload>('Deployment', 'bmaas-dnsmasq');
    expect(dnsmasq.spec.replicas).toBe(1);
    const pod = dnsmasq.spec.template.spec;
    expect(pod.hostNetwork).toBe(true);
    const container = pod.containers[0] as Container;
    const env = containerEnv(container, 'bmaas-dnsmasq-x');
    const args = (container.args ?? []).map((arg) => expand(arg, env));
    // Every $(NAME) is defined: none is left for dnsmasq to read literally.
    expect(args.filter((arg) => arg.includes('$('))).toEqual([]);
    expect(args).toContain('--dhcp-boot=tag:ipxe,http://192.0.2.11:8081/boot.ipxe');
    expect(args).toContain('--port=0');
  });

  it('names only Secrets and ConfigMaps that exist, and images the kustomization sets', () => {
    const secrets = new Map(exampleSecrets.map((s) => [s.metadata?.name, s as unknown as { stringData: object }]));
    for (const { object } of workloads) {
      const pod = podOf(object);
      for (const volume of pod.volumes ?? []) {
        if (volume.configMap) expect(find('ConfigMap', volume.configMap.name)).toBeDefined();
        if (volume.secret) {
          const secret = secrets.get(volume.secret.secretName);
          expect(secret, `${object.metadata?.name}: Secret ${volume.secret.secretName}`).toBeDefined();
          for (const item of volume.secret.items ?? [])
            expect(Object.keys(secret?.stringData ?? {})).toContain(item.key);
        }
      }
      for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
        expect(kustomization.images.map((i) => i.name)).toContain(container.image);
        for (const entry of container.env ?? []) {
          const ref = entry.valueFrom?.secretKeyRef;
          if (ref) expect(Object.keys(secrets.get(ref.name)?.stringData ?? {}), `${ref.name}`).toContain(ref.key);
        }
        const claims = (object as unknown as Workload).spec.volumeClaimTemplates?.map((c) => c.metadata.name) ?? [];
        const volumes = [...(pod.volumes ?? []).map((v) => v.name), ...claims];
        for (const mount of container.volumeMounts ?? []) {
          expect(volumes, `${container.name}: ${mount.name}`).toContain(mount.name);
        }
      }
    }
  });

  it('gives the API and each conductor a configuration the product loads: PostgreSQL by URL, http_basic inside TLS', () => {
    const api = configOf('bmaas-api', 'bmaas-api-x');
    expect(api.config.database.connection).toBe(SECRET_VALUES['bmaas-database']?.connection);
    expect(api.config.DEFAULT.auth_strategy).toBe('http_basic');
    expect(api.config.json_rpc.use_ssl).toBe(true);
    expect(api.config.json_rpc.password).toBe('json-rpc-secret');
    // The files the configuration names are mounted.
    const mounted = (path: string | null, c: Container) =>
      c.volumeMounts?.some((m) => path?.startsWith(`${m.mountPath}/`)) ?? false;
    expect(mounted(api.config.json_rpc.cafile, api.container)).toBe(true);
    expect(mounted(api.config.DEFAULT.http_basic_auth_user_file, api.container)).toBe(true);

    const conductor = configOf('bmaas-conductor', 'bmaas-conductor-1');
    expect(conductor.config.DEFAULT.host).toBe('bmaas-conductor-1.bmaas-conductor.bmaas.svc');
    expect(conductor.config.deploy.http_url).toBe('http://192.0.2.21:8081');
    expect(jsonRpcAuthStrategy(conductor.config)).toBe('http_basic');
    expect(() => assertJsonRpcExposureAllowed(conductor.config)).not.toThrow();
    expect(mounted(conductor.config.json_rpc.cert_file, conductor.container)).toBe(true);
    expect(mounted(conductor.config.json_rpc.http_basic_auth_user_file, conductor.container)).toBe(true);
    // The CA's key is in the init container only.
    const caKeyVolume = conductor.pod.volumes?.find((v) => v.secret && !v.secret.items)?.name;
    expect(conductor.container.volumeMounts?.map((m) => m.name)).not.toContain(caKeyVolume);
  });

  it('gives each conductor pod, from its init container, a certificate of the install CA for the name the API dials', () => {
    const statefulSet = find<KubernetesObject>('StatefulSet', 'bmaas-conductor');
    const pod = podOf(statefulSet);
    const init = pod.initContainers?.[0] as Container;
    // The operator's CA, as bmaas-certificates makes it and the Secret carries it.
    const tls = join(directory, 'tls');
    const ca = ensureCertificateAuthority(tls);
    for (const podName of ['bmaas-conductor-0', 'bmaas-conductor-2']) {
      const env = containerEnv(init, podName);
      const [, script, target = '', ...names] = (init.command ?? []).map((arg) => expand(arg, env));
      expect(script).toBe('packages/pki/dist/certificates-main.js');
      // Its CA mount is <target>/ca: the certificates it makes are signed by that CA.
      expect(init.volumeMounts?.map((m) => m.mountPath)).toContain(`${target}/ca`);
      for (const name of names) ensureCertificate({ directory: tls, ...parseCertificateArgument(name) });

      const { config } = configOf('bmaas-conductor', podName);
      const certFile = (config.json_rpc.cert_file ?? '').replace(`${target}/`, `${tls}/`);
      const certificate = new X509Certificate(readFileSync(certFile));
      expect(certificate.verify(new X509Certificate(readFileSync(ca.certFile)).publicKey)).toBe(true);
      expect(certificate.checkHost(config.DEFAULT.host), podName).toBe(config.DEFAULT.host);
      expect(certificate.checkHost('bmaas-conductor-1.bmaas-conductor.bmaas.svc'), podName).toBeUndefined();
    }
  });
});
