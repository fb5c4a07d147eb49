// The CRI v1 client of tests/e2e/cri (cri.test.mjs, cri_bench.mjs): the
// RuntimeService and ImageService of the containerd on $CRI_SOCK, from the
// proto subset beside this file, and the pod and container configs the
// kubelet would send. The environment comes from tests/e2e/cri/cri_env.sh.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import loader from '@grpc/proto-loader';

const env = (k) => {
  if (!process.env[k]) throw new Error(`${k} is not set: run tests/e2e/containerd_cri.sh (or tools/bench/cri_bench.sh)`);
  return process.env[k];
};
export const SOCK = env('CRI_SOCK');
export const TASKS = env('CRI_TASKS');
export const LOGS = env('CRI_LOGS');
export const PAUSE = env('CRI_PAUSE');
export const APP = env('CRI_APP');

export { grpc };
const here = path.dirname(fileURLToPath(import.meta.url));
const def = loader.loadSync(path.join(here, 'cri_v1.proto'), {
  keepCase: true, longs: Number, enums: String, defaults: true,
});
const v1 = grpc.loadPackageDefinition(def).runtime.v1;
export const rt = new v1.RuntimeService(`unix://${SOCK}`, grpc.credentials.createInsecure());
export const img = new v1.ImageService(`unix://${SOCK}`, grpc.credentials.createInsecure());

export function call(svc, method, req, secs = 120) {
  return new Promise((resolve, reject) => {
    svc[method](req, { deadline: Date.now() + secs * 1000 }, (err, res) =>
      (err ? reject(err) : resolve(res)));
  });
}

// host network (no CNI), a PID namespace per container as the kubelet
// asks for v1 pods, the pod's IPC
export const ns = { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' };
export const podConfig = (name, cgroupParent = true) => ({
  metadata: { name, uid: `${name}-uid-${process.pid}`, namespace: 'default', attempt: 0 },
  log_directory: path.join(LOGS, name),
  labels: { app: 'kiln-cri' },
  annotations: { 'example.com/note': 'kept as given' },
  // as the kubelet's cgroupfs driver gives it (kiln's shim keeps the VMM
  // in a cgroup of its own, see README "Kubernetes (CRI)")
  linux: { cgroup_parent: cgroupParent ? `/kubepods/besteffort/pod${name}-uid-${process.pid}` : '',
    security_context: { namespace_options: ns } },
});
export const ctrConfig = (name, command, extra = {}) => ({
  metadata: { name, attempt: 0 },
  image: { image: APP },
  command,
  envs: [{ key: 'WHO', value: name }],
  log_path: `${name}/0.log`,
  linux: { security_context: { namespace_options: ns } },
  ...extra,
});

