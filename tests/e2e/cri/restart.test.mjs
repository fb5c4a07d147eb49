// A kiln pod of containerd's CRI plugin across containerd's restart (issue
// 19), in two runs of this file by tests/e2e/containerd_cri.sh, which
// restarts containerd between them: "before FILE" runs a pod (runtime
// handler "kiln") with a container counting on its stdout and notes it in
// FILE; "after FILE" finds the pod READY and the container RUNNING again
// (the CRI plugin recovers them from the shim), the count going on in its
// CRI log (containerd opened its fifo again) with nothing of the restart
// lost, ExecSync working, and the
// pod stopped and removed with nothing left (VMM, shim). Prints "ok"/"not
// ok" per check and "N passed, N failed".
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { rt, call, SOCK, TASKS, LOGS, podConfig, ctrConfig } from './cri_client.mjs';
import { check, must, sleep, status, run } from './cri_checks.mjs';

const [phase, file] = process.argv.slice(2);
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
const shims = () => {
  try {
    return execFileSync('pgrep', ['-f', `containerd-shim-kiln-v2 .*-address ${SOCK}`]).toString().trim().split('\n').length;
  } catch { return 0; }
};
const logFile = path.join(LOGS, 'rs', 'count/0.log');
// the counts in the container's CRI log ("TIME stdout F nN"), and the last (or 0)
const logNs = () => {
  let log = '';
  try { log = fs.readFileSync(logFile, 'utf8'); } catch { return []; }
  return [...log.matchAll(/^\S+ stdout F n(\d+)$/gm)].map((m) => Number(m[1]));
};
const lastN = () => { const all = logNs(); return all.length ? all[all.length - 1] : 0; };
async function waitFor(cond, secs) {
  for (let i = 0; i < secs * 10; i++) {
    if (await cond()) return true;
    await sleep(100);
  }
  return cond();
}

async function before() {
  const pod = podConfig('rs', false);
  const r = await must(rt, 'RunPodSandbox', { config: pod, runtime_handler: 'kiln' }, 'RunPodSandbox rs');
  if (!r) return;
  const sid = r.pod_sandbox_id;
  const cfg = ctrConfig('count', ['sh', '-c', 'i=0; while :; do i=$((i+1)); echo n$i; sleep 0.2; done']);
  const cr = await must(rt, 'CreateContainer', { pod_sandbox_id: sid, config: cfg, sandbox_config: pod },
    'CreateContainer count');
  if (!cr || !await must(rt, 'StartContainer', { container_id: cr.container_id }, 'StartContainer count')) return;
  const counting = await waitFor(() => lastN() > 0, 10);
  const vmm = Number(fs.readFileSync(`${TASKS}/${sid}/vmm.pid`, 'utf8'));
  check(counting && alive(vmm), `before the restart: a kiln pod runs, its container counting in its CRI log (n${lastN()}; VMM ${vmm})`);
  fs.writeFileSync(file, JSON.stringify({ sid, cid: cr.container_id, vmm }));
}

async function after() {
  const { sid, cid, vmm } = JSON.parse(fs.readFileSync(file, 'utf8'));
  const n0 = lastN();
  const ps = await must(rt, 'PodSandboxStatus', { pod_sandbox_id: sid }, 'PodSandboxStatus rs');
  const cs = await status(cid);
  check(ps && ps.status.state === 'SANDBOX_READY' && cs.state === 'CONTAINER_RUNNING' && alive(vmm),
    `after containerd's restart the CRI recovers the pod (${ps && ps.status.state}) and its container (${cs.state}), the same VMM ${vmm}`);
  const grew = await waitFor(() => lastN() > n0 + 3, 10);
  check(grew, `its output goes on in its CRI log (n${n0} at the restart, n${lastN()} now)`);
  // what it wrote while containerd was away waited in its fifo (the shim
  // holds it open meanwhile)
  const seen = new Set(logNs());
  const lost = [...Array(lastN()).keys()].map((i) => i + 1).filter((i) => !seen.has(i));
  check(lost.length === 0, `nothing it wrote while containerd was away is lost: n1 to n${lastN()} are all in its log` +
    `${lost.length ? ` (not: ${lost.length}, n${lost[0]} to n${lost[lost.length - 1]})` : ''}`);
  const ex = await must(rt, 'ExecSync', { container_id: cid, cmd: ['sh', '-c', 'echo $WHO'], timeout: 30 }, 'ExecSync after the restart');
  check(ex && ex.exit_code === 0 && ex.stdout.toString() === 'count\n',
    `ExecSync into it works (${ex && JSON.stringify(ex.stdout.toString())})`);
  await must(rt, 'StopPodSandbox', { pod_sandbox_id: sid }, 'StopPodSandbox rs');
  const cs2 = await status(cid);
  const rm = await must(rt, 'RemovePodSandbox', { pod_sandbox_id: sid }, 'RemovePodSandbox rs');
  const gone = await waitFor(() => !alive(vmm) && shims() === 0 && !fs.existsSync(`${TASKS}/${sid}`), 10);
  check(cs2.state === 'CONTAINER_EXITED' && rm && gone,
    `StopPodSandbox + RemovePodSandbox: the container ${cs2.state}, the VMM ${alive(vmm) ? 'still runs' : 'gone'}, ${shims()} shims, bundle ${fs.existsSync(`${TASKS}/${sid}`) ? 'left' : 'gone'}`);
}

run(phase === 'before' ? before : after);
