// SPDX-License-Identifier: MIT
// A sandbox's page: its state and actions, the terminal, files, metrics,
// the command log (GET /sandboxes/ID/events, shown only where kilnd has
// that route) and the console log; the browser's live view for sandboxes
// of the browser image.
import { getJSON, postJSON, request } from './api.js'
import { $, age, bytes, clear, el, show, showError } from './dom.js'
import * as files from './files.js'
import { draw, kilndSeries, series } from './metrics.js'
import * as cast from './screencast.js'
import * as terminal from './terminal.js'

const LOG_TAIL = 256 << 10
let current = null // the sandbox's JSON
let eventsNext = null
let eventsPaged = false // older pages shown: the 5 s refresh leaves them

export const openId = () => (current ? current.sandboxID : null)
const path = (rest = '') => `/sandboxes/${encodeURIComponent(current.sandboxID)}${rest}`

function stateLabel (e, state) {
  e.textContent = state
  e.className = `state state-${state}`
}

function render () {
  const s = current
  $('sb-id').textContent = s.sandboxID
  $('crumb').textContent = '/ ' + s.sandboxID
  stateLabel($('sb-state'), s.state)
  $('sb-info').textContent = `${s.templateID || 'busybox'} · ${s.cpuCount} CPU · ${s.memoryMB} MiB · ` +
    `up ${age(s.startedAt)} · ends ${s.endAt ? new Date(s.endAt).toLocaleTimeString() : '-'}` +
    (s.state === 'paused' && s.snapshotBytes ? ` · snapshot ${bytes(s.snapshotBytes)}` : '')
  $('sb-reason').textContent = s.reason || ''
  show('sb-reason', !!s.reason)
  const meta = Object.entries(s.metadata && typeof s.metadata === 'object' ? s.metadata : {})
  $('sb-meta').replaceChildren(...meta.map(([k, v]) => el('span', { class: 'chip', title: 'metadata' }, `${k}=${v}`)))
  show('sb-meta', meta.length > 0)
  const alive = s.state === 'running' || s.state === 'paused'
  $('sb-pause').disabled = s.state !== 'running'
  $('sb-resume').disabled = s.state !== 'paused'
  $('sb-fork').disabled = s.state !== 'running'
  $('sb-delete').disabled = false
  $('term-connect').disabled = !alive
  show('browser-panel', /browser/.test(s.templateID || ''))
}

async function reload () {
  current = await getJSON(path())
  render()
}

function connectTerminal () {
  terminal.connect(current.sandboxID, () => { $('term-connect').textContent = 'Reconnect' })
  $('term-connect').textContent = 'Reconnect'
}

export async function logs () {
  try {
    const text = await (await request('GET', path('/logs'))).text()
    $('logs').textContent = text.length > LOG_TAIL ? '[...]\n' + text.slice(-LOG_TAIL) : text || '(empty)'
    $('logs').scrollTop = $('logs').scrollHeight
  } catch (e) { $('logs').textContent = e.message }
}

function eventTime (t) {
  const ms = typeof t === 'number' ? (t > 1e12 ? t : t * 1000) : Date.parse(t)
  return Number.isNaN(ms) ? String(t ?? '') : new Date(ms).toLocaleString()
}

const EVENT_META = new Set(['id', 'time', 'type', 'sandbox', 'key'])

function eventDetails (ev) {
  const parts = []
  for (const [k, v] of Object.entries(ev)) {
    if (EVENT_META.has(k)) continue
    parts.push(`${k}: ${v !== null && typeof v === 'object' ? JSON.stringify(v) : v}`)
  }
  return parts.join('  ')
}

function eventRow (ev) {
  return el('tr', { 'data-event': ev.id }, el('td', {}, eventTime(ev.time)), el('td', {}, String(ev.type ?? '')),
    el('td', {}, String(ev.key ?? '')), el('td', {}, eventDetails(ev)))
}

// The command log (GET /sandboxes/ID/events, newest first, paged by
// ?before=), if this kilnd has that route: "no such endpoint" (an older
// kilnd) hides the panel; a sandbox without events yet is an empty log.
export async function events (more = false) {
  if (!current) return
  let j
  try {
    const q = more && eventsNext ? `?before=${encodeURIComponent(eventsNext)}` : ''
    j = await getJSON(path('/events') + q)
  } catch (e) {
    if (e.status === 404 && !/no such endpoint/.test(e.message)) j = { events: [], next: null }
    else {
      show('events-panel', false)
      return
    }
  }
  if (!j || !Array.isArray(j.events)) {
    show('events-panel', false)
    return
  }
  show('events-panel', true)
  const body = $('events').tBodies[0]
  const rows = j.events.filter((ev) => ev && typeof ev === 'object').map(eventRow)
  if (more) body.append(...rows)
  else {
    clear(body)
    body.append(...rows)
    eventsNext = null
  }
  if (more || !eventsNext) eventsNext = j.next ?? null
  show('events-more', !!eventsNext)
  show('events-empty', body.rows.length === 0)
}

export async function charts () {
  if (!current) return
  const id = current.sandboxID
  const mine = series(id)
  const kept = await kilndSeries(id)
  if (!current || current.sandboxID !== id) return
  const pts = kept || mine
  const lastPt = [...pts].reverse().find((p) => typeof p.cpu === 'number')
  const lastGuest = [...mine].reverse().find((p) => typeof p.guest === 'number')
  $('cpu-now').textContent = lastPt ? `${lastPt.cpu.toFixed(1)} %` : ''
  $('rss-now').textContent = lastPt ? bytes(lastPt.rss) : ''
  $('guest-now').textContent = lastGuest ? bytes(lastGuest.guest) : '-'
  $('metrics-source').textContent = kept ? '(kept by kilnd; guest memory sampled by this page)'
    : '(sampled by this page every 5 s, up to an hour)'
  const span = Number($('metrics-span').value) * 60000
  draw($('cpu-chart'), [{ points: pts, key: 'cpu', color: '#b4461c' }], (v) => `${v < 10 ? v.toFixed(1) : v.toFixed(0)}%`, span)
  draw($('mem-chart'), [{ points: pts, key: 'rss', color: '#0b5cad' }, { points: mine, key: 'guest', color: '#1a7f37' }], bytes, span)
}

// Called every few seconds while the page is open.
export async function tick () {
  if (!current) return
  const before = current.state
  try { await reload() } catch (e) {
    if (e.status === 404) { showError(new Error(`sandbox ${current.sandboxID} is gone`)); location.hash = '#/'; return }
    throw e
  }
  if (before !== current.state && current.state === 'running' && !terminal.connectedTo()) connectTerminal()
  charts()
  if (!eventsPaged) events()
}

export async function open (id, go) {
  current = { sandboxID: id }
  try { await reload() } catch (e) { showError(e); go('#/'); return }
  const running = current.state === 'running'
  if (running) connectTerminal()
  else terminal.idle(current.state === 'paused' ? 'paused: Resume (or Connect, which resumes it) to open a shell' : current.state)
  files.open(id, running)
  logs()
  events()
  charts()
}

export function close () {
  terminal.disconnect()
  cast.stop()
  files.close()
  current = null
  eventsNext = null
  eventsPaged = false
}

async function act (btn, fn) {
  btn.disabled = true
  try { await fn() } catch (e) { showError(e) }
  try { await reload() } catch {}
}

export function init (go) {
  files.init()
  $('term-connect').addEventListener('click', () => current && connectTerminal())
  $('logs-refresh').addEventListener('click', logs)
  $('metrics-span').addEventListener('change', () => charts())
  $('events-refresh').addEventListener('click', () => { eventsPaged = false; events() })
  $('events-more').addEventListener('click', () => { eventsPaged = true; events(true) })
  $('cast-start').addEventListener('click', () => current && cast.start(current.sandboxID))
  $('cast-stop').addEventListener('click', () => cast.stop())
  $('sb-pause').addEventListener('click', (e) => act(e.target, async () => {
    terminal.disconnect()
    cast.stop()
    $('sb-state').textContent = 'pausing...'
    await postJSON(path('/pause'))
    terminal.idle('paused: Resume to open a shell again')
  }))
  $('sb-resume').addEventListener('click', (e) => act(e.target, async () => {
    $('sb-state').textContent = 'resuming...'
    await postJSON(path('/resume'), {})
    connectTerminal()
    files.refresh()
  }))
  $('sb-fork').addEventListener('click', (e) => act(e.target, async () => {
    const r = await postJSON(path('/fork'), { count: 1 })
    const made = Array.isArray(r) ? r.find((x) => x && x.sandbox) : null
    if (!made) throw new Error(`fork: ${r && r[0] && r[0].error ? r[0].error.message : 'no clone was made'}`)
    go(`#/sandbox/${encodeURIComponent(made.sandbox.sandboxID)}`)
  }))
  $('sb-delete').addEventListener('click', async () => {
    if (!current || !confirm(`Delete sandbox ${current.sandboxID}? Its processes, files and snapshot go.`)) return
    try {
      await request('DELETE', path())
      go('#/')
    } catch (e) { showError(e) }
  })
}
