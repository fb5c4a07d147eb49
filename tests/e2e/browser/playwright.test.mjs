// SPDX-License-Identifier: MIT
// Playwright's chromium.connectOverCDP() against a sandbox of the browser
// image through kilnd (GET /sandboxes/ID/cdp and .../cdp/json/version), on
// real VMs. A small site is written into the sandbox and opened as file://
// pages: fill and submit a form, click a button that changes the DOM,
// evaluate JS, wait for a selector, a screenshot of the requested size that
// is not blank, a PDF, two tabs at once, a second client that finds the
// first one's page, pause/resume with the page and its JS state kept, a
// clone of a template that holds a started browser, and Puppeteer's
// connect() for one smoke case. On real VMs also: pages from a server on
// the host's loopback, by name (host.kiln.internal, resolved by kilnd's DNS)
// through egress under the sandbox's policy, with a fetch() of its JSON,
// and a port the policy does not name refused.
// Prints "ok"/"not ok" per case, exits non-zero on a failure. Run by run.sh.
//
// KILN_BROWSER_MODE=host instead runs the same cases with the fake VMM
// (whose guest is this host) and the host's chromium-headless-shell as the
// sandbox's browser, started by a launcher script as the image's
// kiln-browser would: kilnd's CDP relay and launcher against a real
// Chromium and Playwright, while there is no browser image (pause/resume
// is not run then: the fake VMM does not keep processes across a pause).
import { spawn } from 'node:child_process'
import http from 'node:http'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import assert from 'node:assert/strict'
import { chromium } from 'playwright-core'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
const from = (v, d) => path.resolve(ROOT, v || d)
const KILND = from(process.env.KILN_E2E_KILND, 'build/bin/kilnd')
const HOST = process.env.KILN_BROWSER_MODE === 'host'
const VMM = HOST ? from('', 'build/tests/e2e/fake-vmm') : from(process.env.KILN_E2E_VMM, 'build/bin/kiln-vmm')
const KERNEL = from(process.env.KILN_E2E_KERNEL, 'build/guest/kiln-kernel')
const INITRD = from(process.env.KILN_E2E_INITRD, 'build/initramfs/agent.cpio')
let IMAGES = from(process.env.KILN_E2E_IMAGES, 'build/images')
const IMAGE_INITRD = path.join(path.dirname(INITRD), 'agent-image.cpio')
const PORT = 20000 + Math.floor(Math.random() * 12000)
const KEY = 'e2b_' + randomBytes(20).toString('hex')
const API = `http://127.0.0.1:${PORT}`
const H = { 'X-API-Key': KEY, 'Content-Type': 'application/json' }
const T = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-browser.'))
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const SITE_DIR = HOST ? `${T}/site` : '/tmp/site' // the guest's path (the host's, with the fake VMM)
const CDP_PORT = PORT + 1
const extra = []
if (HOST) {
  IMAGES = `${T}/images`
  fs.mkdirSync(IMAGES)
  fs.writeFileSync(`${IMAGES}/base.erofs`, 'a stand-in\n')
  fs.writeFileSync(`${T}/kiln-browser`, `#!/bin/sh\necho $$ >${T}/browser.pid\n` +
    `exec chromium-headless-shell --no-sandbox --remote-debugging-port="$KILN_BROWSER_PORT" ` +
    `--user-data-dir=${T}/profile about:blank\n`, { mode: 0o755 })
  extra.push('--browser-launcher', `${T}/kiln-browser`, '--browser-port', String(CDP_PORT))
  // its "guest" is its own processes on the host: no jail (whose pid
  // namespace would take them along when it ends)
  extra.push('--no-jail')
}

const servers = []
let passed = 0
let failed = 0
async function test(name, fn) {
  try {
    await fn()
    passed++
    console.log(`ok - ${name}`)
  } catch (e) {
    failed++
    console.log(`not ok - ${name}`)
    for (const l of String(e && e.stack ? e.stack : e).split('\n').slice(0, 8)) console.log(`#   ${l}`)
  }
}

async function api(method, p, body) {
  const r = await fetch(`${API}${p}`, { method, headers: H, body: body && JSON.stringify(body) })
  const text = await r.text()
  return { status: r.status, body: text ? JSON.parse(text) : null }
}

async function exec(id, cmd, user) {
  const r = await fetch(`${API}/sandboxes/${id}/exec`, { method: 'POST', headers: H,
    body: JSON.stringify({ cmd: ['sh', '-c', cmd], ...(user ? { user } : {}) }) })
  return r.text()
}

// the stdout of an exec (its ndjson events), as text
async function execOut(id, cmd, user) {
  return (await exec(id, cmd, user)).split('\n').filter(Boolean).map((l) => JSON.parse(l))
    .filter((e) => e.type === 'stdout').map((e) => Buffer.from(e.data, 'base64').toString()).join('')
}

async function put(id, file, text) {
  const r = await fetch(`${API}/sandboxes/${id}/files?path=${encodeURIComponent(file)}`,
    { method: 'PUT', headers: { 'X-API-Key': KEY }, body: text })
  assert.equal(r.status, 200)
}

const SITE = `<!doctype html><html><head><meta charset="utf-8"><title>kiln site</title></head>
<body><h1>Hello from the sandbox</h1>
<form id="f" onsubmit="event.preventDefault(); document.getElementById('out').textContent = 'sent ' + this.name.value">
<input name="name"><button type="submit">send</button></form>
<p id="out"></p><button id="b" onclick="document.body.insertAdjacentHTML('beforeend', '<div id=added>clicked</div>')">click</button>
<canvas id="c" width="200" height="100"></canvas>
<script>const g = document.getElementById('c').getContext('2d'); g.fillStyle = '#c33'; g.fillRect(10, 10, 180, 80);
window.counter = 41</script></body></html>`

async function main() {
  const log = fs.openSync(`${T}/kilnd.log`, 'a')
  const kilnd = spawn(KILND, ['--data-dir', `${T}/data`, '--vmm', VMM, '--kernel', KERNEL,
    '--initrd', INITRD, '--images', IMAGES, '--image-initrd', IMAGE_INITRD,
    '--listen-tcp', `127.0.0.1:${PORT}`, '--api-key', KEY, '--boot-timeout', '30',
    '--dns-server', '127.0.0.1:53', ...extra], // the sandboxes' lookups stay on this machine
  { stdio: ['ignore', log, log] })
  let id
  try {
    for (let i = 0; i < 200 && !(await fetch(`${API}/health`).then((r) => r.ok, () => false)); i++)
      await sleep(50)
    // the host's web server the guest's Chromium may reach (real VMs)
    const site = http.createServer((req, res) => {
      if (req.url === '/data.json') {
        res.writeHead(200, { 'Content-Type': 'application/json' })
        res.end(JSON.stringify({ from: 'the host', n: 7 }))
        return
      }
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
      res.end('<!doctype html><title>host page</title><p id="p">wait</p><script>' +
        "fetch('/data.json').then((r) => r.json()).then((j) => { document.getElementById('p').textContent = j.from + ' ' + j.n })" +
        '</script>')
    })
    await new Promise((r) => site.listen(0, '127.0.0.1', r))
    servers.push(site)
    const SITE_PORT = site.address().port
    const made = await api('POST', '/sandboxes', {
      templateID: HOST ? 'base' : 'browser', timeout: 900,
      ...(HOST ? {} : { network: { allowOut: [`host.kiln.internal:${SITE_PORT}`] } }),
    })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    id = made.body.sandboxID
    await exec(id, `mkdir -p ${SITE_DIR}`)
    await put(id, `${SITE_DIR}/index.html`, SITE)
    const URL = `file://${SITE_DIR}/index.html`
    const endpoint = `${API}/sandboxes/${id}/cdp`
    let browser, page

    await test('connectOverCDP through kilnd (a cold start of the browser)', async () => {
      const t0 = Date.now()
      browser = await chromium.connectOverCDP(endpoint, { headers: { 'X-API-Key': KEY }, timeout: 60000 })
      console.log(`#   connected in ${Date.now() - t0} ms, ${browser.version()}`)
      const ctx = browser.contexts()[0] || (await browser.newContext())
      page = await ctx.newPage()
      await page.goto(URL)
      assert.equal(await page.title(), 'kiln site')
    })
    if (HOST) console.log('# the browser\'s user: NOT RUN with the fake VMM (the host\'s Chromium runs as the test)')
    else await test('Chromium runs as the unprivileged user (uid 1000), its profile is the user\'s', async () => {
      const uids = await execOut(id, 'for p in /proc/[0-9]*; do case "$(cat $p/comm 2>/dev/null)" in ' +
        'chrom*|headless*) sed -n "s/^Uid:\\t\\([0-9]*\\).*/\\1/p" $p/status;; esac; done | sort | uniq -c')
      assert.match(uids, /^\s*\d+ 1000\n$/, `the browser's processes by uid: ${JSON.stringify(uids)}`)
      assert.equal(await execOut(id, 'stat -c %u:%a /tmp/kiln-browser'), '1000:700\n')
      // and it can use /dev/shm, as the user
      assert.equal(await execOut(id, 'touch /dev/shm/u && stat -c %u /dev/shm/u && rm /dev/shm/u', 'user'),
        '1000\n')
    })
    await test('fill and submit a form, click, wait for a selector, evaluate', async () => {
      await page.fill('input[name=name]', 'kiln')
      await page.click('button[type=submit]')
      assert.equal(await page.textContent('#out'), 'sent kiln')
      await page.click('#b')
      await page.waitForSelector('#added')
      assert.equal(await page.evaluate(() => ++window.counter), 42)
    })
    await test('a screenshot of the requested size that is not blank, and a PDF', async () => {
      await page.setViewportSize({ width: 640, height: 480 })
      const png = await page.screenshot()
      assert.equal(png.readUInt32BE(16), 640)
      assert.equal(png.readUInt32BE(20), 480)
      const canvas = await page.evaluate(() => {
        const d = document.getElementById('c').getContext('2d').getImageData(100, 50, 1, 1).data
        return [d[0], d[1], d[2]]
      })
      assert.deepEqual(canvas, [0xcc, 0x33, 0x33])
      assert.ok(png.length > 2000, `a ${png.length}-byte PNG looks blank`)
      const pdf = await page.pdf()
      assert.equal(pdf.subarray(0, 5).toString(), '%PDF-')
    })
    await test('two tabs at once', async () => {
      const other = await page.context().newPage()
      await Promise.all([other.goto(URL), page.reload()])
      assert.equal(await other.title(), 'kiln site')
      await other.close()
    })
    await test('a second client finds the page the first left', async () => {
      await page.evaluate(() => { window.counter = 100 })
      await browser.close() // disconnects; the browser stays
      browser = await chromium.connectOverCDP(endpoint, { headers: { 'X-API-Key': KEY } })
      const pages = browser.contexts().flatMap((c) => c.pages())
      page = pages.find((p) => p.url() === URL)
      assert.ok(page, `pages: ${pages.map((p) => p.url())}`)
      assert.equal(await page.evaluate(() => window.counter), 100)
    })
    if (HOST) console.log('# pause and resume: NOT RUN with the fake VMM (it keeps no processes)')
    else await test('pause and resume keep the live page and its JS state', async () => {
      await browser.close()
      assert.equal((await api('POST', `/sandboxes/${id}/pause`)).status, 204)
      browser = await chromium.connectOverCDP(endpoint, { headers: { 'X-API-Key': KEY } })
      const pages = browser.contexts().flatMap((c) => c.pages())
      page = pages.find((p) => p.url() === URL)
      assert.ok(page, `pages after resume: ${pages.map((p) => p.url())}`)
      assert.equal(await page.evaluate(() => window.counter), 100)
    })
    if (HOST) console.log('# pages from the host through egress: NOT RUN with the fake VMM (its guest is the host)')
    else await test('a page from the host by name through egress and kilnd\'s DNS, with a fetch()', async () => {
      const p = await page.context().newPage()
      const t0 = Date.now()
      await p.goto(`http://host.kiln.internal:${SITE_PORT}/`)
      await p.waitForFunction(() => document.getElementById('p').textContent !== 'wait', null, { timeout: 20000 })
      assert.equal(await p.textContent('#p'), 'the host 7')
      console.log(`#   loaded in ${Date.now() - t0} ms`)
      // a port the policy does not name: refused in the guest (EACCES)
      await assert.rejects(p.goto(`http://host.kiln.internal:${SITE_PORT + 1}/`, { timeout: 20000 }),
        /net::ERR_/)
      await p.close()
    })
    if (browser) await browser.close()
    browser = null
    if (HOST) console.log('# a browser template and Puppeteer: NOT RUN with the fake VMM')
    else {
      await test('a clone of a template whose warm-up started Chromium answers CDP at once', async () => {
        const warm = '/usr/local/bin/kiln-browser >/dev/null 2>&1 & for i in $(seq 100); do ' +
          '[ -e /tmp/kiln-browser/DevToolsActivePort ] && sleep 2 && exit 0; sleep 0.1; done; exit 1'
        const t = await api('POST', '/templates', { name: 'pwbrowser', image: 'browser', warmup: ['sh', '-c', warm] })
        assert.equal(t.status, 201, JSON.stringify(t.body))
        const t0 = Date.now()
        const c = await api('POST', '/sandboxes', { templateID: 'pwbrowser', timeout: 300 })
        assert.equal(c.status, 201, JSON.stringify(c.body))
        const cid = c.body.sandboxID
        try {
          const b = await chromium.connectOverCDP(`${API}/sandboxes/${cid}/cdp`, { headers: { 'X-API-Key': KEY } })
          console.log(`#   create to connected in ${Date.now() - t0} ms`)
          await exec(cid, `mkdir -p ${SITE_DIR}`)
          await put(cid, `${SITE_DIR}/index.html`, SITE)
          const p = await (b.contexts()[0] || (await b.newContext())).newPage()
          await p.goto(URL)
          assert.equal(await p.evaluate(() => window.counter), 41)
          await b.close()
        } finally {
          await api('DELETE', `/sandboxes/${cid}`)
          await api('DELETE', '/templates/pwbrowser')
        }
      })
      await test('Puppeteer connect() through kilnd (/cdp/json/version, then the WebSocket)', async () => {
        const puppeteer = (await import('puppeteer-core')).default
        const v = await fetch(`${API}/sandboxes/${id}/cdp/json/version`, { headers: H }).then((r) => r.json())
        assert.match(v.webSocketDebuggerUrl, new RegExp(`/sandboxes/${id}/cdp`))
        const b = await puppeteer.connect({ browserWSEndpoint: v.webSocketDebuggerUrl, headers: { 'X-API-Key': KEY } })
        const p = await b.newPage()
        await p.goto(URL)
        assert.equal(await p.title(), 'kiln site')
        assert.equal(await p.$eval('h1', (e) => e.textContent), 'Hello from the sandbox')
        await p.close()
        await b.disconnect()
      })
    }
  } catch (e) {
    failed++
    console.log(`not ok - setup: ${e && e.stack ? e.stack : e}`)
  } finally {
    if (id) await api('DELETE', `/sandboxes/${id}`).catch(() => {})
    kilnd.kill('SIGTERM')
    for (const sv of servers) sv.close()
    if (HOST && fs.existsSync(`${T}/browser.pid`)) // the host's Chromium, started for the "sandbox"
      try { process.kill(-parseInt(fs.readFileSync(`${T}/browser.pid`, 'utf8')), 'SIGKILL') } catch {} // its process group: the agent's setsid
    if (failed) console.log(fs.readFileSync(`${T}/kilnd.log`, 'utf8').split('\n').slice(-40).map((l) => `#   ${l}`).join('\n'))
    fs.rmSync(T, { recursive: true, force: true })
  }
  console.log(`\n${passed} passed, ${failed} failed`)
  process.exit(failed ? 1 : 0)
}

await main()
