// Pods started through containerd's CRI plugin (handler kiln) while busy
// loops load the host's CPUs (tools/bench/cri_stress.sh starts them): per
// round, $CRI_STRESS_PODS pods at once, each RunPodSandbox, then for two
// containers CreateContainer, StartContainer, $CRI_STRESS_EXECS ExecSync
// `true`, then StopPodSandbox and RemovePodSandbox; $CRI_STRESS_ROUNDS rounds. Counts
// the calls that failed and prints their messages (each once, with a
// count). Beside them a prober dials the pods' agents as the shim does
// (CONNECT 1024 on each VM's vsock socket, 10 s for the OK) and prints how
// long the guests took to accept, and how many dials were refused or timed
// out: what the shim's own dials meet. Exits 1 if a CRI call failed.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { rt, call, podConfig, ctrConfig, TASKS } from './cri_client.mjs';

const PODS = Math.max(1, Number(process.env.CRI_STRESS_PODS || 4));
const ROUNDS = Math.max(1, Number(process.env.CRI_STRESS_ROUNDS || 3));
const EXECS = Math.max(0, Number(process.env.CRI_STRESS_EXECS || 3));
const failures = new Map();
let calls = 0;
let failed = 0;

async function step(method, req) {
  calls++;
  try {
    return await call(rt, method, req, 60);
  } catch (e) {
    failed++;
    const what = `${method}: ${e.details || e.message}`;
    failures.set(what, (failures.get(what) || 0) + 1);
    return null;
  }
}

async function pod(round, i) {
  const cfg = podConfig(`stress${round}-${i}`, false);
  const run = await step('RunPodSandbox', { config: cfg, runtime_handler: 'kiln' });
  if (!run) return;
  const sid = run.pod_sandbox_id;
  // the pod's first container, then an app container (its root is copied
  // into the running VM through the agent: the calls that failed)
  for (const name of ['c', 'd']) {
    const cr = await step('CreateContainer',
      { pod_sandbox_id: sid, config: ctrConfig(name, ['sleep', '600']), sandbox_config: cfg });
    if (!cr || !await step('StartContainer', { container_id: cr.container_id })) continue;
    for (let k = 0; k < EXECS; k++) {
      const r = await step('ExecSync', { container_id: cr.container_id, cmd: ['true'], timeout: 30 });
      if (r && r.exit_code !== 0) {
        failed++;
        failures.set('ExecSync true: exit code', (failures.get('ExecSync true: exit code') || 0) + 1);
      }
    }
  }
  await step('StopPodSandbox', { pod_sandbox_id: sid });
  await step('RemovePodSandbox', { pod_sandbox_id: sid });
}

// One dial: ['ok', ms] once the OK came, ['refused', ms] at end of file
// before it, ['timeout', 10000], or null when there was no VMM to dial.
function dial(sock) {
  return new Promise((resolve) => {
    const t = performance.now();
    const s = net.connect(sock);
    let got = '';
    const done = (v) => { clearTimeout(timer); s.destroy(); resolve(v); };
    const timer = setTimeout(() => done(['timeout', 10000]), 10000);
    s.on('connect', () => s.write('CONNECT 1024\n'));
    s.on('data', (d) => {
      got += d.toString('latin1');
      if (got.includes('\n')) done([got.startsWith('OK ') ? 'ok' : 'bad', performance.now() - t]);
    });
    s.on('error', (e) => done(e.code === 'ENOENT' || e.code === 'ECONNREFUSED' ? null : ['error', 0]));
    s.on('end', () => done(['refused', performance.now() - t]));
  });
}

let probing = true;
const probes = [];
// (a bundle's path is longer than a unix socket's may be: dial through a
// short link to it)
const links = fs.mkdtempSync('/tmp/kiln-probe-');
function shortSock(id) {
  const l = path.join(links, id.slice(0, 12));
  if (!fs.existsSync(l)) fs.symlinkSync(path.join(TASKS, id), l);
  return path.join(l, 'vsock.sock');
}
async function prober() {
  while (probing) {
    let socks = [];
    try {
      socks = fs.readdirSync(TASKS).filter((d) => fs.existsSync(path.join(TASKS, d, 'vsock.sock')))
        .map(shortSock);
    } catch { /* no task yet, or one went */ }
    for (const r of await Promise.all(socks.map(dial))) if (r) probes.push(r);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const t0 = Date.now();
const probed = prober();
for (let r = 0; r < ROUNDS; r++) {
  await Promise.all(Array.from({ length: PODS }, (_, i) => pod(r, i)));
}
probing = false;
await probed;
fs.rmSync(links, { recursive: true, force: true });
console.log(`cri_stress: ${ROUNDS} rounds of ${PODS} pods at once, ${calls} CRI calls, ` +
  `${failed} failed, ${((Date.now() - t0) / 1000).toFixed(0)} s`);
for (const [what, n] of failures) console.log(`cri_stress:   ${n}x ${what}`);
const oks = probes.filter(([k]) => k === 'ok').map(([, ms]) => ms).sort((a, b) => a - b);
const count = (k) => probes.filter(([x]) => x === k).length;
const at = (q) => (oks.length ? oks[Math.min(oks.length - 1, Math.floor(q * oks.length))].toFixed(0) : '-');
console.log(`cri_stress: prober: ${probes.length} dials of the pods' agents: ${oks.length} ok ` +
  `(CONNECT to OK median ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${oks.length ? oks[oks.length - 1].toFixed(0) : '-'} ms, ` +
  `${oks.filter((ms) => ms > 2000).length} over 2 s), ${count('refused')} refused ` +
  `(after ${probes.filter(([k]) => k === 'refused').map(([, ms]) => ms.toFixed(0)).join(', ') || '-'} ms), ` +
  `${count('timeout')} timed out, ${count('error') + count('bad')} other`);
process.exit(failed ? 1 : 0);
