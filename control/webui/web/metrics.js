// SPDX-License-Identifier: MIT
// Resource use. kilnd keeps the last hour of each sandbox's CPU use and
// VMM memory (GET /sandboxes/ID/metrics/history, sampled every
// --metrics-interval seconds), which the charts show; the page samples
// too, every 5 s while it is open: CPU time and resident memory of each
// sandbox's VMM from GET /metrics (CPU % is the change of CPU seconds
// between two samples) for the list, and the guest's own memory in use
// from GET /sandboxes/ID/metrics for the sandbox on screen (an hour of
// those per sandbox in memory, none across reloads). Against a kilnd
// without the history route the charts show the page's own samples.
import { getJSON, parseMetrics, request, sandboxLabel } from './api.js'

const KEEP_MS = 3600 * 1000
const CPU = 'kiln_sandbox_cpu_seconds_total'
const RSS = 'kiln_sandbox_memory_rss_bytes'
const history = new Map() // id -> [{t, cpu, rss, guest}]
const last = new Map() // id -> {t, cpuSeconds}

function push (id, point) {
  let h = history.get(id)
  if (!h) history.set(id, (h = []))
  h.push(point)
  while (h.length && h[0].t < point.t - KEEP_MS) h.shift()
}

const FALLBACK_MAX = 50 // sandboxes asked one by one when /metrics is not ours

// A tenant's key may not read GET /metrics (every tenant's sandboxes are
// in it): the newest sample of each running sandbox's history instead.
async function fromHistories (ids) {
  const seen = {}
  await Promise.all(ids.slice(0, FALLBACK_MAX).map(async (id) => {
    const pts = await kilndSeries(id)
    const p = pts && pts[pts.length - 1]
    if (p) seen[id] = { cpu: p.cpu, rss: p.rss }
  }))
  return seen
}

// One sample of every sandbox, and the guest memory of `focus` (an id, or
// null); `running`: the ids the list has running. Answers {id: {cpu, rss}}
// for the list.
export async function sample (focus, running = []) {
  let text = null
  try {
    text = await (await request('GET', '/metrics')).text()
  } catch (e) {
    if (e.status !== 403) throw e
  }
  if (text === null) {
    const seen = await fromHistories(focus && !running.includes(focus) ? [focus, ...running] : running)
    if (focus && seen[focus]) await sampleGuest(focus, seen[focus], Date.now())
    return seen
  }
  const m = parseMetrics(text, [CPU, RSS])
  const now = Date.now()
  const seen = {}
  for (const [labels, secs] of Object.entries(m[CPU])) {
    const id = /sandbox="([^"]+)"/.exec(labels)?.[1]
    if (!id) continue
    const prev = last.get(id)
    const cpu = prev && now > prev.t ? Math.max(0, (secs - prev.cpuSeconds) / ((now - prev.t) / 1000) * 100) : null
    last.set(id, { t: now, cpuSeconds: secs })
    seen[id] = { cpu, rss: m[RSS][sandboxLabel(id)] }
  }
  for (const [id, v] of Object.entries(seen)) {
    if (v.cpu !== null && id !== focus) push(id, { t: now, cpu: v.cpu, rss: v.rss, guest: null })
  }
  if (focus && seen[focus]) await sampleGuest(focus, seen[focus], now)
  for (const id of last.keys()) if (!seen[id]) last.delete(id) // paused or gone
  return seen
}

// The guest's own memory in use (GET /sandboxes/ID/metrics), kept with
// the VMM's figures of the same moment.
async function sampleGuest (id, v, now) {
  let guest = null
  try {
    const s = await getJSON(`/sandboxes/${encodeURIComponent(id)}/metrics`)
    if (Array.isArray(s) && s[0] && typeof s[0].memUsed === 'number') guest = s[0].memUsed
  } catch {}
  push(id, { t: now, cpu: v.cpu ?? null, rss: v.rss, guest })
}

export function series (id) {
  return history.get(id) || []
}

// kilnd's history of id as chart points {t, cpu, rss}, or null if this
// kilnd keeps none.
export async function kilndSeries (id) {
  try {
    const j = await getJSON(`/sandboxes/${encodeURIComponent(id)}/metrics/history`)
    if (!j || !Array.isArray(j.samples)) return null
    return j.samples.filter((s) => s && typeof s.timestampMs === 'number')
      .map((s) => ({ t: s.timestampMs, cpu: Number(s.cpuUsedPct), rss: Number(s.rssBytes) }))
  } catch { return null }
}

// A line chart of the last hour: lines [{points, key, color}] (the value
// of each point at key) over the last spanMs, the axis labelled by fmt.
export function draw (canvas, lines, fmt, spanMs = KEEP_MS) {
  const dpr = window.devicePixelRatio || 1
  const w = canvas.clientWidth || canvas.width
  const h = canvas.clientHeight || canvas.height
  canvas.width = w * dpr
  canvas.height = h * dpr
  const g = canvas.getContext('2d')
  g.scale(dpr, dpr)
  g.clearRect(0, 0, w, h)
  if (!lines.some((l) => l.points.some((p) => typeof p[l.key] === 'number'))) {
    g.fillStyle = '#667085'
    g.font = '12px system-ui, sans-serif'
    g.fillText('no samples yet (one every 5 s while it runs)', 12, h / 2)
    return
  }
  const now = Date.now()
  const x = (t) => 40 + (w - 48) * (1 - (now - t) / spanMs)
  lines = lines.map((l) => ({ ...l, points: l.points.filter((p) => p.t >= now - spanMs) }))
  let max = 0
  for (const l of lines) for (const p of l.points) if (typeof p[l.key] === 'number') max = Math.max(max, p[l.key])
  max = max > 0 ? max * 1.15 : 1
  const y = (v) => h - 14 - (h - 24) * (v / max)
  g.strokeStyle = '#e4e7ec'
  g.fillStyle = '#667085'
  g.font = '10px system-ui, sans-serif'
  for (const f of [0, 0.5, 1]) {
    g.beginPath(); g.moveTo(40, y(max * f)); g.lineTo(w - 8, y(max * f)); g.stroke()
    g.fillText(fmt(max * f), 2, y(max * f) + 3)
  }
  g.fillText(`-${Math.round(spanMs / 60000)} min`, 40, h - 2)
  g.fillText('now', w - 26, h - 2)
  for (const l of lines) {
    const points = l.points
    g.strokeStyle = l.color
    g.lineWidth = 1.5
    g.beginPath()
    let started = false
    for (const p of points) {
      if (typeof p[l.key] !== 'number') { started = false; continue }
      if (started) g.lineTo(x(p.t), y(p[l.key]))
      else g.moveTo(x(p.t), y(p[l.key]))
      started = true
    }
    g.stroke()
    const lastPoint = [...points].reverse().find((p) => typeof p[l.key] === 'number')
    if (lastPoint) {
      g.fillStyle = l.color
      g.beginPath(); g.arc(x(lastPoint.t), y(lastPoint[l.key]), 2.5, 0, 2 * Math.PI); g.fill()
    }
  }
}
