// E2B SDK round trips over TCP against kilnd (make bench; tools/bench/
// e2b_sdk_bench.sh starts kilnd and sets E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY). Medians of KILN_SDK_BENCH_N (default 30, at least 20) after
// 3 warm-ups: commands.run('true'), runCode('1+1'), files.write of 1 KiB,
// Sandbox.create(), and kilnd's own exec of `true` on a kept-alive TCP
// connection for comparison. The SDK is tests/e2e/e2b's (npm ci there).
//
//   node tools/bench/e2b_sdk_bench.mjs SDK_DIR
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const sdkDir = process.argv[2]
const N = Math.max(20, parseInt(process.env.KILN_SDK_BENCH_N || '30', 10))
const from = (p) => import(pathToFileURL(path.join(sdkDir, 'node_modules', p, 'dist/index.mjs')).href)
const { Sandbox } = await from('e2b')
const { Sandbox: CiSandbox } = await from('@e2b/code-interpreter')
const envs = process.env.KILN_SDK_BENCH_HOME ? { HOME: process.env.KILN_SDK_BENCH_HOME } : {}

async function timed(name, f) {
  const t = []
  for (let i = 0; i < 3; i++) await f()
  for (let i = 0; i < N; i++) {
    const t0 = performance.now()
    await f()
    t.push(performance.now() - t0)
  }
  t.sort((a, b) => a - b)
  const p90 = t[Math.min(t.length - 1, Math.round(t.length * 0.9))]
  console.log(`${name.padEnd(34)} median ${t[t.length >> 1].toFixed(2)} ms, p90 ${p90.toFixed(2)} ms, ` +
    `min ${t[0].toFixed(2)} ms (n=${N})`)
}

const sbx = await Sandbox.create({ envs })
const ci = await CiSandbox.create({ envs })
try {
  const exec = () => fetch(`${process.env.E2B_API_URL}/sandboxes/${sbx.sandboxId}/exec`, {
    method: 'POST',
    headers: { 'X-API-Key': process.env.E2B_API_KEY, 'Content-Type': 'application/json' },
    body: '{"cmd":["true"]}',
  }).then(async (r) => {
    if (!(await r.text()).includes('"exitCode":0')) throw new Error('exec failed')
  })
  await timed("kilnd exec of true (TCP)", exec)
  // what the SDK runs: /bin/bash -l -c true as the default user, so the
  // gap to the next line is the SDK's path alone, not bash's start-up
  const who = (await sbx.commands.run('id -un')).stdout.trim()
  const execBash = () => fetch(`${process.env.E2B_API_URL}/sandboxes/${sbx.sandboxId}/exec`, {
    method: 'POST',
    headers: { 'X-API-Key': process.env.E2B_API_KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({ cmd: ['/bin/bash', '-l', '-c', 'true'], user: who }),
  }).then(async (r) => {
    if (!(await r.text()).includes('"exitCode":0')) throw new Error('exec of bash failed')
  })
  await timed('kilnd exec of bash -l -c true', execBash)
  await timed("SDK commands.run('true')", () => sbx.commands.run('true'))
  await timed("SDK runCode('1+1')", async () => {
    const ex = await ci.runCode('1+1')
    if (ex.text !== '2') throw new Error(`runCode: ${JSON.stringify(ex)}`)
  })
  const kib = 'x'.repeat(1024)
  await timed('SDK files.write 1 KiB', () => sbx.files.write(`/tmp/kiln-sdk-bench-${process.pid}`, kib))
  await timed('SDK Sandbox.create()', async () => {
    const s = await Sandbox.create({ envs })
    await s.kill()
  })
} finally {
  await sbx.files.remove(`/tmp/kiln-sdk-bench-${process.pid}`).catch(() => {})
  await sbx.kill()
  await ci.kill()
}
