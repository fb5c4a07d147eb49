// A pod's start through containerd's CRI plugin, kiln beside runc on the
// same containerd and images (run by tools/bench/cri_bench.sh): per round,
// one pod of each handler, in turns: RunPodSandbox, CreateContainer and
// StartContainer of one container (what the kubelet waits on before a pod
// runs), then ExecSync `true` round trips, then streamed Exec `true` (the
// CRI's Exec, then its URL's WebSocket to the stream's end, as kubectl
// exec goes after the API server), then StopPodSandbox and
// RemovePodSandbox. Prints medians of $CRI_BENCH_RUNS rounds (default 7)
// and kiln's ratios to runc.
import { rt, call, podConfig, ctrConfig } from './cri_client.mjs';
import { open } from './stream_client.mjs';

const RUNS = Math.max(3, Number(process.env.CRI_BENCH_RUNS || 7));
const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function round(handler, i) {
  // (no cgroup parent: runc would make the kubelet's cgroups on this host)
  const pod = podConfig(`${handler}${i}`, false);
  const t0 = performance.now();
  const { pod_sandbox_id: sid } = await call(rt, 'RunPodSandbox', { config: pod, runtime_handler: handler });
  const t1 = performance.now();
  const { container_id: cid } = await call(rt, 'CreateContainer',
    { pod_sandbox_id: sid, config: ctrConfig('c', ['sleep', '600']), sandbox_config: pod });
  await call(rt, 'StartContainer', { container_id: cid });
  const t2 = performance.now();
  const execs = [];
  for (let k = 0; k < 5; k++) {
    const e0 = performance.now();
    const r = await call(rt, 'ExecSync', { container_id: cid, cmd: ['true'], timeout: 30 });
    if (r.exit_code !== 0) throw new Error(`ExecSync true in a ${handler} pod: exit code ${r.exit_code}`);
    execs.push(performance.now() - e0);
  }
  const streams = [];
  for (let k = 0; k < 5; k++) {
    const e0 = performance.now();
    const { url } = await call(rt, 'Exec', { container_id: cid, cmd: ['true'], stdout: true });
    const d = await (await open(url)).done(30);
    if (d.code !== 0) throw new Error(`streamed Exec true in a ${handler} pod: ${JSON.stringify(d.status)}`);
    streams.push(performance.now() - e0);
  }
  const t3 = performance.now();
  await call(rt, 'StopPodSandbox', { pod_sandbox_id: sid });
  await call(rt, 'RemovePodSandbox', { pod_sandbox_id: sid });
  const t4 = performance.now();
  return { run: t1 - t0, start: t2 - t0, exec: median(execs), stream: median(streams), down: t4 - t3 };
}

const got = { kiln: [], runc: [] };
try {
  for (let i = 0; i < RUNS; i++) {
    for (const h of i % 2 ? ['runc', 'kiln'] : ['kiln', 'runc']) got[h].push(await round(h, i));
  }
} catch (e) {
  console.log(`cri_bench: failed: ${e.details || e.message}`);
  process.exit(1);
}
const m = (h, k) => median(got[h].map((r) => r[k]));
const line = (what, k) => {
  const a = m('kiln', k);
  const b = m('runc', k);
  console.log(`${what}: kiln ${a.toFixed(1)} ms, runc ${b.toFixed(1)} ms (ratio ${(a / b).toFixed(2)})`);
};
console.log(`CRI (containerd's CRI plugin, handler kiln vs runc), medians of ${RUNS} interleaved rounds:`);
line('  RunPodSandbox -> StartContainer of one container', 'start');
line('    of which RunPodSandbox', 'run');
line('  ExecSync true (median of 5 per pod)', 'exec');
line('  Exec true streamed: Exec + WebSocket to its status (median of 5 per pod)', 'stream');
line('  StopPodSandbox + RemovePodSandbox', 'down');
process.exit(0);
