// What node programs and npm lean on, one line each in a fixed order (no
// numbers that differ between runs): the guest's output must be exactly
// the host's, in a chroot of the same image root (tests/integration/cases/image.sh).
const assert = require('assert')
const cp = require('child_process')
const crypto = require('crypto')
const fs = require('fs')
const http = require('http')
const path = require('path')
const { Worker } = require('worker_threads')
const zlib = require('zlib')

const dir = fs.mkdtempSync('/tmp/node-probe-')
const out = (s) => process.stdout.write(s + '\n')

async function main() {
  // fs: sync, callback and promise forms, rename, stat, readdir, symlinks
  fs.writeFileSync(path.join(dir, 'a.txt'), 'hello\n')
  await fs.promises.appendFile(path.join(dir, 'a.txt'), 'world\n')
  fs.renameSync(path.join(dir, 'a.txt'), path.join(dir, 'b.txt'))
  fs.symlinkSync('b.txt', path.join(dir, 'l'))
  const st = fs.statSync(path.join(dir, 'l'))
  out(`fs ${fs.readdirSync(dir).sort().join(',')} ${st.size} ${fs.readlinkSync(path.join(dir, 'l'))} ` +
    JSON.stringify(await fs.promises.readFile(path.join(dir, 'l'), 'utf8')))
  // fs.watch-free stream copy through zlib
  await new Promise((res, rej) => fs.createReadStream(path.join(dir, 'b.txt')).pipe(zlib.createGzip())
    .pipe(fs.createWriteStream(path.join(dir, 'b.gz'))).on('finish', res).on('error', rej))
  out(`zlib ${zlib.gunzipSync(fs.readFileSync(path.join(dir, 'b.gz'))).toString() === 'hello\nworld\n'}`)

  // child_process: execSync, spawn with pipes and an exit code, a signal
  out(`execSync ${cp.execSync('echo $((6*7))', { shell: '/bin/sh' }).toString().trim()}`)
  const spawned = await new Promise((res) => {
    const c = cp.spawn('/bin/sh', ['-c', 'read x; echo "got $x"; exit 3'])
    let o = ''
    c.stdout.on('data', (d) => (o += d))
    c.on('close', (code) => res(`${o.trim()} ${code}`))
    c.stdin.end('input\n')
  })
  out(`spawn ${spawned}`)
  const killed = await new Promise((res) => {
    const c = cp.spawn('/bin/sleep', ['30'])
    c.on('exit', (code, sig) => res(`${code} ${sig}`))
    setTimeout(() => c.kill('SIGTERM'), 50)
  })
  out(`kill ${killed}`)

  // http: a server and a client on loopback, keep-alive and a POST body
  const srv = http.createServer((q, r) => {
    let b = ''
    q.on('data', (d) => (b += d))
    q.on('end', () => r.end(`${q.method} ${q.url} ${b.length}`))
  })
  await new Promise((res) => srv.listen(0, '127.0.0.1', res))
  const agent = new http.Agent({ keepAlive: true })
  const req = (method, body) => new Promise((res, rej) => {
    const q = http.request({ host: '127.0.0.1', port: srv.address().port, path: '/p', method, agent }, (r) => {
      let b = ''
      r.on('data', (d) => (b += d))
      r.on('end', () => res(`${r.statusCode} ${b}`))
    })
    q.on('error', rej)
    q.end(body)
  })
  out(`http ${await req('GET')} | ${await req('POST', 'x'.repeat(100000))}`)
  agent.destroy()
  srv.close()

  // worker_threads: a worker hashing, messages both ways, shared memory
  const shared = new Int32Array(new SharedArrayBuffer(4))
  const w = new Worker(`
    const { parentPort, workerData } = require('worker_threads')
    const crypto = require('crypto')
    parentPort.on('message', (m) => {
      Atomics.add(workerData, 0, 7)
      parentPort.postMessage(crypto.createHash('sha256').update(m).digest('hex').slice(0, 16))
    })`, { eval: true, workerData: shared })
  const hash = await new Promise((res) => { w.once('message', res); w.postMessage('kiln') })
  await w.terminate()
  assert.equal(hash, crypto.createHash('sha256').update('kiln').digest('hex').slice(0, 16))
  out(`worker ${hash} ${Atomics.load(shared, 0)}`)

  // timers and the event loop's ordering
  const order = []
  await new Promise((res) => {
    setTimeout(() => { order.push('timeout'); res() }, 20)
    setImmediate(() => order.push('immediate'))
    process.nextTick(() => order.push('tick'))
    Promise.resolve().then(() => order.push('promise'))
  })
  out(`loop ${order.join(',')}`)
  fs.rmSync(dir, { recursive: true })
  out(`done ${fs.existsSync(dir)}`)
}
main().catch((e) => { console.error(e); process.exit(1) })
