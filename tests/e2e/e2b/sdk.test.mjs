// The official E2B JS SDK (npm "e2b", pinned in package.json) against a
// self-hosted kilnd: starts kilnd with --listen-tcp (the control API) and
// --envd-listen (envd), points the SDK at them with E2B_API_URL and
// E2B_SANDBOX_URL, and drives sandboxes, commands, ptys and files through it.
//
//   bash tests/e2e/e2b/run.sh [FILTER]      (installs the SDK, then runs this)
//
// The VMM is the fake one (tests/e2e/fake-vmm) unless KILN_E2E_VMM names
// another (with KILN_E2E_KERNEL, KILN_E2E_INITRD), as in tests/e2e/run.sh.
// The SDK's default template is "base": the base image on real VMs
// (KILN_E2E_IMAGES, default build/images: make images), a stand-in file
// with the fake VMM.
// KILN_E2E_KILND picks another kilnd build. Prints "ok"/"not ok" per case,
// "N passed, N failed" at the end, and exits 1 if anything failed.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import assert from 'node:assert/strict'

const here = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(here, '../../..')
// relative paths are taken from the top of the tree, as in tests/e2e/run.sh
const fromRoot = (p, def) => path.resolve(ROOT, p || def)
const KILND = fromRoot(process.env.KILN_E2E_KILND, 'build/bin/kilnd')
const VMM = fromRoot(process.env.KILN_E2E_VMM, 'build/tests/e2e/fake-vmm')
const KERNEL = fromRoot(process.env.KILN_E2E_KERNEL, 'build/guest/kiln-kernel')
const INITRD = fromRoot(process.env.KILN_E2E_INITRD, 'build/initramfs/agent.cpio')
const IMAGE_INITRD = fromRoot(process.env.KILN_E2E_IMAGE_INITRD,
  path.join(path.dirname(INITRD), 'agent-image.cpio'))
const FAKE = VMM.endsWith('/fake-vmm')
const FILTER = process.argv[2] || ''

for (const f of [KILND, VMM]) {
  if (!fs.existsSync(f)) {
    console.log(`e2b: missing ${f} (build with: make e2e-build)`)
    process.exit(1)
  }
}

const T = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-e2b.'))
const DATA = `${T}/data`
let IMAGES = fromRoot(process.env.KILN_E2E_IMAGES, 'build/images')
if (FAKE) {
  IMAGES = `${T}/images`
  fs.mkdirSync(IMAGES)
  fs.writeFileSync(`${IMAGES}/base.erofs`, 'a stand-in for an erofs image\n')
} else if (!fs.existsSync(`${IMAGES}/base.erofs`)) {
  console.log(`e2b: ${IMAGES}/base.erofs missing (the SDK's default template): run make images`)
  process.exit(1)
}
// Below the kernel's ephemeral range (32768-60999): a port a client connection
// of the run before still holds would make kilnd's listen fail.
const API_PORT = 20000 + Math.floor(Math.random() * 12000)
const ENVD_PORT = API_PORT + 1
const API_KEY = 'e2b_' + randomBytes(20).toString('hex')
const API_URL = `http://127.0.0.1:${API_PORT}`
const SANDBOX_URL = `http://127.0.0.1:${ENVD_PORT}`
// A directory inside the guest (with the fake VMM the guest's files are the
// host's: keep it unique).
const G = `/tmp/kiln-e2b-guest-${process.pid}`

process.env.E2B_API_KEY = API_KEY
process.env.E2B_API_URL = API_URL
process.env.E2B_SANDBOX_URL = SANDBOX_URL
delete process.env.E2B_DEBUG
delete process.env.E2B_DOMAIN

const e2b = await import('e2b')
const { Sandbox, AuthenticationError, CommandExitError, FileNotFoundError, InvalidArgumentError, SandboxError, TimeoutError } = e2b
// The default user's home: the base image's `user` on real VMs; with the
// fake VMM the guest is the host, whose stand-in image names no user (root).
const HOME_DIR = FAKE ? '/root' : '/home/user'
const { Sandbox: CiSandbox } = await import('@e2b/code-interpreter')

// ---------------------------------------------------------------- kilnd

let kilnd
const log = fs.openSync(`${T}/kilnd.log`, 'a')

async function startKilnd() {
  kilnd = spawn(KILND, [
    '--data-dir', DATA, '--vmm', VMM, '--kernel', KERNEL, '--initrd', INITRD,
    '--images', IMAGES, '--image-initrd', IMAGE_INITRD,
    '--listen-tcp', `127.0.0.1:${API_PORT}`, '--envd-listen', `127.0.0.1:${ENVD_PORT}`,
    '--api-key', API_KEY, '--boot-timeout', '20', '--verbose', '--domain', `localhost:${API_PORT}`,
    // the sandboxes' lookups stay on this machine (nothing answers there)
    '--dns-server', '127.0.0.1:53',
    // the fake VMM's "guest" is its own processes on the host: no jail
    // (whose pid namespace would take them along when it ends)
    ...(FAKE ? ['--no-jail'] : []),
  ], { stdio: ['ignore', log, log] })
  for (let i = 0; i < 200; i++) {
    try {
      const r = await fetch(`${API_URL}/health`)
      if (r.ok) return
    } catch {}
    await sleep(50)
  }
  console.log('e2b: kilnd did not start; log:\n' + fs.readFileSync(`${T}/kilnd.log`, 'utf8'))
  process.exit(1)
}

// After a failure: the ends of kilnd's log and of each sandbox's console,
// since cleanup() removes them (a failure in CI leaves nothing else).
function showLogs() {
  const tail = (file, n) => {
    try {
      const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n')
      console.log(`# --- ${file} (last ${Math.min(n, lines.length)} lines)`)
      for (const l of lines.slice(-n)) console.log(`#   ${l}`)
    } catch {}
  }
  tail(`${T}/kilnd.log`, 60)
  const dir = `${DATA}/sandboxes`
  for (const id of fs.existsSync(dir) ? fs.readdirSync(dir) : []) tail(`${dir}/${id}/console.log`, 20)
}

function cleanup() {
  if (kilnd && kilnd.exitCode === null) kilnd.kill('SIGTERM')
  // the VMMs outlive kilnd by design: end them by their recorded pids
  const dir = `${DATA}/sandboxes`
  for (const id of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    try {
      const pid = parseInt(fs.readFileSync(`${dir}/${id}/vmm.pid`, 'utf8'))
      if (pid > 1) process.kill(-pid, 'SIGKILL')
    } catch {}
  }
  if (FAKE) fs.rmSync(G, { recursive: true, force: true })
  if (!process.env.KILN_E2E_KEEP) fs.rmSync(T, { recursive: true, force: true })
}

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    console.log(`e2b: ${sig}, cleaning up`)
    cleanup()
    process.exit(1)
  })
}

// ---------------------------------------------------------------- harness

let passed = 0
let failed = 0

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms))
}

function withTimeout(p, ms, what) {
  let t
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise((_, rej) => {
      t = setTimeout(() => rej(new Error(`${what}: no answer within ${ms} ms`)), ms)
    }),
  ])
}

// FILTER runs only the cases whose name contains it (and the setup ones).
async function test(name, fn, ms = 30000, setup = false) {
  if (FILTER && !setup && !name.includes(FILTER)) return
  try {
    await withTimeout(Promise.resolve().then(fn), ms, name)
    passed++
    console.log(`ok - ${name}`)
  } catch (e) {
    failed++
    console.log(`not ok - ${name}`)
    for (const line of String(e && e.stack ? e.stack : e).split('\n').slice(0, 8))
      console.log(`#   ${line}`)
  }
}

async function rejects(p, check) {
  try {
    await p
  } catch (e) {
    if (check) check(e)
    return e
  }
  throw new Error('expected a rejection')
}

// ---------------------------------------------------------------- raw envd

function envelope(obj, flags = 0) {
  const p = Buffer.from(JSON.stringify(obj))
  const b = Buffer.alloc(5 + p.length)
  b[0] = flags
  b.writeUInt32BE(p.length, 1)
  p.copy(b, 5)
  return b
}

function parseEnvelopes(buf) {
  const out = []
  let o = 0
  while (o + 5 <= buf.length) {
    const n = buf.readUInt32BE(o + 1)
    out.push({ flags: buf[o], msg: JSON.parse(buf.subarray(o + 5, o + 5 + n).toString()) })
    o += 5 + n
  }
  assert.equal(o, buf.length, 'trailing bytes after the last envelope')
  return out
}

async function envdHeaders(sandboxId) {
  const r = await fetch(`${API_URL}/sandboxes/${sandboxId}`, { headers: { 'X-API-Key': API_KEY } })
  const j = await r.json()
  assert.ok(j.envdAccessToken, 'GET /sandboxes/{id} has envdAccessToken')
  return { 'E2b-Sandbox-Id': sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': j.envdAccessToken }
}

async function rpcStream(h, method, msg, extra = {}) {
  const r = await fetch(`${SANDBOX_URL}/${method}`, {
    method: 'POST',
    headers: { ...h, 'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1', ...extra },
    body: msg instanceof Buffer ? msg : envelope(msg),
  })
  assert.equal(r.status, 200)
  assert.equal(r.headers.get('content-type'), 'application/connect+json')
  const all = parseEnvelopes(Buffer.from(await r.arrayBuffer()))
  const last = all.pop()
  assert.equal(last.flags, 2, 'the stream ends with an end-of-stream envelope')
  return { events: all.map((e) => e.msg.event), end: last.msg }
}

async function rpcUnary(h, method, body, ctype = 'application/json') {
  const r = await fetch(`${SANDBOX_URL}/${method}`, {
    method: 'POST',
    headers: { ...h, 'Content-Type': ctype, 'Connect-Protocol-Version': '1' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  return { status: r.status, body: await r.json().catch(() => null) }
}

// Send raw bytes on a fresh connection, then hang up.
function rawSend(port, bytes) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(bytes, () => setTimeout(() => { s.destroy(); resolve() }, 300))
    })
    s.on('error', resolve)
  })
}

// ---------------------------------------------------------------- tests

async function main() {
  await startKilnd()
  let sbx
  let other

  await test('Sandbox.create() answers with an id and envd 0.6.4', async () => {
    // With the fake VMM the guest is the host: keep the SDK's login shells
    // (bash -l) away from the host's dotfiles.
    const envs = { SB_ENV: 'from-create', ...(FAKE ? { HOME: `${T}/home` } : {}) }
    sbx = await Sandbox.create({ metadata: { suite: 'e2b', n: '1' }, envs })
    assert.match(sbx.sandboxId, /^[a-z0-9]+$/)
    const info = await sbx.getInfo()
    assert.equal(info.envdVersion, '0.6.4')
  }, 60000, true)
  if (!sbx) {
    console.log('# no sandbox: the remaining cases cannot run')
    return
  }
  await sbx.commands.run(`mkdir -p ${G}`)

  // ------------------------------------------------------------ control plane

  await test('getInfo reports state, template and metadata', async () => {
    const info = await sbx.getInfo()
    assert.equal(info.sandboxId, sbx.sandboxId)
    assert.equal(info.templateId, 'base')
    assert.equal(info.state, 'running')
    assert.deepEqual(info.metadata, { suite: 'e2b', n: '1' })
    assert.ok(info.endAt > info.startedAt)
  })

  await test('isRunning() is true (envd GET /health)', async () => {
    assert.equal(await sbx.isRunning(), true)
  })

  await test('setTimeout moves endAt', async () => {
    const before = await sbx.getInfo()
    await sbx.setTimeout(600_000)
    const after = await sbx.getInfo()
    const left = after.endAt.getTime() - Date.now()
    assert.ok(left > 550_000 && left <= 601_000, `endAt ${after.endAt.toISOString()}`)
    assert.notEqual(after.endAt.getTime(), before.endAt.getTime())
  })

  await test('Sandbox.list filters by metadata and pages with X-Next-Token', async () => {
    other = await Sandbox.create({ metadata: { suite: 'e2b', n: '2' }, envs: FAKE ? { HOME: `${T}/home` } : {} })
    const mine = await Sandbox.list({ query: { metadata: { suite: 'e2b' } } }).nextItems()
    const ids = mine.map((s) => s.sandboxId).sort()
    assert.deepEqual(ids, [sbx.sandboxId, other.sandboxId].sort())
    const one = await Sandbox.list({ query: { metadata: { n: '2' } } }).nextItems()
    assert.deepEqual(one.map((s) => s.sandboxId), [other.sandboxId])
    const pager = Sandbox.list({ limit: 1, query: { metadata: { suite: 'e2b' } } })
    const seen = []
    while (pager.hasNext) {
      const page = await pager.nextItems()
      assert.ok(page.length <= 1)
      seen.push(...page.map((s) => s.sandboxId))
      assert.ok(seen.length <= 3, 'paging does not end')
    }
    assert.deepEqual(seen.sort(), ids)
    assert.equal(mine[0].state, 'running')
  }, 60000)

  await test('Sandbox.connect() returns a working sandbox', async () => {
    const again = await Sandbox.connect(sbx.sandboxId)
    assert.equal(again.sandboxId, sbx.sandboxId)
    const r = await again.commands.run('echo connected')
    assert.equal(r.stdout, 'connected\n')
  })

  await test('connect() to an unknown sandbox throws', async () => {
    await rejects(Sandbox.connect('nosuchsandbox000000'), (e) =>
      assert.match(String(e.name), /NotFound/))
  })

  await test('pause() pauses; connect() resumes it (201) with its files', async () => {
    await sbx.files.write(`${G}/paused.txt`, 'kept')
    if (!FAKE) {
      // a process that keeps running (detached: attached streams end at a pause)
      await sbx.commands.run('(while :; do date +%s%N >/tmp/tick; sleep 0.05; done) </dev/null >/dev/null 2>&1 & echo $! >/tmp/tick.pid')
    }
    assert.equal(await sbx.pause(), true)
    assert.equal((await sbx.getInfo()).state, 'paused')
    assert.equal(await Sandbox.betaPause(sbx.sandboxId), false, 'a second pause is refused (409)')
    assert.equal(await sbx.isRunning(), false)
    const listed = await Sandbox.list({ query: { metadata: { n: '1' } } }).nextItems()
    assert.deepEqual(listed.map((s) => [s.sandboxId, s.state]), [[sbx.sandboxId, 'paused']])
    const again = await Sandbox.connect(sbx.sandboxId)
    assert.equal((await again.getInfo()).state, 'running')
    assert.equal(await again.files.read(`${G}/paused.txt`), 'kept')
    assert.equal((await again.commands.run('echo back')).stdout, 'back\n')
    if (!FAKE) {
      const t1 = (await again.commands.run('cat /tmp/tick')).stdout
      await sleep(200)
      const t2 = (await again.commands.run('cat /tmp/tick')).stdout
      assert.ok(BigInt(t2) > BigInt(t1), `the process ticks on (${t1.trim()} -> ${t2.trim()})`)
      await again.commands.run('kill $(cat /tmp/tick.pid)')
    }
  }, 60000)

  await test('connect answers 201 when it resumes, 200 when it was running', async () => {
    const connect = () => fetch(`${API_URL}/v2/sandboxes/${sbx.sandboxId}/connect`, {
      method: 'POST', headers: { 'X-API-Key': API_KEY, 'Content-Type': 'application/json' }, body: '{}',
    })
    assert.equal((await connect()).status, 200)
    assert.equal(await Sandbox.pause(sbx.sandboxId), true)
    const r = await connect()
    assert.equal(r.status, 201)
    assert.equal((await r.json()).state, 'running')
    // the sandbox object from before the pause still works (same token)
    assert.equal((await sbx.commands.run('echo same')).stdout, 'same\n')
  }, 60000)

  await test('auto-resume: commands, files and uploads on a paused sandbox resume it', async () => {
    await sbx.files.write(`${G}/auto.txt`, 'auto')
    assert.equal(await sbx.pause(), true)
    assert.equal((await sbx.commands.run(`cat ${G}/auto.txt`)).stdout, 'auto')
    assert.equal((await sbx.getInfo()).state, 'running')
    assert.equal(await sbx.pause(), true)
    assert.equal(await sbx.files.read(`${G}/auto.txt`), 'auto')
    assert.equal(await sbx.pause(), true)
    await sbx.files.write(`${G}/auto2.txt`, 'written while paused')
    assert.equal(await sbx.pause(), true)
    const names = (await sbx.files.list(G)).map((e) => e.name)
    assert.ok(names.includes('auto2.txt'), `listed ${names}`)
    assert.equal(await sbx.pause(), true)
    // five commands at once: one resume
    const before = (await (await fetch(`${API_URL}/sandboxes/${sbx.sandboxId}`, {
      headers: { 'X-API-Key': API_KEY } })).json()).resumeCount
    const outs = await Promise.all([1, 2, 3, 4, 5].map((i) => sbx.commands.run(`echo ${i}`)))
    assert.deepEqual(outs.map((r) => r.stdout), ['1\n', '2\n', '3\n', '4\n', '5\n'])
    const after = (await (await fetch(`${API_URL}/sandboxes/${sbx.sandboxId}`, {
      headers: { 'X-API-Key': API_KEY } })).json()).resumeCount
    assert.equal(after, before + 1)
    assert.equal((await sbx.getInfo()).lifecycle?.autoResume ?? true, true)
  }, 60000)

  await test('a background command outlives pause and resume: list, connect, stdin, exit', async () => {
    // reads a line, then counts; the fake VMM's "resume" is a fresh agent:
    // there the command is gone, and connect says so
    const h = await sbx.commands.run(
      'read x; i=0; while [ $i -lt 30 ]; do echo tick$i $x; i=$((i+1)); sleep 0.1; done',
      { background: true, stdin: true, timeoutMs: 0 })
    await sleep(300)
    assert.equal(await sbx.pause(), true)
    const e = await rejects(h.wait()) // its stream ends at the pause
    assert.ok(e instanceof SandboxError || e instanceof Error, `got ${e}`)
    const list = await sbx.commands.list() // resumes the sandbox
    if (FAKE) {
      assert.ok(!list.find((p) => p.pid === h.pid), `listed ${JSON.stringify(list)}`)
      await rejects(sbx.commands.connect(h.pid))
      return
    }
    assert.ok(list.find((p) => p.pid === h.pid), `pid ${h.pid} not in ${JSON.stringify(list)}`)
    const got = []
    const h2 = await sbx.commands.connect(h.pid, { onStdout: (d) => got.push(d) })
    await sbx.commands.sendStdin(h.pid, 'after-resume\n')
    const r = await h2.wait()
    assert.equal(r.exitCode, 0)
    const out = got.join('')
    assert.ok(out.includes('tick29 after-resume'), `got ${JSON.stringify(out)}`)
  }, 60000)

  // A command whose STARTED the agent holds (its test hook) while the
  // sandbox is paused, or kilnd restarted: the run() fails, and once the
  // sandbox runs again commands.list() has it (found by the tag kilnd gave
  // its START), connect() and sendStdin() reach it. With the fake VMM a
  // resumed agent is a fresh one: after a pause the command is gone.
  const heldRun = (s, marker) => s.commands.run(`read x; echo got-$x-${marker}`,
    { background: true, stdin: true, timeoutMs: 0, envs: { KILN_TEST_STARTED_DELAY_MS: '4000' } })
  const findHeld = async (s, marker) => {
    for (let i = 0; i < 80; i++) {
      const p = (await s.commands.list()).find((c) => c.args.join(' ').includes(marker))
      if (p) return p
      await sleep(100)
    }
    return null
  }
  const takeUpHeld = async (s, p, marker) => {
    const got = []
    const h = await s.commands.connect(p.pid, { onStdout: (d) => got.push(d) })
    await s.commands.sendStdin(p.pid, 'in\n')
    const r = await h.wait()
    assert.deepEqual([r.exitCode, got.join('')], [0, `got-in-${marker}\n`])
  }

  await test('a command caught starting by a pause: listed after the resume, connect and stdin reach it', async () => {
    const marker = `held-${randomBytes(4).toString('hex')}`
    const run = heldRun(sbx, marker)
    run.catch(() => {})
    await sleep(1000)
    assert.ok(!(await sbx.commands.list()).find((c) => c.args.join(' ').includes(marker)),
      'listed before its start')
    assert.equal(await sbx.pause(), true)
    await rejects(run) // (the SDK's words: its health check finds the sandbox paused)
    const p = await findHeld(sbx, marker) // resumes the sandbox
    if (FAKE) {
      assert.equal(p, null, `listed ${JSON.stringify(p)}`)
      return
    }
    assert.ok(p && p.pid > 0, 'not listed after the resume')
    await takeUpHeld(sbx, p, marker)
  }, 60000)

  await test('a command caught starting by a kilnd restart (SIGKILL): listed by the new kilnd, connect reaches it', async () => {
    const marker = `held-${randomBytes(4).toString('hex')}`
    const run = heldRun(sbx, marker)
    run.catch(() => {})
    await sleep(1000)
    kilnd.kill('SIGKILL')
    await new Promise((r) => (kilnd.exitCode !== null || kilnd.signalCode ? r() : kilnd.once('exit', r)))
    await rejects(run)
    await startKilnd()
    const p = await findHeld(sbx, marker)
    assert.ok(p && p.pid > 0, 'not listed by the new kilnd')
    await takeUpHeld(sbx, p, marker)
  }, 60000)

  await test('Sandbox.fork: clones of a running sandbox, with its files', async () => {
    await sbx.files.write(`${G}/fork.txt`, 'forked')
    const forks = await Sandbox.fork(sbx.sandboxId, { count: 2 })
    assert.equal(forks.length, 2)
    for (const f of forks) {
      assert.ok(f instanceof Sandbox, `got ${f}`)
      assert.notEqual(f.sandboxId, sbx.sandboxId)
      assert.equal(await f.files.read(`${G}/fork.txt`), 'forked')
      assert.equal(await f.kill(), true)
    }
    assert.equal((await sbx.getInfo()).state, 'running')
  }, 60000)

  await test("lifecycle onTimeout 'pause': paused at the end of its lifetime", async () => {
    const s = await Sandbox.create({ timeoutMs: 1000, lifecycle: { onTimeout: 'pause' },
      envs: FAKE ? { HOME: `${T}/home` } : {} })
    try {
      await sleep(2500)
      assert.equal((await s.getInfo()).state, 'paused')
      await s.connect()
      assert.equal((await s.commands.run('echo woke')).stdout, 'woke\n')
    } finally {
      await s.kill()
    }
  }, 60000)

  await test('getMetrics returns memory figures', async () => {
    const m = await sbx.getMetrics()
    assert.ok(Array.isArray(m) && m.length >= 1)
    assert.ok(m[0].memTotal > 0)
  })

  await test('network options: allowInternetAccess and allowOut as the SDK sends them', async () => {
    // A server on the host's loopback, reached as host.kiln.internal.
    const srv = http.createServer((req, res) => res.end('from-the-host\n'))
    await new Promise((r) => srv.listen(0, '127.0.0.1', r))
    const port = srv.address().port
    let s
    try {
      s = await Sandbox.create({
        allowInternetAccess: false,
        network: { allowOut: [`host.kiln.internal:${port}`], denyOut: ['203.0.113.0/24'] },
      })
      const info = await s.getInfo()
      assert.equal(info.allowInternetAccess, false)
      assert.deepEqual(info.network.allowOut, [`host.kiln.internal:${port}`])
      assert.deepEqual(info.network.denyOut, ['203.0.113.0/24'])
      const py = (url) => `python3 -c "import urllib.request as u; print(u.urlopen('${url}', timeout=20).read().decode().strip())"`
      if (!FAKE) {
        const ok = await s.commands.run(py(`http://host.kiln.internal:${port}/`))
        assert.equal(ok.stdout.trim(), 'from-the-host')
        const no = await s.commands.run(py(`http://10.0.2.2:${port + 1}/`)).catch((e) => e)
        assert.match(String(no.stderr || no), /Permission denied/)
      }
      // updateNetwork replaces the whole policy: what it leaves out is cleared
      await s.updateNetwork({ allowOut: [`host.kiln.internal:${port + 1}`] })
      const after = await s.getInfo()
      assert.equal(after.allowInternetAccess, true)
      assert.deepEqual(after.network.allowOut, [`host.kiln.internal:${port + 1}`])
      assert.deepEqual(after.network.denyOut ?? [], [])
      if (!FAKE) {
        const no = await s.commands.run(py(`http://host.kiln.internal:${port}/`)).catch((e) => e)
        assert.match(String(no.stderr || no), /Permission denied|Name or service not known|resolution/)
      }
      await assert.rejects(s.updateNetwork({ allowOut: ['127.1'] }), /127\.1/)
      await assert.rejects(Sandbox.updateNetwork('nosuchsandbox', { allowOut: [] }), (e) =>
        e.name === 'SandboxNotFoundError')
    } finally {
      srv.close()
      if (s) await s.kill()
    }
    await assert.rejects(Sandbox.create({ network: { allowOut: ['127.1'] } }), /allowOut\[0\]/)
  }, 90000)

  await test('npm install as the default user from a registry on the host (real VMs)', async () => {
    if (FAKE) return // the fake VMM's guest is the host, where host.kiln.internal is no name
    // a package packed here, served by the e2e-net suite's minimal registry
    const reg = `${T}/npmreg`
    fs.mkdirSync(`${T}/npmpkg`)
    fs.mkdirSync(reg)
    fs.writeFileSync(`${T}/npmpkg/package.json`, '{"name":"kilnsdk","version":"2.0.0","main":"i.js","license":"MIT"}\n')
    fs.writeFileSync(`${T}/npmpkg/i.js`, 'module.exports = { from: "the-sdk-registry" };\n')
    await new Promise((res, rej) => spawn('npm', ['pack', '--pack-destination', reg], { cwd: `${T}/npmpkg`, stdio: 'ignore' })
      .on('exit', (c) => (c === 0 ? res() : rej(new Error(`npm pack exited ${c}`)))))
    const srv = spawn('python3', [path.join(ROOT, 'tests/e2e/net/npm_registry.py'), '0', reg],
      { stdio: ['ignore', 'pipe', 'pipe'] })
    let s
    try {
      let said = '', errs = ''
      srv.stderr.on('data', (d) => (errs += d))
      const port = await new Promise((res, rej) => {
        srv.stdout.on('data', (d) => {
          const m = /^ready (\d+)$/m.exec((said += d))
          if (m) res(Number(m[1]))
        })
        srv.on('exit', (c) => rej(new Error(`npm_registry.py exited ${c}: ${said} ${errs}`)))
      })
      s = await Sandbox.create({ network: { allowOut: [`host.kiln.internal:${port}`] } })
      const r = await s.commands.run(`mkdir -p app && cd app && npm install --registry http://host.kiln.internal:${port}/ kilnsdk`,
        { timeoutMs: 120000 })
      assert.match(r.stdout, /added 1 package/)
      const n = await s.commands.run(`cd app && node -e "console.log(require('kilnsdk').from)" && stat -c %U node_modules/kilnsdk/i.js`)
      assert.equal(n.stdout, 'the-sdk-registry\nuser\n')
    } finally {
      srv.kill()
      if (s) await s.kill()
    }
  }, 150000)

  await test('a wrong API key is refused (AuthenticationError)', async () => {
    await rejects(Sandbox.list({ apiKey: 'e2b_00' }).nextItems(), (e) =>
      assert.equal(e.name, 'AuthenticationError'))
  })

  await test('envd refuses a missing or wrong X-Access-Token (401), on /health too', async () => {
    const h = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' }
    let r = await fetch(`${SANDBOX_URL}/health`, { headers: h })
    assert.equal(r.status, 401)
    r = await fetch(`${SANDBOX_URL}/health`, { headers: { ...h, 'X-Access-Token': sbx.envdAccessToken } })
    assert.equal(r.status, 204)
    assert.equal(await sbx.isRunning(), true)
    r = await fetch(`${SANDBOX_URL}/process.Process/List`, {
      method: 'POST',
      headers: { ...h, 'Content-Type': 'application/json', 'X-Access-Token': 'nope' },
      body: '{}',
    })
    assert.equal(r.status, 401)
    assert.equal((await r.json()).code, 'unauthenticated')
    r = await fetch(`${SANDBOX_URL}/files?path=/etc/hostname`, { headers: h })
    assert.equal(r.status, 401)
  })

  // ------------------------------------------------------------ commands

  // A streamed answer's small last write (the end event) held back by
  // Nagle's algorithm until the client's delayed ACK costs ~40 ms: the
  // SDK's round trip against kilnd's own exec, by ratio (no fixed time).
  await test("no Nagle stall: commands.run('true') within 5x of kilnd's exec (medians of 20)", async () => {
    const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1]
    const time = async (f) => {
      const t0 = performance.now()
      await f()
      return performance.now() - t0
    }
    const exec = () => fetch(`${API_URL}/sandboxes/${sbx.sandboxId}/exec`, {
      method: 'POST',
      headers: { 'X-API-Key': API_KEY, 'Content-Type': 'application/json' },
      body: '{"cmd":["true"]}',
    }).then((r) => r.text())
    for (let i = 0; i < 3; i++) {
      await exec()
      await sbx.commands.run('true')
    }
    const raw = []
    const sdk = []
    for (let i = 0; i < 20; i++) {
      raw.push(await time(exec))
      sdk.push(await time(() => sbx.commands.run('true')))
    }
    const r = median(raw)
    const s = median(sdk)
    console.log(`# commands.run('true') median ${s.toFixed(2)} ms, kilnd's exec ${r.toFixed(2)} ms`)
    assert.ok(s < 5 * r, `commands.run('true') ${s.toFixed(2)} ms against exec ${r.toFixed(2)} ms`)
  }, 60000)

  await test("commands.run('echo hi')", async () => {
    const r = await sbx.commands.run('echo hi')
    assert.equal(r.exitCode, 0)
    assert.equal(r.stdout, 'hi\n')
    assert.equal(r.stderr, '')
  })

  await test('onStdout/onStderr stream the output in order', async () => {
    const out = []
    const err = []
    const r = await sbx.commands.run(
      'for i in 1 2 3; do echo out$i; echo err$i >&2; sleep 0.05; done', {
        onStdout: (d) => out.push(d),
        onStderr: (d) => err.push(d),
      })
    assert.equal(out.join(''), 'out1\nout2\nout3\n')
    assert.equal(err.join(''), 'err1\nerr2\nerr3\n')
    assert.ok(out.length >= 2, 'stdout arrived in pieces')
    assert.equal(r.stdout, 'out1\nout2\nout3\n')
  })

  await test('a non-zero exit throws CommandExitError with the code', async () => {
    const e = await rejects(sbx.commands.run('echo partial; exit 3'))
    assert.ok(e instanceof CommandExitError, `got ${e}`)
    assert.equal(e.exitCode, 3)
    assert.equal(e.stdout, 'partial\n')
    // envd's end event `error` (Go's cmd.Wait() error) is the message
    assert.equal(e.message, 'exit status 3')
    assert.equal(e.error, 'exit status 3')
  })

  await test("CommandExitError.message: 'signal: killed', 'signal: terminated'; none for exit 0", async () => {
    let e = await rejects(sbx.commands.run('kill -KILL $$'))
    assert.ok(e instanceof CommandExitError, `got ${e}`)
    assert.deepEqual([e.exitCode, e.message], [-1, 'signal: killed'])
    e = await rejects(sbx.commands.run('kill -TERM $$'))
    assert.deepEqual([e.exitCode, e.message], [-1, 'signal: terminated'])
    const h = await sbx.commands.run('sleep 30', { background: true, timeoutMs: 0 })
    await h.kill()
    e = await rejects(h.wait())
    assert.deepEqual([e.exitCode, e.message], [-1, 'signal: killed'])
    const r = await sbx.commands.run('true')
    assert.deepEqual([r.exitCode, r.error], [0, undefined])
  })

  await test('error classes as envd: a missing cwd is InvalidArgumentError, files as envd maps them', async () => {
    let e = await rejects(sbx.commands.run('pwd', { cwd: `${G}/no/such/dir` }))
    assert.ok(e instanceof InvalidArgumentError, `got ${e}`)
    await sbx.files.write(`${G}/a-file`, 'f')
    e = await rejects(sbx.files.list(`${G}/a-file`))
    assert.ok(e instanceof InvalidArgumentError, `got ${e}`)
    e = await rejects(sbx.files.list(`${G}/no-such-dir`))
    assert.ok(e instanceof FileNotFoundError, `got ${e}`)
    e = await rejects(sbx.files.rename(`${G}/no-such-file`, `${G}/x`))
    assert.ok(e instanceof FileNotFoundError, `got ${e}`)
    assert.equal(await sbx.files.makeDir(G), false, 'an existing directory: already_exists')
    e = await rejects(sbx.files.makeDir(`${G}/a-file`))
    assert.ok(e instanceof InvalidArgumentError, `got ${e}`)
    await sbx.files.remove(`${G}/no-such-file`) // envd's RemoveAll: no error
    assert.equal(await sbx.files.exists(`${G}/no-such-file`), false)
  })

  await test('envs: per command and from Sandbox.create', async () => {
    const r = await sbx.commands.run('echo "$FOO $SB_ENV"', { envs: { FOO: 'bar' } })
    assert.equal(r.stdout, 'bar from-create\n')
  })

  const who = 'whoami; echo "$HOME"; id -u; pwd'
  await test("user: 'user' (the default) and 'root': whoami, $HOME, id -u, cwd", async () => {
    // (with the fake VMM, HOME is the one Sandbox.create set)
    const root = `root\n${FAKE ? `${T}/home` : '/root'}\n0\n/root\n`
    assert.equal((await sbx.commands.run(who, { user: 'root' })).stdout, root)
    if (FAKE) {
      assert.equal((await sbx.commands.run(who)).stdout, root)
      return
    }
    const user = 'user\n/home/user\n1000\n/home/user\n'
    assert.equal((await sbx.commands.run(who, { user: 'user' })).stdout, user)
    assert.equal((await sbx.commands.run(who)).stdout, user)
    assert.equal((await sbx.commands.run('id', { user: 'user' })).stdout,
      'uid=1000(user) gid=1000(user) groups=1000(user)\n')
    const h = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {}, user: 'user' })
    await sbx.pty.sendInput(h.pid, new TextEncoder().encode('id -u > /tmp/kiln-pty-uid; exit\n'))
    await h.wait().catch(() => {})
    assert.equal(await sbx.files.read('/tmp/kiln-pty-uid'), '1000\n')
  })

  await test('an unknown user is an AuthenticationError (commands, files)', async () => {
    await rejects(sbx.commands.run('id -u', { user: 'no-such-user' }), (e) => {
      assert.ok(e instanceof AuthenticationError, `got ${e}`)
      assert.match(e.message, /no user 'no-such-user'/)
    })
    await rejects(sbx.files.read('/etc/hostname', { user: 'no-such-user' }), (e) =>
      assert.ok(e instanceof AuthenticationError, `got ${e}`))
    await rejects(sbx.files.write(`${G}/x`, 'x', { user: 'no-such-user' }), (e) =>
      assert.ok(e instanceof AuthenticationError, `got ${e}`))
    await rejects(sbx.files.list('/', { user: 'no-such-user' }), (e) =>
      assert.ok(e instanceof AuthenticationError, `got ${e}`))
  })

  if (!FAKE) {
    await test("the user's commands cannot write a root-owned file; files.write takes it over, as envd's", async () => {
      const f = `/tmp/kiln-root-only-${process.pid}`
      await sbx.files.write(f, 'root', { user: 'root' })
      await sbx.commands.run(`chmod 640 ${f}`, { user: 'root' })
      assert.equal((await sbx.commands.run(`stat -c %U:%a ${f}`)).stdout, 'root:640\n')
      const e = await rejects(sbx.commands.run(`echo more >> ${f}`, { user: 'user' }))
      assert.ok(e instanceof CommandExitError, `got ${e}`)
      assert.equal(e.exitCode, 1)
      assert.match(e.stderr, /Permission denied/)
      assert.equal(await sbx.files.read(f, { user: 'root' }), 'root')
      // envd writes as root and gives the file to the user; it keeps its mode
      await sbx.files.write(f, 'mine', { user: 'user' })
      assert.equal((await sbx.commands.run(`stat -c %U:%G:%a ${f}`)).stdout, 'user:user:640\n')
      assert.equal(await sbx.files.read(f, { user: 'user' }), 'mine')
      assert.equal((await sbx.commands.run(`echo more >> ${f}; cat ${f}`)).stdout, 'minemore\n')
      // a new file in root's /etc, and missing directories under root's /opt
      const etc = `/etc/kiln-user-test-${process.pid}`
      await sbx.files.write(etc, 'x')
      assert.equal((await sbx.commands.run(`stat -c %U:%a ${etc}`)).stdout, 'user:644\n')
      const deep = `/opt/kiln-given-${process.pid}/a/b.txt`
      await sbx.files.write(deep, 'deep')
      assert.equal((await sbx.commands.run(
        `stat -c %U:%a /opt /opt/kiln-given-${process.pid} /opt/kiln-given-${process.pid}/a ${deep}`)).stdout,
      'root:755\nuser:755\nuser:755\nuser:644\n')
      await sbx.files.writeFiles([{ path: `/opt/kiln-given-${process.pid}/m/1`, data: '1' }])
      assert.equal((await sbx.commands.run(`stat -c %U /opt/kiln-given-${process.pid}/m/1`)).stdout, 'user\n')
      // the Filesystem RPCs that write: makeDir, rename, remove
      const mk = `/opt/kiln-mk-${process.pid}/x`
      assert.equal(await sbx.files.makeDir(mk), true)
      assert.equal((await sbx.commands.run(`stat -c %U /opt/kiln-mk-${process.pid} ${mk}`)).stdout,
        'user\nuser\n')
      await sbx.commands.run(`echo r > /srv/kiln-r-${process.pid}`, { user: 'root' })
      const moved = await sbx.files.rename(`/srv/kiln-r-${process.pid}`, `/srv/kiln-sub-${process.pid}/r`)
      assert.equal(moved.path, `/srv/kiln-sub-${process.pid}/r`)
      assert.equal((await sbx.commands.run(
        `stat -c %U /srv/kiln-sub-${process.pid} /srv/kiln-sub-${process.pid}/r`)).stdout, 'user\nroot\n')
      await sbx.files.remove(`/srv/kiln-sub-${process.pid}/r`)
      assert.equal(await sbx.files.exists(`/srv/kiln-sub-${process.pid}/r`), false)
      // reads and listings stay the user's
      await sbx.commands.run(`echo s > /root/kiln-secret-${process.pid}`, { user: 'root' })
      await rejects(sbx.files.read(`/root/kiln-secret-${process.pid}`), (e) =>
        assert.match(e.message, /403: .*denied/))
    })

    await test('files.write as the user makes a user-owned file; relative paths are in its home', async () => {
      const name = `kiln-e2b-owned-${process.pid}.txt`
      const info = await sbx.files.write(name, 'mine')
      assert.equal(info.path, `/home/user/${name}`)
      assert.equal((await sbx.commands.run(`stat -c %U:%G ${name}`)).stdout, 'user:user\n')
      await sbx.files.makeDir('/home/user/kiln-e2b-dir')
      assert.equal((await sbx.commands.run('stat -c %U /home/user/kiln-e2b-dir')).stdout, 'user\n')
      await sbx.files.write(`/root/${name}`, 'r', { user: 'root' })
      assert.equal((await sbx.commands.run(`stat -c %U /root/${name}`, { user: 'root' })).stdout, 'root\n')
      await rejects(sbx.files.read(`/root/${name}`), (e) => assert.match(e.message, /403: .*denied/))
    })
  }

  await test(`cwd: given, and ${HOME_DIR} by default`, async () => {
    assert.equal((await sbx.commands.run('pwd', { cwd: G })).stdout, `${G}\n`)
    assert.equal((await sbx.commands.run('pwd')).stdout, `${HOME_DIR}\n`)
  })

  await test('timeoutMs kills the command (TimeoutError)', async () => {
    const t0 = Date.now()
    const e = await rejects(sbx.commands.run('sleep 20', { timeoutMs: 1000 }))
    assert.ok(e instanceof TimeoutError || /deadline|timeout/i.test(String(e)), `got ${e}`)
    assert.ok(Date.now() - t0 < 10000)
    // and the process is gone (the client's deadline may fire just before)
    let left
    for (let i = 0; i < 40; i++) {
      left = (await sbx.commands.list()).filter((p) => p.args && p.args.includes('sleep 20'))
      if (!left.length) break
      await sleep(50)
    }
    assert.deepEqual(left, [])
  })

  await test('1 MB of output arrives whole', async () => {
    const r = await sbx.commands.run("head -c 1000000 /dev/zero | tr '\\0' a")
    assert.equal(r.stdout.length, 1000000)
    assert.ok(/^a+$/.test(r.stdout))
  })

  await test('background: handle, commands.list, wait()', async () => {
    const h = await sbx.commands.run('sleep 1; echo done', { background: true, timeoutMs: 0 })
    assert.ok(h.pid > 0)
    const list = await sbx.commands.list()
    const me = list.find((p) => p.pid === h.pid)
    assert.ok(me, `pid ${h.pid} not in ${JSON.stringify(list)}`)
    assert.deepEqual(me.args.slice(-1), ['sleep 1; echo done'])
    const r = await h.wait()
    assert.equal(r.stdout, 'done\n')
  })

  await test('commands.kill ends a background command; kill again is false', async () => {
    const h = await sbx.commands.run('sleep 30', { background: true, timeoutMs: 0 })
    assert.equal(await sbx.commands.kill(h.pid), true)
    const e = await rejects(h.wait())
    assert.ok(e instanceof CommandExitError, `got ${e}`)
    assert.equal(e.exitCode, -1)
    await sleep(100)
    assert.equal(await sbx.commands.kill(h.pid), false)
  })

  await test('disconnect, then commands.connect(pid) sees the rest and the exit', async () => {
    const h = await sbx.commands.run('sleep 0.5; echo one; sleep 0.5; echo two', {
      background: true,
      timeoutMs: 0,
    })
    await h.disconnect()
    const got = []
    const h2 = await sbx.commands.connect(h.pid, { onStdout: (d) => got.push(d) })
    const r = await h2.wait()
    assert.equal(r.exitCode, 0)
    assert.ok(got.join('').includes('two'), `got ${JSON.stringify(got)}`)
  })

  await test('stdin: sendStdin and closeStdin', async () => {
    const h = await sbx.commands.run('cat', { background: true, stdin: true, timeoutMs: 0 })
    await sbx.commands.sendStdin(h.pid, 'hello ')
    await h.sendStdin('stdin\n')
    await sbx.commands.closeStdin(h.pid)
    const r = await h.wait()
    assert.equal(r.stdout, 'hello stdin\n')
  })

  await test('connect to an unknown pid throws', async () => {
    await rejects(sbx.commands.connect(999999), (e) =>
      assert.match(String(e), /not found/i))
  })

  // ------------------------------------------------------------ pty

  await test('pty: create, sendInput, resize, kill', async () => {
    let out = ''
    const dec = new TextDecoder()
    const waitFor = async (re) => {
      for (let i = 0; i < 100 && !re.test(out); i++) await sleep(50)
      assert.match(out, re)
    }
    const h = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => (out += dec.decode(d)), timeoutMs: 0 })
    assert.ok(h.pid > 0)
    await sbx.pty.sendInput(h.pid, new TextEncoder().encode('echo pty-$((6*7))\n'))
    await waitFor(/pty-42/)
    await sbx.pty.resize(h.pid, { cols: 100, rows: 40 })
    await sbx.pty.sendInput(h.pid, new TextEncoder().encode('stty size\n'))
    await waitFor(/40 100/)
    assert.equal(await sbx.pty.kill(h.pid), true)
    await rejects(h.wait())
  })

  // ------------------------------------------------------------ files

  await test('files.write and read (text)', async () => {
    const info = await sbx.files.write(`${G}/a.txt`, 'hello kiln\n')
    assert.equal(info.path, `${G}/a.txt`)
    assert.equal(info.name, 'a.txt')
    assert.equal(await sbx.files.read(`${G}/a.txt`), 'hello kiln\n')
  })

  await test('files.write and read (300 KB of binary, both upload encodings)', async () => {
    const data = randomBytes(300_000)
    await sbx.files.write(`${G}/bin`, data)
    const back = await sbx.files.read(`${G}/bin`, { format: 'bytes' })
    assert.ok(Buffer.from(back).equals(data))
    await sbx.files.write(`${G}/bin2`, data, { useOctetStream: true })
    const back2 = await sbx.files.read(`${G}/bin2`, { format: 'bytes' })
    assert.ok(Buffer.from(back2).equals(data))
  })

  await test('an empty file round-trips', async () => {
    await sbx.files.write(`${G}/empty`, '')
    assert.equal(await sbx.files.read(`${G}/empty`), '')
  })

  await test('files.write creates missing directories; writes several at once', async () => {
    await sbx.files.write(`${G}/new/deeper/x.txt`, 'x')
    assert.equal(await sbx.files.read(`${G}/new/deeper/x.txt`), 'x')
    const res = await sbx.files.write([
      { path: `${G}/multi/1.txt`, data: 'one' },
      { path: `${G}/multi/2.txt`, data: 'two' },
    ])
    assert.equal(res.length, 2)
    assert.equal(await sbx.files.read(`${G}/multi/2.txt`), 'two')
  })

  await test('a file written by a command is readable, and the reverse', async () => {
    await sbx.commands.run(`echo from-cmd > ${G}/cmd.txt`)
    assert.equal(await sbx.files.read(`${G}/cmd.txt`), 'from-cmd\n')
    await sbx.files.write(`${G}/sdk.txt`, 'from-sdk')
    assert.equal((await sbx.commands.run(`cat ${G}/sdk.txt`)).stdout, 'from-sdk')
  })

  await test('files.list (depth 1 and 2) with types', async () => {
    const l = await sbx.files.list(`${G}/new`)
    assert.deepEqual(l.map((e) => [e.name, e.type, e.path]), [['deeper', 'dir', `${G}/new/deeper`]])
    const l2 = await sbx.files.list(`${G}/new`, { depth: 2 })
    const names = l2.map((e) => e.path).sort()
    assert.deepEqual(names, [`${G}/new/deeper`, `${G}/new/deeper/x.txt`])
    assert.equal(l2.find((e) => e.name === 'x.txt').type, 'file')
  })

  await test('files.exists and getInfo', async () => {
    assert.equal(await sbx.files.exists(`${G}/a.txt`), true)
    assert.equal(await sbx.files.exists(`${G}/nope`), false)
    const i = await sbx.files.getInfo(`${G}/a.txt`)
    assert.equal(i.type, 'file')
    assert.equal(i.size, 11)
    assert.equal(i.name, 'a.txt')
    assert.match(i.permissions, /^-rw/)
    assert.ok(i.modifiedTime instanceof Date && Math.abs(i.modifiedTime - Date.now()) < 3600e3)
    const d = await sbx.files.getInfo(G)
    assert.equal(d.type, 'dir')
  })

  await test('files.makeDir: true when made, false when it exists', async () => {
    assert.equal(await sbx.files.makeDir(`${G}/made/inner`), true)
    assert.equal(await sbx.files.makeDir(`${G}/made/inner`), false)
    assert.equal((await sbx.files.getInfo(`${G}/made/inner`)).type, 'dir')
  })

  await test('files.rename', async () => {
    await sbx.files.write(`${G}/old.txt`, 'moved')
    const e = await sbx.files.rename(`${G}/old.txt`, `${G}/moved/new.txt`)
    assert.equal(e.path, `${G}/moved/new.txt`)
    assert.equal(await sbx.files.exists(`${G}/old.txt`), false)
    assert.equal(await sbx.files.read(`${G}/moved/new.txt`), 'moved')
  })

  await test('files.remove (a file, a tree, a missing path)', async () => {
    await sbx.files.remove(`${G}/a.txt`)
    assert.equal(await sbx.files.exists(`${G}/a.txt`), false)
    await sbx.files.remove(`${G}/new`)
    assert.equal(await sbx.files.exists(`${G}/new`), false)
    await sbx.files.remove(`${G}/never-was`)
  })

  await test('reading a missing file throws FileNotFoundError', async () => {
    await rejects(sbx.files.read(`${G}/missing`), (e) =>
      assert.ok(e instanceof FileNotFoundError, `got ${e}`))
    await rejects(sbx.files.getInfo(`${G}/missing`), (e) =>
      assert.ok(e instanceof FileNotFoundError, `got ${e}`))
  })

  await test(`relative paths are in ${HOME_DIR}`, async () => {
    const name = `kiln-e2b-rel-${process.pid}.txt`
    await sbx.files.write(name, 'rel')
    try {
      assert.equal(await sbx.files.read(`${HOME_DIR}/${name}`), 'rel')
      assert.equal((await sbx.commands.run(`cat ${name}`)).stdout, 'rel')
    } finally {
      await sbx.files.remove(name)
    }
  })

  await test('downloadUrl/uploadUrl work without headers (signed)', async () => {
    await sbx.files.write(`${G}/dl.txt`, 'signed')
    const r = await fetch(await sbx.downloadUrl(`${G}/dl.txt`))
    assert.equal(r.status, 200)
    assert.equal(await r.text(), 'signed')
    const fd = new FormData()
    fd.append('file', new Blob(['uploaded']), `${G}/ul.txt`)
    const u = await fetch(await sbx.uploadUrl(`${G}/ul.txt`), { method: 'POST', body: fd })
    assert.equal(u.status, 200)
    assert.equal(await sbx.files.read(`${G}/ul.txt`), 'uploaded')
    const bad = await fetch(`${SANDBOX_URL}/files?path=${G}/dl.txt&signature=v1_nope`)
    assert.equal(bad.status, 400)
  })

  // kilnd polls the directory (control/envd/envd_scan.c): events come within a
  // scan period (100 ms for small trees), so each step waits for its event.
  const watchEvents = () => {
    const seen = []
    const waitFor = async (type, name, ms = 5000) => {
      for (const end = Date.now() + ms; Date.now() < end; await sleep(20)) {
        const i = seen.findIndex((e) => e.type === type && e.name === name)
        if (i >= 0) return seen.splice(i, 1)[0]
      }
      throw new Error(`no ${type} event for ${name}; seen ${JSON.stringify(seen)}`)
    }
    return { seen, waitFor, onEvent: (e) => { seen.push(e) } }
  }

  await test('watchDir: create, write (same size), chmod, rename, remove', async () => {
    const dir = `${G}/watch`
    await sbx.files.makeDir(dir)
    const w = watchEvents()
    const h = await sbx.files.watchDir(dir, w.onEvent, { includeEntry: true })
    try {
      await sbx.files.write(`${dir}/a.txt`, 'one')
      const c = await w.waitFor('create', 'a.txt')
      assert.equal(c.entry.name, 'a.txt')
      assert.equal(c.entry.path, `${dir}/a.txt`)
      assert.equal(c.entry.type, 'file')
      // same size, within the same second: only the nanoseconds move
      await sbx.commands.run(`printf two > ${dir}/a.txt`)
      await w.waitFor('write', 'a.txt')
      await sbx.commands.run(`chmod 600 ${dir}/a.txt`)
      const m = await w.waitFor('chmod', 'a.txt')
      assert.equal(m.entry.mode, 0o600)
      await sbx.files.rename(`${dir}/a.txt`, `${dir}/b.txt`)
      await w.waitFor('remove', 'a.txt')
      await w.waitFor('create', 'b.txt')
      await sbx.files.remove(`${dir}/b.txt`)
      const r = await w.waitFor('remove', 'b.txt')
      assert.equal(r.entry, undefined)
      await sleep(300)
      assert.deepEqual(w.seen, [], 'no other events')
    } finally {
      await h.stop()
    }
  })

  await test('watchDir recursive: subdirectories, names relative to the watched one', async () => {
    const dir = `${G}/watch-r`
    await sbx.files.makeDir(`${dir}/old`)
    const flat = watchEvents()
    const w = watchEvents()
    const h = await sbx.files.watchDir(dir, w.onEvent, { recursive: true })
    const hf = await sbx.files.watchDir(dir, flat.onEvent)
    try {
      await sbx.commands.run(`mkdir -p ${dir}/sub/deep && echo x > ${dir}/sub/deep/f && echo y > ${dir}/old/g`)
      await w.waitFor('create', 'sub')
      await w.waitFor('create', 'sub/deep')
      await w.waitFor('create', 'sub/deep/f')
      await w.waitFor('create', 'old/g')
      await flat.waitFor('create', 'sub')
      await sleep(300)
      assert.deepEqual(flat.seen.filter((e) => e.name.includes('/')), [], 'not recursive: no deeper events')
      await sbx.commands.run(`rm -rf ${dir}/sub`)
      await w.waitFor('remove', 'sub/deep/f')
      await w.waitFor('remove', 'sub')
    } finally {
      await h.stop()
      await hf.stop()
    }
  })

  await test('watchDir: a trailing slash; the directory removed and made again', async () => {
    const dir = `${G}/watch-again`
    await sbx.files.makeDir(dir)
    const w = watchEvents()
    const h = await sbx.files.watchDir(`${dir}/`, w.onEvent, { includeEntry: true })
    try {
      await sbx.files.write(`${dir}/f`, 'f')
      assert.equal((await w.waitFor('create', 'f')).entry.path, `${dir}/f`)
      await sbx.commands.run(`rm -rf ${dir}`)
      await w.waitFor('remove', 'f')
      await sbx.commands.run(`mkdir ${dir} && echo g > ${dir}/g`)
      assert.equal((await w.waitFor('create', 'g')).entry.path, `${dir}/g`)
    } finally {
      await h.stop()
    }
  })

  await test('watchDir of a missing path or of a file: clear errors', async () => {
    let e = await rejects(sbx.files.watchDir(`${G}/no-such-dir`, () => {}))
    assert.ok(e instanceof FileNotFoundError || /not found|no such/i.test(String(e)), String(e))
    await sbx.files.write(`${G}/plain`, 'x')
    e = await rejects(sbx.files.watchDir(`${G}/plain`, () => {}))
    assert.match(String(e), /not a directory/)
  })

  if (!FAKE) {
    await test("watchDir lists as the request's user: root's 0700 directory is refused", async () => {
      const d = `/tmp/kiln-watch-as-${process.pid}`
      await sbx.commands.run(`mkdir -p ${d}/open ${d}/closed && chmod 700 ${d}/closed`, { user: 'root' })
      const e = await rejects(sbx.files.watchDir(`${d}/closed`, () => {}))
      assert.ok(e instanceof SandboxError, `got ${e}`)
      assert.match(e.message, /\[permission_denied\] .*closed.*Permission denied/)
      const w = watchEvents()
      const h = await sbx.files.watchDir(d, w.onEvent, { recursive: true })
      const wr = watchEvents()
      const hr = await sbx.files.watchDir(`${d}/closed`, wr.onEvent, { user: 'root' })
      try {
        await sbx.commands.run(`echo y > ${d}/closed/secret; echo x > ${d}/open/f`, { user: 'root' })
        await w.waitFor('create', 'open/f')
        await wr.waitFor('create', 'secret')
        await sleep(300)
        assert.deepEqual(w.seen.filter((ev) => ev.name.startsWith('closed/')), [],
          'nothing from inside the directory the user cannot list')
      } finally {
        await h.stop()
        await hr.stop()
      }
    })
  }

  await test('watchDir of a huge tree is refused; 32 watches at most', async () => {
    const t0 = Date.now()
    const e = await rejects(sbx.files.watchDir('/', () => {}, { recursive: true }))
    assert.match(String(e), /more than 10000 entries/)
    assert.ok(Date.now() - t0 < 15000, `refused after ${Date.now() - t0} ms`)
    const hs = []
    try {
      for (let i = 0; i < 32; i++) hs.push(await sbx.files.watchDir('/', () => {}))
      assert.match(String(await rejects(sbx.files.watchDir(G, () => {}))), /32 watches/)
    } finally {
      for (const h of hs) await h.stop()
    }
    const h = await sbx.files.watchDir(G, () => {})
    await h.stop()
  }, 60000)

  await test('watchDir: a sandbox killed while watched ends its watches', async () => {
    const s2 = await Sandbox.create({ envs: FAKE ? { HOME: `${T}/home` } : {} })
    const H2 = await envdHeaders(s2.sandboxId)
    await s2.files.makeDir(G)
    let exited
    const h = await s2.files.watchDir(G, () => {}, { recursive: true, onExit: (err) => { exited = err || 'clean' } })
    const u = await rpcUnary(H2, 'filesystem.Filesystem/CreateWatcher', { path: G })
    assert.equal(u.status, 200, JSON.stringify(u.body))
    await s2.kill()
    for (let i = 0; i < 50 && !exited; i++) await sleep(100)
    assert.ok(exited, 'onExit was called')
    await h.stop()
    const g = await rpcUnary(H2, 'filesystem.Filesystem/GetWatcherEvents', { watcherId: u.body.watcherId })
    assert.equal(g.status, 502)
  }, 60000)

  await test('watchDir ends at its timeout (onExit is told)', async () => {
    let exited
    const h = await sbx.files.watchDir(G, () => {}, { timeoutMs: 1500, onExit: (err) => { exited = err || 'clean' } })
    for (let i = 0; i < 50 && !exited; i++) await sleep(100)
    assert.ok(exited, 'onExit was called')
    await h.stop()
  })


  // ------------------------------------------------------------ code interpreter (port 49999)

  let ci
  await test('code interpreter: Sandbox.create() with its default template', async () => {
    ci = await CiSandbox.create({ envs: FAKE ? { HOME: `${T}/home` } : {} })
    const info = await ci.getInfo()
    assert.equal(info.templateId, 'code-interpreter-v1')
  }, 60000, FILTER.includes('runCode') || FILTER.includes('code context') || FILTER.includes('paus'))

  if (ci) {
    await test('runCode runs as the default user, in its home', async () => {
      const ex = await ci.runCode('import os, pwd\nprint(pwd.getpwuid(os.getuid()).pw_name, os.getcwd())')
      assert.equal(ex.error, undefined)
      assert.deepEqual(ex.logs.stdout, [FAKE ? `root ${'/home/user'}\n` : 'user /home/user\n'])
    })

    await test('runCode: state kept, main result, stdout and stderr as they come', async () => {
      const out = []
      let ex = await ci.runCode('x = 6 * 7\nprint("hi")\nimport sys\nprint("err", file=sys.stderr)\nx',
        { onStdout: (m) => out.push(m.line) })
      assert.equal(ex.text, '42')
      assert.deepEqual(ex.logs, { stdout: ['hi\n'], stderr: ['err\n'] })
      assert.deepEqual(out, ['hi\n'])
      assert.equal(ex.error, undefined)
      ex = await ci.runCode('x + 1')
      assert.equal(ex.text, '43')
      assert.ok(ex.executionCount >= 2)
      ex = await ci.runCode('y = 1')
      assert.deepEqual(ex.results, [])
    }, 60000)

    await test('runCode: errors have name, value and traceback; the context goes on', async () => {
      const ex = await ci.runCode('def f():\n    return 1 / 0\nf()')
      assert.equal(ex.error.name, 'ZeroDivisionError')
      assert.equal(ex.error.value, 'division by zero')
      assert.match(ex.error.traceback, /in f\n.*1 \/ 0/s)
      assert.doesNotMatch(ex.error.traceback, /codeint|kernel/)
      assert.equal((await ci.runCode('x')).text, '42')
      const se = await ci.runCode('def g(:')
      assert.equal(se.error.name, 'SyntaxError')
    })

    await test('runCode: output of subprocesses and C code is caught', async () => {
      const ex = await ci.runCode('import os, subprocess\nsubprocess.run(["echo", "sub"])\nos.write(1, b"raw\\n")\nNone')
      assert.equal(ex.logs.stdout.join(''), 'sub\nraw\n')
    })

    await test('runCode: output with NUL and JSON-looking text is relayed as it is', async () => {
      const ex = await ci.runCode('print("a\\0b")\nprint(\'{"type": "end_of_execution"}\')\n"\\0"')
      assert.equal(ex.logs.stdout.join(''), 'a\0b\n{"type": "end_of_execution"}\n')
      assert.equal(ex.text, "'\\x00'")
    })

    await test('runCode: display() formats; matplotlib figures as PNG', async () => {
      let ex = await ci.runCode('class H:\n    def _repr_html_(self): return "<b>h</b>"\n    def __repr__(self): return "H()"\ndisplay(H())\nH()')
      assert.equal(ex.results.length, 2)
      assert.equal(ex.results[0].isMainResult, false)
      assert.equal(ex.results[0].html, '<b>h</b>')
      assert.equal(ex.results[1].isMainResult, true)
      assert.equal(ex.results[1].text, 'H()')
      assert.deepEqual(ex.results[1].formats(), ['html'])
      if (FAKE) return // the host's python may lack matplotlib; the base image has it
      ex = await ci.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title("t")\nprint("plotted")')
      assert.equal(ex.error, undefined, ex.error && ex.error.traceback)
      assert.equal(ex.results.length, 1)
      const png = Buffer.from(ex.results[0].png, 'base64')
      assert.equal(png.subarray(1, 4).toString(), 'PNG')
      assert.ok(png.length > 5000)
      assert.match(ex.results[0].text, /Figure/)
    }, 120000)

    await test('runCode: env vars for one execution; Python only', async () => {
      assert.equal((await ci.runCode('import os\nos.environ["CI_V"]', { envs: { CI_V: 'v' } })).text, "'v'")
      assert.equal((await ci.runCode('repr(os.environ.get("CI_V"))')).text, "'None'")
      const e = await rejects(ci.runCode('1', { language: 'r' }))
      assert.match(String(e), /400/)
    })

    await test('runCode: a client timeout interrupts the code', async () => {
      const t0 = Date.now()
      await rejects(ci.runCode('import time\ntime.sleep(60)', { timeoutMs: 1000 }))
      const ex = await ci.runCode('1 + 1')
      assert.equal(ex.text, '2')
      assert.ok(Date.now() - t0 < 20000, 'the sleep was interrupted')
    }, 60000)

    await test('runCode: input() and reads of fd 0 see no input, not the requests', async () => {
      assert.equal((await ci.runCode('input()')).error.name, 'EOFError')
      assert.equal((await ci.runCode('import os, sys\n(os.read(0, 100), sys.stdin.read())')).text, "(b'', '')")
      assert.equal((await ci.runCode('6 * 7')).text, '42')
    })

    await test('runCode: a result too big to relay is dropped with a note; big output flows', async () => {
      let ex = await ci.runCode('"x" * 12_000_000')
      assert.equal(ex.results.length, 0)
      assert.match(ex.logs.stderr.join(''), /dropped/)
      ex = await ci.runCode('import sys\nsys.stdout.write("y" * 20_000_000)\n"z" * 2_000_000')
      assert.equal(ex.logs.stdout.join('').length, 20_000_000)
      assert.equal(ex.text.length, 2_000_002)
      assert.equal((await ci.runCode('5')).text, '5')
    }, 60000)

    await test('runCode: output comes as it is printed, before the code ends', async () => {
      const t0 = Date.now()
      let at
      const ex = await ci.runCode('import time\nprint("step")\ntime.sleep(2)',
        { onStdout: () => { at = at || Date.now() - t0 } })
      const end = Date.now() - t0
      assert.deepEqual(ex.logs.stdout, ['step\n'])
      assert.ok(end - at > 1000, `stdout came at ${at} ms, the end at ${end} ms`)
    }, 60000)

    await test('runCode: a client that stops reading a big output, then goes away', async () => {
      // kilnd stops the kernel's output while the client does not read;
      // once the client is gone the context must take the next execution
      const body = JSON.stringify({ code: 'import sys\nfor i in range(64):\n    sys.stdout.write("x" * 1000000 + "\\n")' })
      const s = net.connect(ENVD_PORT, '127.0.0.1')
      await new Promise((r) => s.on('connect', r))
      s.pause()
      s.write(`POST /execute HTTP/1.1\r\nHost: k\r\nE2b-Sandbox-Id: ${ci.sandboxId}\r\n` +
        `E2b-Sandbox-Port: 49999\r\nE2B-Traffic-Access-Token: ${ci.trafficAccessToken}\r\n` +
          `Content-Length: ${body.length}\r\n\r\n${body}`)
      await sleep(3000)
      s.destroy()
      const ex = await withTimeout(ci.runCode('1 + 1'), 20000, 'runCode after the stalled client')
      assert.equal(ex.text, '2')
    }, 60000)

    await test('runCode kernel: interrupts outside an execution are ignored', async () => {
      // the kernel on the host: kilnd's SIGINT for a client that went away
      // may come just after the execution ended
      const k = spawn('python3', ['-u', '-c', fs.readFileSync(`${ROOT}/control/envd/codeint_kernel.py`, 'utf8')],
        { env: { PATH: process.env.PATH, KILN_CI_CWD: T }, stdio: ['pipe', 'pipe', 'inherit'] })
      let buf = ''
      const waiters = []
      const lines = []
      k.stdout.on('data', (d) => {
        buf += d
        let i
        while ((i = buf.indexOf('\n')) >= 0) {
          lines.push(JSON.parse(buf.slice(0, i)))
          buf = buf.slice(i + 1)
        }
        while (waiters.length && lines.length) waiters.shift()(lines.shift())
      })
      k.on('exit', () => { lines.push({ type: 'exited' }); while (waiters.length) waiters.shift()(lines.shift()) })
      const next = () => lines.length ? Promise.resolve(lines.shift()) : new Promise((r) => waiters.push(r))
      try {
        assert.equal((await next()).type, 'ready')
        let ends = 0
        for (let i = 0; i < 200; i++) {
          k.stdin.write('{"code": "pass"}\n')
          k.kill('SIGINT')
          for (let m = await next(); m.type !== 'end_of_execution'; m = await next())
            assert.notEqual(m.type, 'exited', `the kernel died at execution ${i}`)
          ends++
          k.kill('SIGINT')
        }
        k.stdin.write('{"code": "7"}\n')
        const m = await withTimeout(next(), 5000, 'the kernel after 400 interrupts')
        assert.deepEqual([ends, m.type, m.text], [200, 'result', '7'])
      } finally {
        k.kill('SIGKILL')
      }
    }, 60000)

    await test('code contexts: create, own state and cwd, list, restart, remove', async () => {
      const ctx = await ci.createCodeContext({ cwd: `${G}/ctx` })
      assert.equal(ctx.language, 'python')
      assert.equal(ctx.cwd, `${G}/ctx`)
      assert.equal((await ci.runCode('import os\nos.getcwd()', { context: ctx })).text, `'${G}/ctx'`)
      await ci.runCode('z = 5', { context: ctx })
      assert.equal((await ci.runCode('z', { context: ctx })).text, '5')
      assert.equal((await ci.runCode('z')).error.name, 'NameError', 'the default context is another')
      const ids = (await ci.listCodeContexts()).map((c) => c.id)
      assert.ok(ids.includes(ctx.id) && ids.includes('default-python'), JSON.stringify(ids))
      await ci.restartCodeContext(ctx)
      assert.equal((await ci.runCode('z', { context: ctx })).error.name, 'NameError')
      await ci.removeCodeContext(ctx)
      assert.ok(!(await ci.listCodeContexts()).some((c) => c.id === ctx.id))
      const e = await rejects(ci.runCode('1', { context: ctx }))
      assert.match(String(e), /not found/)
    }, 60000)

    await test('runCode: one context runs in order, two side by side; restart while running', async () => {
      const ctx = await ci.createCodeContext()
      const [a, b, c] = await Promise.all([
        ci.runCode('import time\nt0 = time.time()\ntime.sleep(2)\n(t0, time.time())'),
        ci.runCode('import time\n(time.time(), 0)'),
        ci.runCode('import time\nt0 = time.time()\ntime.sleep(2)\n(t0, time.time())', { context: ctx }),
      ])
      const [ta, tb, tc] = [a, b, c].map((x) => x.text.slice(1, -1).split(', ').map(Number))
      assert.ok(tb[0] >= ta[1], `the second execution of a context waits for the first: ${a.text} ${b.text}`)
      assert.ok(tc[0] < ta[1], `another context runs meanwhile: ${a.text} ${c.text}`)
      await ci.runCode('kept = 1', { context: ctx })
      const cut = ci.runCode('import time\ntime.sleep(600)', { context: ctx, timeoutMs: 0 }).catch((e) => e)
      await sleep(1000)
      await ci.restartCodeContext(ctx)
      const r = await withTimeout(cut, 10000, 'the execution cut by the restart')
      assert.ok(r instanceof Error || r.error, 'the cut execution failed')
      assert.equal((await ci.runCode('kept', { context: ctx })).error.name, 'NameError')
      await ci.removeCodeContext(ctx)
    }, 60000)

    await test('runCode: at most 64 queued per context; queued clients that go away', async () => {
      const ctx = await ci.createCodeContext()
      // raw clients: each sends one /execute and keeps what it is answered
      const post = (code) => {
        const body = JSON.stringify({ code, context_id: ctx.id })
        const s = net.connect(ENVD_PORT, '127.0.0.1')
        s.got = ''
        s.on('data', (d) => { s.got += d })
        s.on('error', () => {})
        s.write(`POST /execute HTTP/1.1\r\nHost: k\r\nE2b-Sandbox-Id: ${ci.sandboxId}\r\n` +
          `E2b-Sandbox-Port: 49999\r\nE2B-Traffic-Access-Token: ${ci.trafficAccessToken}\r\n` +
          `Content-Length: ${body.length}\r\n\r\n${body}`)
        return s
      }
      const socks = [post('import time\ntime.sleep(600)')]
      try {
        for (let i = 0; i < 100 && !socks[0].got; i++) await sleep(50)
        assert.match(socks[0].got, /^HTTP\/1.1 200/, 'the first one runs')
        for (let i = 1; i < 64; i++) socks.push(post('1'))
        await sleep(1000)
        socks.push(post('1'))
        for (let i = 0; i < 100 && !socks[64].got; i++) await sleep(50)
        assert.match(socks[64].got, /^HTTP\/1.1 429/)
        assert.ok(socks.slice(1, 64).every((s) => !s.got), 'the others wait')
      } finally {
        for (const s of socks) s.destroy()
      }
      const ex = await withTimeout(ci.runCode('2 + 2', { context: ctx }), 10000, 'runCode after 64 clients left')
      assert.equal(ex.text, '4')
      await ci.removeCodeContext(ctx)
    }, 60000)

    await test('the code interpreter port wants a token: without one 401, the SDK sends its trafficAccessToken', async () => {
      assert.match(ci.trafficAccessToken || '', /^[0-9a-f]{64}$/)
      const h = { 'E2b-Sandbox-Id': ci.sandboxId, 'E2b-Sandbox-Port': '49999', 'Content-Type': 'application/json' }
      let r = await fetch(`${SANDBOX_URL}/contexts`, { headers: h })
      assert.equal(r.status, 401)
      r = await fetch(`${SANDBOX_URL}/execute`, { method: 'POST', headers: h, body: '{"code":"1"}' })
      assert.equal(r.status, 401)
      r = await fetch(`${SANDBOX_URL}/contexts`, { headers: { ...h, 'E2B-Traffic-Access-Token': ci.envdAccessToken } })
      assert.equal(r.status, 401, 'the envd token is not the traffic token')
      assert.ok(Array.isArray(await ci.listCodeContexts()))
    })

    await test('code contexts: a cwd that cannot be made fails the creation, no context is left', async () => {
      const before = (await ci.listCodeContexts()).length
      await ci.files.write(`${G}/ci-file`, 'f')
      const r = await fetch(`${SANDBOX_URL}/contexts`, { method: 'POST', body: JSON.stringify({ cwd: `${G}/ci-file/sub` }),
        headers: { 'E2b-Sandbox-Id': ci.sandboxId, 'E2b-Sandbox-Port': '49999', 'E2B-Traffic-Access-Token': ci.trafficAccessToken } })
      assert.equal(r.status, 500)
      assert.match((await r.json()).message, /NotADirectoryError|FileExistsError/)
      assert.equal((await ci.listCodeContexts()).length, before)
    })

    await test('runCode: a context whose process died starts afresh', async () => {
      const ctx = await ci.createCodeContext()
      await ci.runCode('w = 1', { context: ctx })
      const died = await ci.runCode('import os\nos._exit(3)', { context: ctx })
      assert.equal(died.error.name, 'KernelDied')
      const ex = await ci.runCode('w', { context: ctx })
      assert.equal(ex.error.name, 'NameError')
      assert.match(ex.logs.stderr.join(''), /KernelRestarted/)
      await ci.removeCodeContext(ctx)
    }, 60000)

    if (!FAKE) {
      await test('runCode: variables survive pause and resume', async () => {
        await ci.runCode('kept = [1, 2, 3]')
        await ci.pause()
        assert.equal((await ci.runCode('sum(kept)')).text, '6')
      }, 120000)

      await test('watchDir: a paused sandbox is not woken by a watch, which goes on after the resume', async () => {
        const w = watchEvents()
        await ci.files.makeDir(`${G}/pw`)
        const h = await ci.files.watchDir(`${G}/pw`, w.onEvent)
        try {
          await ci.pause()
          await sleep(1500)
          assert.equal((await ci.getInfo()).state, 'paused')
          await ci.files.write(`${G}/pw/x`, 'x')
          await w.waitFor('create', 'x', 10000)
        } finally {
          await h.stop()
        }
      }, 120000)

      await test('runCode: an execution cut by a pause is interrupted on resume', async () => {
        const cut = ci.runCode('import time\ntime.sleep(600)', { timeoutMs: 0 }).catch((e) => e)
        await sleep(1000)
        await ci.pause()
        const r = await cut
        assert.ok(r instanceof Error || r.error, 'the cut execution failed')
        const ex = await withTimeout(ci.runCode('1 + 1'), 20000, 'runCode after the resume')
        assert.equal(ex.text, '2')
      }, 120000)

      await test('code contexts: a pause while a context starts answers its creation', async () => {
        const H49999 = { 'E2b-Sandbox-Id': ci.sandboxId, 'E2b-Sandbox-Port': '49999', 'E2B-Traffic-Access-Token': ci.trafficAccessToken }
        const before = (await ci.listCodeContexts()).length
        for (let i = 0; i < 6; i++) {
          const made = fetch(`${SANDBOX_URL}/contexts`, { method: 'POST', headers: H49999, body: '{}' })
            .then(async (r) => [r.status, await r.json()])
          await sleep(40 * i)
          await ci.pause()
          const [st, body] = await withTimeout(made, 20000, `POST /contexts cut by a pause after ${40 * i} ms`)
          if (st === 200) {
            assert.equal((await ci.runCode('7', { context: body })).text, '7')
            await ci.removeCodeContext(body.id)
          } else {
            assert.deepEqual([st, body.message], [503, body.message.includes('paused') && body.message])
          }
        }
        assert.equal((await ci.listCodeContexts()).length, before, 'no context is left behind')
      }, 120000)

      await test('runCode: a pause fails the running and the queued executions', async () => {
        const running = ci.runCode('import time\ntime.sleep(600)', { timeoutMs: 0 }).catch((e) => e)
        await sleep(1000)
        const queued = ci.runCode('1', { timeoutMs: 0 }).catch((e) => e)
        await sleep(500)
        await ci.pause()
        for (const [what, p] of [['running', running], ['queued', queued]]) {
          const r = await withTimeout(p, 20000, `the ${what} execution after the pause`)
          assert.ok(r instanceof Error || r.error, `the ${what} execution failed`)
        }
        assert.equal((await ci.runCode('3')).text, '3')
      }, 120000)

      await test('code contexts: restart or removal of a paused one resumes and ends the old process', async () => {
        const a = await ci.createCodeContext()
        const b = await ci.createCodeContext()
        const pids = [(await ci.runCode('import os\nos.getpid()', { context: a })).text,
          (await ci.runCode('import os\nos.getpid()', { context: b })).text]
        await ci.pause()
        const r = await fetch(`${SANDBOX_URL}/contexts/no-such-context`, { method: 'DELETE',
          headers: { 'E2b-Sandbox-Id': ci.sandboxId, 'E2b-Sandbox-Port': '49999', 'E2B-Traffic-Access-Token': ci.trafficAccessToken } })
        assert.equal(r.status, 404)
        assert.equal((await ci.getInfo()).state, 'paused', 'an unknown context does not resume it')
        await ci.removeCodeContext(b)
        assert.equal((await ci.getInfo()).state, 'running')
        await ci.pause()
        await ci.restartCodeContext(a)
        const alive = `import os\ndef alive(p):\n    try:\n        os.kill(p, 0)\n        return True\n    except ProcessLookupError:\n        return False\n[alive(p) for p in [${pids}]]`
        let left
        for (let i = 0; i < 50; i++) {
          left = (await ci.runCode(alive)).text
          if (left === '[False, False]') break
          await sleep(100)
        }
        assert.equal(left, '[False, False]', `processes ${pids} of the restarted and removed contexts`)
        await ci.removeCodeContext(a)
      }, 120000)
    }
    await ci.kill()
  }

  // ------------------------------------------------------------ envd protocol, raw

  let H
  await test('raw Start: start, data (base64), end event, end-of-stream {}', async () => {
    H = await envdHeaders(sbx.sandboxId)
    const { events, end } = await rpcStream(H, 'process.Process/Start', {
      process: { cmd: '/bin/sh', args: ['-c', 'printf hi; printf err >&2; exit 4'] },
      stdin: false,
    })
    assert.ok(events[0].start.pid > 0)
    const out = events.filter((e) => e.data && e.data.stdout).map((e) => Buffer.from(e.data.stdout, 'base64')).join('')
    const err = events.filter((e) => e.data && e.data.stderr).map((e) => Buffer.from(e.data.stderr, 'base64')).join('')
    assert.equal(out, 'hi')
    assert.equal(err, 'err')
    assert.deepEqual(events.at(-1).end, { exitCode: 4, exited: true, status: 'exit status 4', error: 'exit status 4' })
    assert.deepEqual(end, {})
  })

  await test('raw watchers: CreateWatcher, GetWatcherEvents, RemoveWatcher', async () => {
    H = H || await envdHeaders(sbx.sandboxId)
    const dir = `${G}/watcher`
    await sbx.files.makeDir(dir)
    let u = await rpcUnary(H, 'filesystem.Filesystem/CreateWatcher', { path: dir, recursive: true })
    assert.equal(u.status, 200, JSON.stringify(u.body))
    const id = u.body.watcherId
    assert.match(id, /^[0-9a-f]{16}$/)
    await sbx.files.write(`${dir}/n.txt`, 'n')
    let events = []
    for (let i = 0; i < 50 && !events.length; i++) {
      await sleep(100)
      u = await rpcUnary(H, 'filesystem.Filesystem/GetWatcherEvents', { watcherId: id })
      assert.equal(u.status, 200, JSON.stringify(u.body))
      events = u.body.events || []
    }
    assert.deepEqual(events, [{ name: 'n.txt', type: 'EVENT_TYPE_CREATE' }])
    u = await rpcUnary(H, 'filesystem.Filesystem/GetWatcherEvents', { watcher_id: id })
    assert.deepEqual(u.body.events || [], [], 'collected events are gone')
    u = await rpcUnary(H, 'filesystem.Filesystem/RemoveWatcher', { watcherId: id })
    assert.equal(u.status, 200)
    u = await rpcUnary(H, 'filesystem.Filesystem/GetWatcherEvents', { watcherId: id })
    assert.deepEqual([u.status, u.body.code], [404, 'not_found'])
    u = await rpcUnary(H, 'filesystem.Filesystem/CreateWatcher', { path: `${dir}/missing` })
    assert.deepEqual([u.status, u.body.code], [404, 'not_found'])
    u = await rpcUnary(H, 'filesystem.Filesystem/CreateWatcher', { path: 7 })
    assert.deepEqual([u.status, u.body.code], [400, 'invalid_argument'])
  })

  await test('raw Start: keepalive events after Keepalive-Ping-Interval', async () => {
    const { events } = await rpcStream(H, 'process.Process/Start',
      { process: { cmd: '/bin/sh', args: ['-c', 'sleep 2.5'] } }, { 'Keepalive-Ping-Interval': '1' })
    assert.ok(events.filter((e) => e.keepalive).length >= 2, JSON.stringify(events))
    assert.ok(events.at(-1).end)
  })

  await test('raw Start: a missing program or cwd is invalid_argument in the end-of-stream', async () => {
    let { events, end } = await rpcStream(H, 'process.Process/Start', { process: { cmd: '/no/such/program' } })
    assert.equal(events.length, 0)
    assert.equal(end.error.code, 'invalid_argument')
    ;({ events, end } = await rpcStream(H, 'process.Process/Start', { process: { cmd: '/bin/true', cwd: '/no/such/dir' } }))
    assert.equal(events.length, 0)
    assert.equal(end.error.code, 'invalid_argument')
  })

  await test('raw Start: signal death is exitCode -1, "signal: killed" (status and error)', async () => {
    const { events } = await rpcStream(H, 'process.Process/Start',
      { process: { cmd: '/bin/sh', args: ['-c', 'kill -KILL $$'] } })
    assert.deepEqual(events.at(-1).end,
      { exitCode: -1, exited: false, status: 'signal: killed', error: 'signal: killed' })
  })

  await test('raw Connect: Connect-Timeout-Ms ends the stream, not the process', async () => {
    const h = await sbx.commands.run('sleep 3', { background: true, timeoutMs: 0 })
    const t0 = Date.now()
    const { events, end } = await rpcStream(H, 'process.Process/Connect',
      { process: { pid: h.pid } }, { 'Connect-Timeout-Ms': '500' })
    assert.ok(Date.now() - t0 < 2500)
    assert.equal(events[0].start.pid, h.pid)
    assert.equal(end.error.code, 'deadline_exceeded')
    assert.ok((await sbx.commands.list()).some((p) => p.pid === h.pid))
    await h.wait()
  })

  await test('raw: bad requests get Connect errors', async () => {
    let r = await rpcStream(H, 'process.Process/Start', Buffer.from([0, 0, 0, 0, 9, 1]))
    assert.equal(r.end.error.code, 'invalid_argument')
    r = await rpcStream(H, 'process.Process/Start', { process: { args: ['x'] } })
    assert.equal(r.end.error.code, 'invalid_argument')
    r = await rpcStream(H, 'process.Process/Start', envelope({ process: { cmd: 'x' } }, 1))
    assert.equal(r.end.error.code, 'invalid_argument')
    let u = await rpcUnary(H, 'process.Process/List', '{not json')
    assert.deepEqual([u.status, u.body.code], [400, 'invalid_argument'])
    u = await rpcUnary(H, 'process.Process/List', '{}', 'application/proto')
    assert.equal(u.status, 415)
    u = await rpcUnary(H, 'process.Process/Nope', '{}')
    assert.deepEqual([u.status, u.body.code], [501, 'unimplemented'])
    u = await rpcUnary(H, 'process.Process/SendSignal', { process: { pid: 4242424 }, signal: 'SIGNAL_SIGKILL' })
    assert.deepEqual([u.status, u.body.code], [404, 'not_found'])
    u = await rpcUnary(H, 'process.Process/SendSignal', { process: {}, signal: 'SIGNAL_SIGKILL' })
    assert.deepEqual([u.status, u.body.code], [400, 'invalid_argument'])
    u = await rpcUnary(H, 'filesystem.Filesystem/Stat', { path: 7 })
    assert.deepEqual([u.status, u.body.code], [400, 'invalid_argument'])
    await sbx.files.write(`${G}/plain`, 'p')
    u = await rpcUnary(H, 'filesystem.Filesystem/ListDir', { path: `${G}/plain` })
    assert.deepEqual([u.status, u.body.code], [400, 'invalid_argument'])
    r = await rpcStream(H, 'process.Process/StreamInput', {})
    assert.equal(r.end.error.code, 'invalid_argument')
  })

  // StreamInput: the request body is a stream of envelopes, sent (chunked)
  // while the process reads them; the answer comes when the client ends.
  function streamInput(h) {
    let resolveRes
    const res = new Promise((r) => { resolveRes = r })
    const req = http.request(`${SANDBOX_URL}/process.Process/StreamInput`, {
      method: 'POST',
      headers: { ...h, 'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1' },
    }, (r) => {
      const chunks = []
      r.on('data', (d) => chunks.push(d))
      r.on('end', () => {
        try {
          resolveRes({ status: r.statusCode, envs: parseEnvelopes(Buffer.concat(chunks)) })
        } catch (e) {
          resolveRes({ status: r.statusCode, error: e, body: Buffer.concat(chunks).toString() })
        }
      })
    })
    req.on('error', (e) => resolveRes({ error: e }))
    req.flushHeaders()
    return { send: (m) => req.write(envelope(m)), end: () => req.end(), res }
  }

  await test('raw StreamInput: stdin streamed as it comes, answered at the end', async () => {
    H = H || await envdHeaders(sbx.sandboxId)
    let out = ''
    const h = await sbx.commands.run('cat', { background: true, stdin: true, timeoutMs: 0,
      onStdout: (d) => { out += d } })
    const s = streamInput(H)
    s.send({ start: { process: { pid: h.pid } } })
    s.send({ data: { input: { stdin: Buffer.from('hello ').toString('base64') } } })
    for (let i = 0; i < 100 && out !== 'hello '; i++) await sleep(50)
    assert.equal(out, 'hello ', 'the first input arrived while the request goes on')
    s.send({ keepalive: {} })
    s.send({ data: { input: { stdin: Buffer.from('world\n').toString('base64') } } })
    s.end()
    const r = await withTimeout(s.res, 10000, 'the StreamInput answer')
    assert.equal(r.status, 200)
    assert.deepEqual(r.envs.map((e) => [e.flags, e.msg]), [[0, {}], [2, {}]])
    for (let i = 0; i < 100 && out !== 'hello world\n'; i++) await sleep(50)
    assert.equal(out, 'hello world\n')
    await sbx.commands.closeStdin(h.pid)
    assert.equal((await h.wait()).exitCode, 0)
  })

  await test('raw StreamInput: errors end the stream (no start, unknown pid, closed stdin)', async () => {
    H = H || await envdHeaders(sbx.sandboxId)
    let s = streamInput(H)
    s.send({ data: { input: { stdin: 'eA==' } } })
    let r = await withTimeout(s.res, 10000, 'StreamInput without start')
    assert.equal(r.envs.at(-1).msg.error.code, 'invalid_argument')
    s.end()
    s = streamInput(H)
    s.send({ start: { process: { pid: 4242424 } } })
    r = await withTimeout(s.res, 10000, 'StreamInput to an unknown pid')
    assert.equal(r.envs.at(-1).msg.error.code, 'not_found')
    s.end()
    const h = await sbx.commands.run('sleep 5', { background: true, timeoutMs: 0 })
    s = streamInput(H)
    s.send({ start: { process: { pid: h.pid } } })
    s.send({ data: { input: { stdin: 'eA==' } } })
    r = await withTimeout(s.res, 10000, 'StreamInput to a closed stdin')
    assert.equal(r.envs.at(-1).msg.error.code, 'failed_precondition')
    s.end()
    await h.kill()
  })

  await test('raw: unknown sandbox and other ports answer 502, 49999 checks its input', async () => {
    let r = await fetch(`${SANDBOX_URL}/health`, { headers: { 'E2b-Sandbox-Id': 'nosuch' } })
    assert.equal(r.status, 502)
    // another port is the sandbox's own server: its traffic token is needed
    r = await fetch(`${SANDBOX_URL}/health`, { headers: { ...H, 'E2b-Sandbox-Port': '8080' } })
    assert.equal(r.status, 401)
    r = await fetch(`${SANDBOX_URL}/health`, { headers: { ...H, 'E2b-Sandbox-Port': '8080',
      'E2B-Traffic-Access-Token': sbx.trafficAccessToken } })
    assert.equal(r.status, 502)
    assert.match((await r.json()).message, /port 8080 of sandbox .* is closed/)
    // 49999 is the code interpreter's: it has no /health
    r = await fetch(`${SANDBOX_URL}/health`, { headers: { ...H, 'E2b-Sandbox-Port': '49999' } })
    assert.equal(r.status, 404)
    r = await fetch(`${SANDBOX_URL}/contexts`, { headers: { ...H, 'E2b-Sandbox-Port': '49999', 'X-Access-Token': 'wrong' } })
    assert.equal(r.status, 401)
    r = await fetch(`${SANDBOX_URL}/execute`, { method: 'POST', headers: { ...H, 'E2b-Sandbox-Port': '49999' }, body: '{"code": 7}' })
    assert.equal(r.status, 400)
    r = await fetch(`${SANDBOX_URL}/execute`, { method: 'POST', headers: { ...H, 'E2b-Sandbox-Port': '49999' }, body: '[' })
    assert.equal(r.status, 400)
    r = await fetch(`${SANDBOX_URL}/health`)
    assert.equal(r.status, 502)
  })

  // GET http://HOST/PATH with node:http, resolving *.localhost to loopback
  // as browsers and curl do (RFC 6761); Node's fetch asks the system's
  // resolver, which does not here.
  const getVia = (host, p, headers = {}) => new Promise((resolve, reject) => {
    const [name, port] = host.split(':')
    const req = http.get({ host: name, port, path: p, headers,
      lookup: (h, o, cb) => (h.endsWith('.localhost') ? (o.all ? cb(null, [{ address: '127.0.0.1', family: 4 }])
        : cb(null, '127.0.0.1', 4)) : reject(new Error(`unexpected host ${h}`))) }, (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('error', reject)
  })
  const serveDir = async (s, dir, port) => {
    await s.files.write(`${dir}/hello.txt`, 'hi from the sandbox\n')
    const h = await s.commands.run(`python3 -m http.server ${port} --bind 127.0.0.1 --directory ${dir}`,
      { background: true, timeoutMs: 0 })
    for (let i = 0; i < 100; i++) {
      const r = await s.commands.run(`python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}))"`)
        .catch(() => null)
      if (r) return h
      await sleep(100)
    }
    throw new Error(`the server on port ${port} did not start`)
  }

  await test('getHost(port) answers a host name that reaches a server in the sandbox', async () => {
    const port = 40000 + Math.floor(Math.random() * 10000)
    const server = await serveDir(sbx, `${G}/www`, port)
    const host = sbx.getHost(port)
    assert.equal(host, `${port}-${sbx.sandboxId}.localhost:${API_PORT}`)
    assert.match(sbx.trafficAccessToken, /^[0-9a-f]{64}$/)
    let r = await getVia(host, '/hello.txt', { 'E2B-Traffic-Access-Token': sbx.trafficAccessToken })
    assert.deepEqual([r.status, r.body], [200, 'hi from the sandbox\n'])
    r = await getVia(host, '/hello.txt', { 'X-API-Key': API_KEY })
    assert.equal(r.status, 200)
    r = await getVia(host, '/hello.txt')
    assert.equal(r.status, 401)
    r = await getVia(host, '/hello.txt', { 'E2B-Traffic-Access-Token': '0'.repeat(64) })
    assert.equal(r.status, 401)
    await server.kill()
  }, 60000)

  await test('network.allowPublicTraffic: the ports answer without a token', async () => {
    const s = await Sandbox.create({ network: { allowPublicTraffic: true },
      envs: FAKE ? { HOME: `${T}/home` } : {} })
    try {
      assert.equal(s.trafficAccessToken, undefined)
      const port = 40000 + Math.floor(Math.random() * 10000)
      await serveDir(s, `${G}/www-public`, port)
      const r = await getVia(s.getHost(port), '/hello.txt')
      assert.deepEqual([r.status, r.body], [200, 'hi from the sandbox\n'])
    } finally {
      await s.kill()
    }
  }, 60000)

  await test(`at most 32 processes per sandbox (resource_exhausted)`, async () => {
    const hs = []
    try {
      for (let i = 0; i < 32; i++)
        hs.push(await sbx.commands.run('sleep 30', { background: true, timeoutMs: 0 }))
      const e = await rejects(sbx.commands.run('sleep 30', { background: true, timeoutMs: 0 }))
      assert.match(String(e), /too many processes/)
      // a killed one's slot is free at once: kill() answers before its
      // exit is seen (this was the 1-in-5 failure of this case)
      for (let i = 0; i < 32; i++) {
        await hs[i].kill()
        hs[i] = await sbx.commands.run('sleep 30', { background: true, timeoutMs: 0 })
      }
    } finally {
      for (const h of hs) await h.kill()
    }
    assert.equal((await sbx.commands.run('echo again')).stdout, 'again\n')
  }, 60000)

  await test('2 MB through sendStdin arrives whole', async () => {
    const h = await sbx.commands.run(`cat > ${G}/stdin.bin`, { background: true, stdin: true, timeoutMs: 0 })
    const chunk = 'x'.repeat(1 << 20)
    await h.sendStdin(chunk)
    await h.sendStdin(chunk)
    await h.closeStdin()
    await h.wait()
    assert.equal((await sbx.files.getInfo(`${G}/stdin.bin`)).size, 2 << 20)
  })

  await test('uploads: a truncated multipart body is 400 and writes nothing', async () => {
    const r = await fetch(`${SANDBOX_URL}/files?path=${G}/trunc`, {
      method: 'POST',
      headers: { ...H, 'Content-Type': 'multipart/form-data; boundary=XyZ' },
      body: '--XyZ\r\nContent-Disposition: form-data; name="file"; filename="t"\r\n\r\npartial data',
    })
    assert.equal(r.status, 400)
    assert.equal(await sbx.files.exists(`${G}/trunc`), false)
  })

  await test('uploads: a client that hangs up mid-file leaves the old content', async () => {
    await sbx.files.write(`${G}/atomic`, 'old')
    const head = `POST /files?path=${G}/atomic HTTP/1.1\r\nHost: x\r\n` +
      Object.entries(H).map(([k, v]) => `${k}: ${v}\r\n`).join('') +
      'Content-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n'
    await rawSend(ENVD_PORT, Buffer.concat([Buffer.from(head), Buffer.alloc(200000, 65)]))
    await sleep(200)
    assert.equal(await sbx.files.read(`${G}/atomic`), 'old')
  })

  await test('uploads: a non-file form field is skipped; filename escapes are undone', async () => {
    const b = '--B\r\nContent-Disposition: form-data; name="other"\r\n\r\nignored\r\n' +
      `--B\r\nContent-Disposition: form-data; name="file"; filename="${G}/q%22uote"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\nQ\r\n--B--\r\n'
    const r = await fetch(`${SANDBOX_URL}/files`, {
      method: 'POST', headers: { ...H, 'Content-Type': 'multipart/form-data; boundary=B' }, body: b,
    })
    assert.equal(r.status, 200)
    assert.deepEqual(await r.json(), [{ name: 'q"uote', type: 'file', path: `${G}/q"uote` }])
    assert.equal(await sbx.files.read(`${G}/q"uote`), 'Q')
  })

  // ------------------------------------------------------------ one port for both

  await test('envd on the control port (E2B_SANDBOX_URL = E2B_API_URL)', async () => {
    const same = await Sandbox.connect(sbx.sandboxId, { sandboxUrl: API_URL })
    assert.equal((await same.commands.run('echo same-port')).stdout, 'same-port\n')
    await same.files.write(`${G}/same.txt`, 'same')
    assert.equal(await same.files.read(`${G}/same.txt`), 'same')
    assert.equal(await same.isRunning(), true)
  })

  // ------------------------------------------------------------ kilnd's event log

  await test('the event log has the SDK\'s commands and file writes (GET /sandboxes/ID/events)', async () => {
    await sbx.commands.run('echo evt-marker; exit 0')
    await sbx.files.write(`${G}/evt.txt`, 'abc')
    await sbx.files.remove(`${G}/evt.txt`)
    const r = await fetch(`${API_URL}/sandboxes/${sbx.sandboxId}/events?limit=1000`, {
      headers: { 'X-API-Key': API_KEY },
    })
    assert.equal(r.status, 200)
    const { events } = await r.json()
    const started = events.find((e) => e.type === 'process.started' && e.cmd.includes('evt-marker'))
    const done = events.find((e) => e.type === 'process.finished' && e.cmd.includes('evt-marker'))
    assert.ok(started && done, JSON.stringify(events.slice(0, 5)))
    assert.equal(done.exitCode, 0)
    assert.equal(done.key, 'envd')
    assert.ok(done.id > started.id)
    const w = events.find((e) => e.type === 'file.written' && e.path === `${G}/evt.txt`)
    assert.equal(w && w.bytes, 3)
    const rm = events.find((e) => e.type === 'file.removed' && e.path === `${G}/evt.txt`)
    assert.ok(rm && rm.id > w.id)
  })

  // ------------------------------------------------------------ the end

  await test('kill: true, then false; the sandbox is gone', async () => {
    assert.equal(await other.kill(), true)
    assert.equal(await Sandbox.kill(other.sandboxId), false)
    await rejects(Sandbox.getInfo(other.sandboxId), (e) => assert.match(e.name, /NotFound/))
    assert.equal(await other.isRunning(), false)
  })

  await test('a running command ends when its sandbox is killed', async () => {
    const h = await sbx.commands.run('sleep 30', { background: true, timeoutMs: 0 })
    const w = h.wait().then(() => 'resolved', (e) => e)
    assert.equal(await Sandbox.kill(sbx.sandboxId), true)
    const e = await withTimeout(w, 10000, 'wait after kill')
    assert.ok(e instanceof Error, `wait() gave ${e}`)
  })
}

try {
  await main()
} catch (e) {
  failed++
  console.log(`not ok - harness: ${e && e.stack ? e.stack : e}`)
} finally {
  if (failed) showLogs()
  cleanup()
}
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
