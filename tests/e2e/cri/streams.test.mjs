// The CRI's streaming calls against a kiln pod, end to end: Exec, Attach
// and PortForward hand out a URL on containerd's streaming server, and the
// test speaks the Kubernetes streaming protocol to it as kubectl exec,
// attach and port-forward do (stream_client.mjs: WebSocket,
// v4.channel.k8s.io). Run by tests/e2e/containerd_cri.sh after
// cri.test.mjs, on the same containerd. A runc pod of the same containerd
// is the reference for the error of a command that does not exist. Prints
// "ok"/"not ok" per check and "N passed, N failed".
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { grpc, rt, call, LOGS, podConfig, ctrConfig } from './cri_client.mjs';
import { check, must, sleep, status, waitExited, run } from './cri_checks.mjs';
import { open, STDIN, STDOUT, STDERR, STATUS } from './stream_client.mjs';

const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');
const show = (s, n = 120) => JSON.stringify(s.length > n ? `${s.slice(0, n)}...` : s);

// TCP ports in LISTEN state in this (the host's) network namespace: a
// host-network pod's ports are the host's, where the shim listens for the
// guest's servers and where containerd's port forward connects
function listening() {
  const ports = new Set();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let lines = [];
    try { lines = fs.readFileSync(f, 'utf8').split('\n').slice(1); } catch { /* no IPv6 */ }
    for (const l of lines) {
      const w = l.trim().split(/\s+/);
      if (w.length > 3 && w[3] === '0A') ports.add(parseInt(w[1].split(':')[1], 16));
    }
  }
  return ports;
}
async function waitListening(port, secs) {
  for (let i = 0; i < secs * 10; i++) {
    if (listening().has(port)) return true;
    await sleep(100);
  }
  return false;
}
// three ports nothing on the host listens on
function freePorts() {
  const busy = listening();
  const base = 20000 + (process.pid % 1000) * 10;
  const free = [];
  for (let p = base; free.length < 3 && p < base + 200; p++) if (!busy.has(p)) free.push(p);
  return free;
}

async function execStream(cid, cmd, opts) {
  const req = { container_id: cid, cmd, tty: false, stdin: false, stdout: true, stderr: !opts.tty, ...opts };
  const r = await call(rt, 'Exec', req);
  return open(r.url);
}
async function execTests(cid) {
  // non-tty: stdin in, stdout and stderr apart, a non-zero exit code on
  // the status channel
  let s = await execStream(cid, ['sh', '-c', 'read a; echo "out $a $WHO"; echo "err $a" >&2; exit 4'],
    { stdin: true });
  s.send(STDIN, 'ping\n');
  let d = await s.done(20);
  check(d.closed && s.text(STDOUT) === 'out ping srv\n' && s.text(STDERR) === 'err ping\n' && d.code === 4 &&
    d.status.reason === 'NonZeroExitCode',
  `Exec (non-tty, ${s.protocol}): stdin in, stdout ${show(s.text(STDOUT))} and stderr ${show(s.text(STDERR))} ` +
    `apart, exit code ${d.code} (${d.status && d.status.reason})`);

  // 256 KiB of stdin, in 64 KiB messages, arrive whole
  const blob = crypto.randomBytes(256 << 10);
  s = await execStream(cid, ['sh', '-c', `head -c ${blob.length} | busybox sha256sum`], { stdin: true });
  for (let o = 0; o < blob.length; o += 64 << 10) s.send(STDIN, blob.subarray(o, o + (64 << 10)));
  d = await s.done(30);
  check(d.code === 0 && s.text(STDOUT).split(' ')[0] === sha(blob),
    `Exec: 256 KiB of stdin arrive whole (sha256 in the guest ${s.text(STDOUT).slice(0, 16)}, ` +
      `sent ${sha(blob).slice(0, 16)}), exit code ${d.code}`);

  // 4 MiB of stdout, with stderr beside it
  s = await execStream(cid, ['sh', '-c', 'busybox dd if=/dev/zero bs=65536 count=64 2>/dev/null; echo done >&2'], {});
  d = await s.done(30);
  check(d.code === 0 && s.bytes(STDOUT).length === 4 << 20 && !s.bytes(STDOUT).some((b) => b !== 0) &&
    s.text(STDERR) === 'done\n',
  `Exec: 4 MiB of stdout arrive whole (${s.bytes(STDOUT).length} bytes), stderr beside it ${show(s.text(STDERR))}`);

  // four at once, each with its own stdin
  const many = await Promise.all([0, 1, 2, 3].map(async (i) => {
    const m = await execStream(cid, ['sh', '-c', 'read a; echo "$a $a"'], { stdin: true });
    m.send(STDIN, `n${i}\n`);
    const md = await m.done(30);
    return md.code === 0 && m.text(STDOUT) === `n${i} n${i}\n`;
  }));
  check(many.every(Boolean), `four Exec streams at once each get their own stdin and stdout (${many.join(' ')})`);

  s = await execStream(cid, ['sh', '-c', 'echo hi; cat /srv/app-only'], {});
  d = await s.done(20);
  check(d.code === 0 && d.status.status === 'Success' && s.text(STDOUT) === 'hi\nthe app image' &&
    s.text(STDERR) === '',
  `Exec without stdin: stdout ${show(s.text(STDOUT))}, status ${d.status && d.status.status}`);

  // a terminal: the resize channel sets the size stty reads; stderr is
  // the terminal's too
  s = await execStream(cid, ['sh'], { tty: true, stdin: true });
  const size = async (w, h) => {
    s.resize(w, h);
    // (the resize and stdin go apart: containerd's ResizePty, stdin's fifo)
    for (let i = 0; i < 20; i++) {
      s.send(STDIN, 'busybox stty size\n');
      if (await s.waitFor(STDOUT, (b) => new RegExp(`^${h} ${w}\\r?$`, 'm').test(b.toString()), 0.5)) return i + 1;
    }
    return 0;
  };
  const t1 = await size(100, 40);
  const t2 = await size(132, 50);
  // a size no terminal has: the shim refuses it (containerd logs that),
  // and the session goes on
  s.resize(65535, 65535);
  await sleep(500);
  const from = s.bytes(STDOUT).length;
  const sizeLine = (b) => /^\d+ \d+\r?$/m.exec(b.subarray(from).toString());
  s.send(STDIN, 'busybox stty size\n');
  await s.waitFor(STDOUT, sizeLine, 5);
  const kept = (sizeLine(s.bytes(STDOUT)) || ['none'])[0].trim();
  const t3 = await size(80, 24);
  s.send(STDIN, 'echo to-stderr >&2; exit 2\n');
  d = await s.done(20);
  check(t1 && t2 && d.code === 2 && /to-stderr/.test(s.text(STDOUT)) && s.text(STDERR) === '',
    `Exec (tty): resizes to 100x40 and 132x50 change stty size inside (${t1}, ${t2} tries), ` +
      `stderr on the terminal, exit code ${d.code}`);
  check(kept === '50 132' && t3,
    `Exec (tty): a resize to 65535x65535 is refused (stty size stays ${kept}) and the terminal goes on ` +
      `(80x24 after it: ${t3} tries)`);

  // no such container
  try {
    await call(rt, 'Exec', { container_id: 'nope', cmd: ['true'], stdout: true });
    check(false, 'Exec in a container that does not exist is refused');
  } catch (e) {
    check(e.code === grpc.status.NOT_FOUND || /not found|does not exist/.test(e.details),
      `Exec in a container that does not exist is refused (${e.details})`);
  }
}

// A command that does not exist: the stream's status, in a pod of the
// given handler
async function missing(cid) {
  const s = await execStream(cid, ['/no/such/cmd', 'x'], { stdin: true });
  const d = await s.done(20);
  return { closed: d.closed, status: d.status || {}, out: s.text(STDOUT) + s.text(STDERR) };
}
async function missingOnRunc() {
  const pod = podConfig('ref', false);
  const r = await must(rt, 'RunPodSandbox', { config: pod, runtime_handler: 'runc' }, 'RunPodSandbox (runc)');
  if (!r) return null;
  let got = null;
  try {
    const c = await call(rt, 'CreateContainer',
      { pod_sandbox_id: r.pod_sandbox_id, config: ctrConfig('ref', ['sleep', '600']), sandbox_config: pod });
    await call(rt, 'StartContainer', { container_id: c.container_id });
    got = await missing(c.container_id);
  } catch (e) {
    check(false, `a runc pod for reference: ${e.details || e.message}`);
  }
  await must(rt, 'StopPodSandbox', { pod_sandbox_id: r.pod_sandbox_id }, 'StopPodSandbox (runc)');
  await must(rt, 'RemovePodSandbox', { pod_sandbox_id: r.pod_sandbox_id }, 'RemovePodSandbox (runc)');
  return got;
}

async function attachTests(sid, pod) {
  const start = async (name, cmd, extra) => {
    const cr = await must(rt, 'CreateContainer',
      { pod_sandbox_id: sid, config: ctrConfig(name, cmd, extra), sandbox_config: pod }, `CreateContainer ${name}`);
    return cr && await must(rt, 'StartContainer', { container_id: cr.container_id }, `StartContainer ${name}`) &&
      cr.container_id;
  };
  const attach = async (cid, tty) => open((await call(rt, 'Attach',
    { container_id: cid, stdin: true, stdout: true, stderr: !tty, tty })).url);

  // kubectl run -it: a shell on a terminal, stdin_once; containerd keeps
  // a terminal's stdin open when the attach ends, so a second attach
  // reaches the same shell
  const a1 = await start('tty', ['sh'], { stdin: true, stdin_once: true, tty: true });
  if (a1) {
    let s = await attach(a1, true);
    s.resize(90, 30);
    let seen = false;
    for (let i = 0; i < 20 && !seen; i++) {
      s.send(STDIN, 'busybox stty size; echo "hi $WHO"\n');
      seen = await s.waitFor(STDOUT, (b) => /^30 90\r?\nhi tty\r?$/m.test(b.toString()), 0.5);
    }
    s.close();
    await s.done(10);
    check(seen, `Attach (tty) to a shell: its output, and the resize (stty size 30 90): ${show(s.text(STDOUT), 200)}`);
    await sleep(300);
    const st = await status(a1);
    s = await attach(a1, true);
    s.send(STDIN, 'echo "again $WHO"; exit 7\n');
    const again = await s.waitFor(STDOUT, (b) => /again tty/.test(b.toString()), 10);
    const d = await s.done(20);
    const ex = await waitExited(a1, 10);
    check(st.state === 'CONTAINER_RUNNING' && again && d.closed && ex.state === 'CONTAINER_EXITED' && ex.exit_code === 7,
      `a second Attach reaches the same shell (${st.state} between), its exit 7 ends the stream ` +
        `(${d.status && d.status.status}) and the container (${ex.state}, exit code ${ex.exit_code})`);
  }

  // stdin_once without a terminal: stdin in, stdout and stderr apart; the
  // end of the attach closes the container's stdin
  const a2 = await start('once', ['sh', '-c', 'read a; echo "got $a"; cat; echo "stdin closed" >&2; exit 5'],
    { stdin: true, stdin_once: true });
  if (a2) {
    const s = await attach(a2, false);
    s.send(STDIN, 'hello\n');
    const got = await s.waitFor(STDOUT, (b) => b.toString() === 'got hello\n', 10);
    s.send(STDIN, 'more\n');
    const more = await s.waitFor(STDOUT, (b) => b.toString() === 'got hello\nmore\n', 10);
    s.close();
    await s.done(10);
    const ex = await waitExited(a2, 15);
    const log = path.join(LOGS, 'streams', 'once/0.log');
    let text = '';
    try { text = fs.readFileSync(log, 'utf8'); } catch { /* none */ }
    check(got && more && ex.state === 'CONTAINER_EXITED' && ex.exit_code === 5 && /stderr F stdin closed$/m.test(text),
      `Attach (stdin_once): stdin in, stdout ${show(s.text(STDOUT))}; the attach's end closes stdin: ` +
        `${ex.state}, exit code ${ex.exit_code}, "stdin closed" in its log`);
  }
}

async function forward(sid, port, send, closeAfter) {
  const r = await call(rt, 'PortForward', { pod_sandbox_id: sid, port: [port] });
  const s = await open(r.url);
  const opened = await s.waitFor(0, (b) => b.length >= 2, 10) && await s.waitFor(1, (b) => b.length >= 2, 10);
  const tag = opened && s.bytes(0).readUInt16LE(0) === port && s.bytes(1).readUInt16LE(0) === port;
  for (let o = 0; o < send.length; o += 64 << 10) s.send(0, send.subarray(o, o + (64 << 10)));
  if (closeAfter) s.close();
  const d = await s.done(20);
  return { tag, closed: d.closed, data: s.bytes(0).subarray(2), err: s.bytes(1).subarray(2).toString() };
}
async function portTests(sid, cid, ports) {
  const [web, up, closed] = ports;
  check(await waitListening(web, 15) && await waitListening(up, 15),
    `the guest's servers on ${web} and ${up} listen on the host's ports (a host-network pod)`);
  const want = await must(rt, 'ExecSync', { container_id: cid, cmd: ['busybox', 'sha256sum', '/srv/www/blob'], timeout: 30 },
    'ExecSync sha256sum');
  // down: an HTTP GET to the guest's httpd
  let f = await forward(sid, web, Buffer.from('GET /blob HTTP/1.0\r\n\r\n'), false);
  const text = f.data.toString('latin1');
  const body = f.data.subarray(text.indexOf('\r\n\r\n') + 4);
  check(f.tag && f.closed && /^HTTP\/1\.[01] 200/.test(text) && body.length === 256 << 10 && want &&
    sha(body) === want.stdout.toString().split(' ')[0] && f.err === '',
  `PortForward ${web}: the request up, the guest httpd's ${body.length} bytes down whole ` +
    `(${text.split('\r\n')[0]}), the stream ends with the connection`);

  // up: 256 KiB to a guest nc, which has it whole once the stream ends
  const blob = crypto.randomBytes(256 << 10);
  f = await forward(sid, up, blob, true);
  let got = '';
  for (let i = 0; i < 100 && !got; i++) {
    const r = await call(rt, 'ExecSync', { container_id: cid, cmd: ['sh', '-c', 'test -e /tmp/up.done && busybox sha256sum /tmp/up'], timeout: 30 });
    got = r.exit_code === 0 ? r.stdout.toString().split(' ')[0] : '';
    if (!got) await sleep(100);
  }
  check(f.tag && got === sha(blob), `PortForward ${up}: 256 KiB up arrive whole in the guest (${got.slice(0, 16)})`);

  // a port nothing listens on: an error on the port's error channel, and
  // the stream ends
  const t0 = Date.now();
  f = await forward(sid, closed, Buffer.alloc(0), false);
  check(f.tag && f.closed && new RegExp(`${closed}`).test(f.err) && f.data.length === 0,
    `PortForward to a closed port ${closed}: an error, not a hang (${Date.now() - t0} ms): ${show(f.err, 200)}`);

  // two ports in one stream (channels 0-1 and 2-3): one answers, the
  // other's error comes on its own error channel
  const r2 = await call(rt, 'PortForward', { pod_sandbox_id: sid, port: [web, closed] });
  const s2 = await open(r2.url);
  await s2.waitFor(0, (b) => b.length >= 2, 10);
  s2.send(0, 'GET /blob HTTP/1.0\r\n\r\n');
  const d2 = await s2.done(20);
  const two = s2.bytes(0).subarray(2);
  check(d2.closed && two.length > 256 << 10 && /^HTTP\/1\.[01] 200/.test(two.toString('latin1')) &&
    s2.bytes(1).length === 2 && s2.bytes(2).readUInt16LE(0) === closed && s2.bytes(2).length === 2 &&
    new RegExp(`${closed}`).test(s2.bytes(3).subarray(2).toString()),
  `PortForward of ${web} and ${closed} in one stream: ${two.length} bytes from the first, ` +
    `the second's error on channel 3 (${s2.bytes(3).length} bytes)`);

  try {
    await call(rt, 'PortForward', { pod_sandbox_id: 'nope', port: [web] });
    check(false, 'PortForward to a sandbox that does not exist is refused');
  } catch (e) {
    check(true, `PortForward to a sandbox that does not exist is refused (${e.details})`);
  }
}

async function main() {
  const ports = freePorts();
  if (ports.length < 3) {
    check(false, 'three free TCP ports on the host');
    return;
  }
  const [web, up] = ports;
  const pod = podConfig('streams');
  const r = await must(rt, 'RunPodSandbox', { config: pod, runtime_handler: 'kiln' }, 'RunPodSandbox');
  if (!r) return;
  const sid = r.pod_sandbox_id;
  const cr = await must(rt, 'CreateContainer', {
    pod_sandbox_id: sid, sandbox_config: pod, config: ctrConfig('srv', ['sh', '-c',
      'mkdir -p /srv/www && head -c 262144 /dev/urandom > /srv/www/blob || exit 1; ' +
      `{ nc -l -p ${up} > /tmp/up; touch /tmp/up.done; } & exec busybox httpd -f -p ${web} -h /srv/www`]),
  }, 'CreateContainer srv');
  const cid = cr && cr.container_id;
  if (cid && await must(rt, 'StartContainer', { container_id: cid }, 'StartContainer srv')) {
    await execTests(cid);
    const k = await missing(cid);
    const ref = await missingOnRunc();
    check(k.closed && k.status.status === 'Failure' && /no\/such\/cmd/.test(k.status.message) &&
      ref && k.status.reason === ref.status.reason && k.status.code === ref.status.code,
    `Exec of a command that does not exist: the stream's status is ${k.status.status} ` +
      `${k.status.reason} ${k.status.code}, as runc's (${ref && `${ref.status.reason} ${ref.status.code}`}): ` +
      `${show(k.status.message || '', 240)}`);
    if (ref) console.log(`# runc's: ${show(ref.status.message || '', 240)}`);
    await attachTests(sid, pod);
    await portTests(sid, cid, ports);
  }
  await must(rt, 'StopPodSandbox', { pod_sandbox_id: sid }, 'StopPodSandbox');
  await must(rt, 'RemovePodSandbox', { pod_sandbox_id: sid }, 'RemovePodSandbox');
}

await run(main);
