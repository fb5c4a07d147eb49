// containerd's CRI plugin driven as the kubelet drives it, with the pod's
// runtime handler "kiln" (kiln's shim): run by tests/e2e/containerd_cri.sh,
// which starts the containerd and imports the images. Prints "ok"/"not ok"
// per check, the timings, and "N passed, N failed".
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import {
  grpc, rt, img, call, SOCK, TASKS, LOGS, PAUSE, APP, ns, podConfig, ctrConfig,
} from './cri_client.mjs';
import { check, must, sleep, status, waitExited, run } from './cri_checks.mjs';

const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
const comm = (pid) => { try { return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim(); } catch { return ''; } };
const readPid = (id) => { try { return Number(fs.readFileSync(`${TASKS}/${id}/vmm.pid`, 'utf8')); } catch { return 0; } };
const infoPid = (res) => { try { return JSON.parse(res.info.info).pid; } catch { return 0; } };
const shims = () => {
  try {
    return execFileSync('pgrep', ['-f', `containerd-shim-kiln-v2 .*-address ${SOCK}`]).toString().trim().split('\n').length;
  } catch { return 0; }
};
async function waitFile(file, re, secs) {
  for (let i = 0; i < secs * 10; i++) {
    try { if (re.test(fs.readFileSync(file, 'utf8'))) return true; } catch { /* not yet */ }
    await sleep(100);
  }
  return false;
}
// every mounted cgroup hierarchy (v1's and the v2 tree), by mount point
const cgroupMounts = () => [...new Set(fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
  .map((l) => l.split(' ')).filter((f) => f[3] === '/' && /^cgroup2?$/.test(f[f.indexOf('-') + 1]))
  .map((f) => f[4]))];
const procsOf = (dir) => { try { return fs.readFileSync(`${dir}/cgroup.procs`, 'utf8').split('\n').map(Number); } catch { return []; } };
const vmRss = (pid) => {
  const st = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number((st.match(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm')) || [0, 0])[1]) * 1024;
  return { total: kb('VmRSS'), anon: kb('RssAnon') + kb('RssShmem') };
};
// utime + stime of all the VMM's threads, in ns
const vmmCpuNs = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 1e7; // fields 14, 15; CLK_TCK 100
};
const mib = (b) => Math.round(b / 1048576);
const ms = (ns) => Math.round(ns / 1e6);
const notFound = async (p) => { try { await p; return false; } catch (e) { return e.code === grpc.status.NOT_FOUND; } };

async function main() {
  const ver = await must(rt, 'Version', { version: 'v1' }, 'Version');
  check(ver && ver.runtime_name === 'containerd' && ver.runtime_api_version === 'v1',
    `Version: ${ver && `${ver.runtime_name} ${ver.runtime_version}, CRI ${ver.runtime_api_version}`}`);
  const st = await must(rt, 'Status', {}, 'Status');
  const ready = st && st.status.conditions.find((c) => c.type === 'RuntimeReady');
  check(ready && ready.status, `Status: RuntimeReady ${ready && ready.status}`);
  for (const name of [PAUSE, APP]) {
    const r = await must(img, 'ImageStatus', { image: { image: name } }, `ImageStatus ${name}`);
    check(r && r.image && r.image.repo_tags.includes(name),
      `ImageStatus: the CRI sees ${name}, imported into k8s.io (${r && r.image && r.image.id})`);
  }

  // an unknown handler is refused, as a RuntimeClass naming one would be
  try {
    await call(rt, 'RunPodSandbox', { config: podConfig('nohandler'), runtime_handler: 'nope' });
    check(false, 'RunPodSandbox with runtime_handler "nope" is refused');
  } catch (e) {
    check(/nope/.test(e.details), `RunPodSandbox with runtime_handler "nope" is refused (${e.details})`);
  }

  // ---- the pod: one kiln VM
  const pod = podConfig('web');
  const t0 = Date.now();
  const run = await must(rt, 'RunPodSandbox', { config: pod, runtime_handler: 'kiln' }, 'RunPodSandbox');
  const tRun = Date.now();
  if (!run) return;
  const sid = run.pod_sandbox_id;
  check(true, `RunPodSandbox(runtime_handler "kiln"): sandbox ${sid.slice(0, 12)} (${tRun - t0} ms)`);
  const pst = await must(rt, 'PodSandboxStatus', { pod_sandbox_id: sid, verbose: true }, 'PodSandboxStatus');
  const vmm = readPid(sid);
  check(pst && pst.status.state === 'SANDBOX_READY' && pst.status.runtime_handler === 'kiln' &&
    pst.status.metadata.name === 'web',
  `PodSandboxStatus: ${pst && pst.status.state}, handler ${pst && pst.status.runtime_handler}`);
  check(vmm > 0 && comm(vmm) === 'kiln-vmm' && infoPid(pst) === vmm,
    `the sandbox is a kiln VM: its task's pid ${infoPid(pst)} is kiln-vmm (${vmm}: ${comm(vmm)})`);
  // the VMM is in the sandbox's cgroup (the CRI's cgroupsPath: the pod's
  // cgroup parent / the sandbox id) in every mounted hierarchy, kiln-vmm's
  // jail limits on it; the spec's oomScoreAdj is its
  const cgPath = `${pod.linux.cgroup_parent}/${sid}`;
  const hiers = cgroupMounts();
  const inAll = hiers.filter((m) => procsOf(`${m}${cgPath}`).includes(vmm));
  check(vmm > 0 && hiers.length > 0 && inAll.length === hiers.length &&
    fs.readFileSync(`/proc/${vmm}/cgroup`, 'utf8').trim().split('\n').every((l) => l.endsWith(`:${cgPath}`)),
  `the VMM's pid is in the sandbox's cgroup.procs (${cgPath}) in all ${hiers.length} hierarchies (${inAll.length})`);
  const memLim = hiers.find((m) => /memory$/.test(m) || fs.existsSync(`${m}${cgPath}/memory.max`));
  const limFile = memLim && ['memory.limit_in_bytes', 'memory.max'].map((f) => `${memLim}${cgPath}/${f}`).find((f) => fs.existsSync(f));
  const lim = limFile ? Number(fs.readFileSync(limFile, 'utf8')) : 0;
  check(lim > 256 << 20 && lim < 1 << 30, `kiln-vmm's jail set its memory limit on that cgroup: ${lim >> 20} MiB (${limFile})`);
  const oomSpec = JSON.parse(fs.readFileSync(`${TASKS}/${sid}/config.json`, 'utf8')).process.oomScoreAdj;
  const oomVmm = Number(fs.readFileSync(`/proc/${vmm}/oom_score_adj`, 'utf8'));
  check(typeof oomSpec === 'number' && oomVmm === oomSpec,
    `the VMM's oom_score_adj is the spec's process.oomScoreAdj (${oomVmm}, spec ${oomSpec})`);
  const lp = await must(rt, 'ListPodSandbox', { filter: { id: sid } }, 'ListPodSandbox');
  const item = lp && lp.items[0];
  check(lp && lp.items.length === 1 && item.state === 'SANDBOX_READY' && item.runtime_handler === 'kiln',
    `ListPodSandbox: ${item && `${item.metadata.name} ${item.state} ${item.runtime_handler}`}`);
  const nShims = shims();

  // ---- a long-running container of the pod
  // with what the kubelet mounts: a volume (read-only, as a ConfigMap's)
  // and the termination log
  const vol = path.join(LOGS, 'vol');
  fs.mkdirSync(vol, { recursive: true });
  fs.writeFileSync(path.join(vol, 'config.txt'), 'from the host\n');
  fs.writeFileSync(path.join(LOGS, 'termination-log'), '');
  const c1cfg = ctrConfig('c1', ['sh', '-c', 'echo started $WHO $ROLE; exec sleep 600'], {
    mounts: [{ container_path: '/etc/config', host_path: vol, readonly: true },
      { container_path: '/dev/termination-log', host_path: path.join(LOGS, 'termination-log') }],
  });
  const cr = await must(rt, 'CreateContainer',
    { pod_sandbox_id: sid, config: c1cfg, sandbox_config: pod }, 'CreateContainer c1');
  const tCreate = Date.now();
  if (!cr) return;
  const c1 = cr.container_id;
  const sc = await must(rt, 'StartContainer', { container_id: c1 }, 'StartContainer c1');
  const tStart = Date.now();
  check(sc !== null, `CreateContainer + StartContainer c1 (${tCreate - tRun} + ${tStart - tCreate} ms)`);
  console.log(`# RunPodSandbox -> StartContainer returned: ${tStart - t0} ms ` +
    `(RunPodSandbox ${tRun - t0}, CreateContainer ${tCreate - tRun}, StartContainer ${tStart - tCreate})`);
  let s1 = await status(c1);
  check(s1.state === 'CONTAINER_RUNNING' && s1.started_at > 0 && s1.log_path === path.join(LOGS, 'web', 'c1/0.log'),
    `ContainerStatus c1: ${s1.state}, log_path ${s1.log_path}`);
  const cpid = infoPid(await call(rt, 'ContainerStatus', { container_id: c1, verbose: true }));
  check(cpid === vmm && readPid(c1) === 0 && shims() === nShims,
    `c1 runs in the pod's VM: its task's pid is the pod's VMM (${cpid}), no VMM or shim of its own (${shims()} shims)`);
  check(await waitFile(path.join(LOGS, 'web', 'c1/0.log'), /^\S+ stdout F started c1 app$/m, 10),
    'c1\'s output is in its CRI log file (log_directory/log_path, "TIME stdout F started c1 app")');

  // ExecSync: stdout, stderr, exit code, and where it runs
  const ex = await must(rt, 'ExecSync', {
    container_id: c1, timeout: 30,
    cmd: ['sh', '-c', 'echo out $WHO; cat /srv/app-only; echo; uname -r; echo err >&2; exit 4'],
  }, 'ExecSync');
  const out = ex ? ex.stdout.toString() : '';
  check(ex && ex.exit_code === 4 && ex.stderr.toString() === 'err\n' &&
    out.startsWith('out c1\nthe app image\n'),
  `ExecSync: exit code ${ex && ex.exit_code}, stdout ${JSON.stringify(out)}, stderr ${JSON.stringify(ex && ex.stderr.toString())}`);
  const hostRel = fs.readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim();
  check(out.split('\n')[2] === '6.1.0-kiln' && hostRel !== '6.1.0-kiln',
    `ExecSync's uname -r is the guest kernel's (${out.split('\n')[2]}), not the host's (${hostRel})`);
  const exm = await must(rt, 'ExecSync', {
    container_id: c1, timeout: 30,
    cmd: ['sh', '-c', 'cat /etc/config/config.txt; cat /etc/hostname; ls /dev/termination-log; cat /etc/hosts'],
  }, 'ExecSync of the mounts');
  const m = exm ? exm.stdout.toString().split('\n') : [];
  const hostName = fs.readFileSync('/proc/sys/kernel/hostname', 'utf8').trim();
  // (a host-network pod's /etc/hosts is the CRI's copy of the host's)
  check(exm && exm.exit_code === 0 && m[0] === 'from the host' && m[1] === hostName &&
    m[2] === '/dev/termination-log' && m.slice(3).join('\n') === fs.readFileSync('/etc/hosts', 'utf8'),
  `the volume, the CRI's /etc/hostname and /etc/hosts and the termination log are in c1 (${JSON.stringify(m.slice(0, 4))})`);
  const ex0 = await must(rt, 'ExecSync', { container_id: c1, cmd: ['true'], timeout: 10 }, 'ExecSync true');
  check(ex0 && ex0.exit_code === 0 && ex0.stdout.length === 0, `ExecSync true: exit code ${ex0 && ex0.exit_code}`);

  // ---- a second container of the pod, which exits with a code of its own
  const c2cfg = ctrConfig('c2', ['sh', '-c', 'echo hello from $WHO; echo to stderr >&2; exit 3']);
  const cr2 = await must(rt, 'CreateContainer',
    { pod_sandbox_id: sid, config: c2cfg, sandbox_config: pod }, 'CreateContainer c2');
  const c2 = cr2 && cr2.container_id;
  if (c2 && await must(rt, 'StartContainer', { container_id: c2 }, 'StartContainer c2')) {
    const s2 = await waitExited(c2, 30);
    // (finished_at is the shim's exit time; started_at is the CRI's, taken
    // when Start returned, so it may come later for so short a process)
    check(s2.state === 'CONTAINER_EXITED' && s2.exit_code === 3 && s2.reason === 'Error' &&
      s2.finished_at > s2.created_at && s2.finished_at <= Date.now() * 1e6,
    `a second container of the pod exits: ContainerStatus ${s2.state}, exit code ${s2.exit_code}, reason ${s2.reason}, ` +
      `finished ${(s2.finished_at - s2.created_at) / 1e6} ms after its creation (started: ${(s2.started_at - s2.created_at) / 1e6} ms)`);
    const log2 = path.join(LOGS, 'web', 'c2/0.log');
    check(await waitFile(log2, /^\S+ stdout F hello from c2$/m, 10) &&
      await waitFile(log2, /^\S+ stderr F to stderr$/m, 1),
    `its stdout and stderr are in its CRI log file: ${JSON.stringify(fs.existsSync(log2) ? fs.readFileSync(log2, 'utf8') : '')}`);
    check(comm(vmm) === 'kiln-vmm' && (await status(c1)).state === 'CONTAINER_RUNNING',
      'the pod\'s VM and c1 run on after c2\'s exit');
  }
  const ls = await must(rt, 'ListContainers', { filter: { pod_sandbox_id: sid } }, 'ListContainers');
  const ids = ls ? ls.containers.map((c) => `${c.metadata.name}:${c.state}`).sort() : [];
  check(ids.join(' ') === 'c1:CONTAINER_RUNNING c2:CONTAINER_EXITED', `ListContainers of the pod: ${ids.join(' ')}`);


  // shareProcessNamespace: a container of the pod's PID namespace (the CRI
  // names the sandbox task's, the VMM's) sees the pause process
  const c3cfg = ctrConfig('c3', ['sleep', '601']);
  c3cfg.linux.security_context.namespace_options = { ...ns, pid: 'POD' };
  const cr3 = await must(rt, 'CreateContainer',
    { pod_sandbox_id: sid, config: c3cfg, sandbox_config: pod }, 'CreateContainer c3 (pid POD)');
  const c3 = cr3 && cr3.container_id;
  if (c3 && await must(rt, 'StartContainer', { container_id: c3 }, 'StartContainer c3')) {
    const p3 = await must(rt, 'ExecSync', { container_id: c3, cmd: ['ps'], timeout: 30 }, 'ExecSync ps in c3');
    const p1 = await must(rt, 'ExecSync', { container_id: c1, cmd: ['ps'], timeout: 30 }, 'ExecSync ps in c1');
    const o3 = p3 ? p3.stdout.toString() : '';
    const o1 = p1 ? p1.stdout.toString() : '';
    check(/sleep 2147483647/.test(o3) && /sleep 601/.test(o3) && !/sleep 2147483647|sleep 601/.test(o1),
      `a container with the pod's PID namespace sees the sandbox's pause process, c1 sees neither (${o3.trim().split('\n').length - 1} processes)`);
  }

  // a second pod at the same time: a VM of its own
  const pod2 = podConfig('db');
  const run2 = await must(rt, 'RunPodSandbox', { config: pod2, runtime_handler: 'kiln' }, 'RunPodSandbox db');
  if (run2) {
    const vmm2 = readPid(run2.pod_sandbox_id);
    check(vmm2 > 0 && vmm2 !== vmm && comm(vmm2) === 'kiln-vmm' && comm(vmm) === 'kiln-vmm',
      `a second pod is a second kiln VM (${vmm2}, the first ${vmm})`);
    await must(rt, 'StopPodSandbox', { pod_sandbox_id: run2.pod_sandbox_id }, 'StopPodSandbox db');
    const rm2 = await must(rt, 'RemovePodSandbox', { pod_sandbox_id: run2.pod_sandbox_id }, 'RemovePodSandbox db');
    for (let i = 0; i < 100 && alive(vmm2) && comm(vmm2) === 'kiln-vmm'; i++) await sleep(100);
    check(rm2 && !(alive(vmm2) && comm(vmm2) === 'kiln-vmm') && (await status(c1)).state === 'CONTAINER_RUNNING',
      'its stop and remove end its VM only; the first pod runs on');
  }

  // Exec (kubectl exec) hands out the CRI's streaming URL; its stream is
  // driven in streams.test.mjs
  const exs = await must(rt, 'Exec', { container_id: c1, cmd: ['sh'], stdin: true, stdout: true }, 'Exec');
  check(exs && /^http:\/\/127\.0\.0\.1:\d+\/exec\//.test(exs.url), `Exec: a streaming URL (${exs && exs.url})`);
  // PodSandboxStats: containerd reads the pod's cgroup (the cgroup parent),
  // which now holds the VMM: its memory is the VMM's, and a busy container
  // raises its CPU time as much as the VMM's own
  const podStats = async () => (await call(rt, 'PodSandboxStats', { pod_sandbox_id: sid })).stats.linux;
  const ps0 = await must(rt, 'PodSandboxStats', { pod_sandbox_id: sid }, 'PodSandboxStats');
  const memOf = (st) => ({
    usage: st && st.memory && st.memory.usage_bytes ? st.memory.usage_bytes.value : 0,
    ws: st && st.memory && st.memory.working_set_bytes ? st.memory.working_set_bytes.value : 0,
  });
  const m0 = memOf(ps0 && ps0.stats.linux);
  const r0 = vmRss(vmm);
  // 64 MiB more of guest memory touched (dd's buffer, filled from /dev/zero)
  const fill = await must(rt, 'ExecSync', {
    container_id: c1, timeout: 60, cmd: ['busybox', 'dd', 'if=/dev/zero', 'of=/dev/null', 'bs=64M', 'count=1'],
  }, 'ExecSync dd with a 64 MiB buffer');
  let m1 = { usage: 0, ws: 0 };
  try { m1 = memOf(await podStats()); } catch { /* checked below */ }
  const r1 = vmRss(vmm);
  check(ps0 && fill && fill.exit_code === 0 && m1.usage >= 0.9 * r1.anon && m1.ws <= r1.total + (64 << 20) &&
    r1.total - r0.total >= 60 << 20 && m1.usage - m0.usage >= 0.9 * (r1.total - r0.total),
  `PodSandboxStats memory is the VMM's: usage ${mib(m0.usage)} -> ${mib(m1.usage)} MiB (working set ` +
    `${mib(m0.ws)} -> ${mib(m1.ws)}) as the guest touches 64 MiB (dd exit ${fill && fill.exit_code}); the VMM's RSS ${mib(r0.total)} -> ` +
    `${mib(r1.total)} MiB (anon+shmem ${mib(r0.anon)} -> ${mib(r1.anon)})`);
  const cpuFile = `${hiers.find((m) => fs.existsSync(`${m}${pod.linux.cgroup_parent}/cpuacct.usage`)) || ''}` +
    `${pod.linux.cgroup_parent}/cpuacct.usage`;
  const acct = () => { try { return Number(fs.readFileSync(cpuFile, 'utf8')); } catch { return 0; } };
  const a0 = acct();
  const v0 = vmmCpuNs(vmm);
  const p0 = ps0 ? Number(ps0.stats.linux.cpu.usage_core_nano_seconds.value) : 0;
  const busy = await must(rt, 'ExecSync', {
    container_id: c1, timeout: 30,
    cmd: ['sh', '-c', 'end=$(($(date +%s) + 3)); while [ "$(date +%s)" -lt $end ]; do :; done'],
  }, 'ExecSync of a busy loop');
  const a1 = acct();
  const v1 = vmmCpuNs(vmm);
  let p1 = 0;
  try { p1 = Number((await podStats()).cpu.usage_core_nano_seconds.value); } catch { /* checked below */ }
  check(busy && busy.exit_code === 0 && v1 - v0 > 300e6 && a1 - a0 >= 0.9 * (v1 - v0) && p1 - p0 >= 0.9 * (v1 - v0),
    `a busy container (3 s) raises the pod cgroup's cpuacct.usage by ${ms(a1 - a0)} ms and PodSandboxStats' ` +
      `CPU by ${ms(p1 - p0)} ms, the VMM's own CPU time by ${ms(v1 - v0)} ms`);

  // ContainerStats: the shim's metrics as the CRI reads them
  const cs = await must(rt, 'ContainerStats', { container_id: c1 }, 'ContainerStats');
  const mem = cs && cs.stats.memory && cs.stats.memory.working_set_bytes;
  const cpu = cs && cs.stats.cpu && cs.stats.cpu.usage_core_nano_seconds;
  check(cs && cs.stats.attributes.id === c1 && mem && mem.value > 0 && cpu,
    `ContainerStats c1: working set ${mem && mem.value} bytes, CPU ${cpu && cpu.value} ns`);

  const lcs = await must(rt, 'ListContainerStats', { filter: { pod_sandbox_id: sid } }, 'ListContainerStats');
  const named = lcs ? lcs.stats.filter((x) => x.memory && x.memory.working_set_bytes && x.memory.working_set_bytes.value > 0)
    .map((x) => x.attributes.metadata.name).sort() : [];
  check(named.join(' ') === (c3 ? 'c1 c3' : 'c1'),
    `ListContainerStats of the pod: figures for its running containers (${named.join(' ')})`);

  // UpdateContainerResources: a memory limit the guest holds
  const dd = async (bs) => (await call(rt, 'ExecSync', {
    container_id: c1, timeout: 60, cmd: ['busybox', 'dd', 'if=/dev/zero', 'of=/dev/null', `bs=${bs}`, 'count=1'],
  })).exit_code;
  const up = await must(rt, 'UpdateContainerResources',
    { container_id: c1, linux: { memory_limit_in_bytes: 64 << 20 } }, 'UpdateContainerResources');
  if (up) {
    const small = await dd('16M');
    const big = await dd('80M');
    check(small === 0 && big !== 0 && (await status(c1)).state === 'CONTAINER_RUNNING',
      `UpdateContainerResources (memory 64 MiB) holds in the guest: 16 MiB fits (${small}), 80 MiB is killed (${big}), c1 runs on`);
  }

  // ---- stop, remove: containers, then the pod
  const tStop = Date.now();
  await must(rt, 'StopContainer', { container_id: c1, timeout: 2 }, 'StopContainer c1');
  s1 = await status(c1);
  check(s1.state === 'CONTAINER_EXITED' && [137, 143].includes(s1.exit_code),
    `StopContainer c1 (timeout 2 s): ${s1.state}, exit code ${s1.exit_code} (${Date.now() - tStop} ms)`);
  await must(rt, 'StopContainer', { container_id: c1, timeout: 2 }, 'StopContainer c1 again');
  if (c3) await must(rt, 'StopContainer', { container_id: c3, timeout: 0 }, 'StopContainer c3');
  for (const id of [c1, c2, c3].filter(Boolean)) {
    const rm = await must(rt, 'RemoveContainer', { container_id: id }, `RemoveContainer ${id.slice(0, 12)}`);
    check(rm && await notFound(status(id)), `RemoveContainer ${id.slice(0, 12)}: its ContainerStatus is NotFound`);
  }
  await must(rt, 'StopPodSandbox', { pod_sandbox_id: sid }, 'StopPodSandbox');
  for (let i = 0; i < 100 && alive(vmm) && comm(vmm) === 'kiln-vmm'; i++) await sleep(100);
  const pst2 = await must(rt, 'PodSandboxStatus', { pod_sandbox_id: sid }, 'PodSandboxStatus after stop');
  check(pst2 && pst2.status.state === 'SANDBOX_NOTREADY' && !(alive(vmm) && comm(vmm) === 'kiln-vmm'),
    `StopPodSandbox: ${pst2 && pst2.status.state}, the pod's VMM is gone`);
  const rmp = await must(rt, 'RemovePodSandbox', { pod_sandbox_id: sid }, 'RemovePodSandbox');
  check(rmp && await notFound(call(rt, 'PodSandboxStatus', { pod_sandbox_id: sid })),
    'RemovePodSandbox: its PodSandboxStatus is NotFound');
  const again = await must(rt, 'RemovePodSandbox', { pod_sandbox_id: sid }, 'RemovePodSandbox again');
  check(again !== null, 'RemovePodSandbox again is no error (idempotent, as the CRI asks)');
  for (let i = 0; i < 100 && shims() > 0; i++) await sleep(100);
  let left = [];
  try { left = fs.readdirSync(TASKS); } catch { /* none made */ }
  check(shims() === 0 && left.length === 0, `nothing is left: shims ${shims()}, task bundles ${left.length}`);
  // the shim made the pod's cgroups (no kubelet made the parent here) and
  // removed them with the VM
  const cgLeft = cgroupMounts().filter((m) => fs.existsSync(`${m}/kubepods/besteffort/pod${pod.metadata.uid}`));
  check(cgLeft.length === 0, `the pods' cgroups the shim made are gone (left in ${cgLeft.length} hierarchies)`);
}

await run(main);
