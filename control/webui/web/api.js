// SPDX-License-Identifier: MIT
// kilnd's API from the page: the key (typed once, kept in this tab's
// sessionStorage), requests that always carry it as a header (never a
// cookie: a state-changing request another site's page makes has no key),
// and WebSockets, which take it as a subprotocol (control/api/ws_auth.c).
const KEY = 'kiln.apiKey'

export class ApiError extends Error {
  constructor (status, message) {
    super(message)
    this.status = status
  }
}

export const key = {
  get: () => sessionStorage.getItem(KEY),
  set: (k) => sessionStorage.setItem(KEY, k),
  forget: () => sessionStorage.removeItem(KEY)
}

let onUnauthorized = () => {}
export function whenUnauthorized (fn) { onUnauthorized = fn }

// fetch with the key; errors become ApiError with kilnd's message.
export async function request (method, path, { body, json, headers = {}, signal } = {}) {
  const h = { 'X-API-Key': key.get() || '', ...headers }
  if (json !== undefined) {
    h['Content-Type'] = 'application/json'
    body = JSON.stringify(json)
  }
  let r
  try {
    r = await fetch(path, { method, headers: h, body, signal, credentials: 'omit', cache: 'no-store' })
  } catch (e) {
    if (e.name === 'AbortError') throw e
    throw new ApiError(0, `kilnd did not answer ${method} ${path} (${e.message}): is it running?`)
  }
  if (r.status === 401) {
    onUnauthorized()
    throw new ApiError(401, 'kilnd refused the API key: enter the right one')
  }
  if (!r.ok) {
    let msg = `${method} ${path}: ${r.status} ${r.statusText}`
    try {
      const j = await r.json()
      if (j && typeof j.message === 'string') msg = `${method} ${path}: ${j.message}`
    } catch {}
    throw new ApiError(r.status, msg)
  }
  return r
}

export async function getJSON (path, opts) {
  const r = await request('GET', path, opts)
  return r.json()
}

export async function postJSON (path, json) {
  const r = await request('POST', path, { json })
  const text = await r.text()
  return text ? JSON.parse(text) : null
}

function hex (s) {
  return Array.from(new TextEncoder().encode(s), (b) => b.toString(16).padStart(2, '0')).join('')
}

// A WebSocket to path on this origin, authenticated by subprotocol.
export function socket (path) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:'
  const ws = new WebSocket(`${scheme}//${location.host}${path}`, ['kiln', 'kiln-key.' + hex(key.get() || '')])
  ws.binaryType = 'arraybuffer'
  return ws
}

// Prometheus text (GET /metrics): {name: {labelsText: value}} for the
// families asked for.
export function parseMetrics (text, names) {
  const out = {}
  for (const n of names) out[n] = {}
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line)
    if (m && out[m[1]]) out[m[1]][m[2] || ''] = Number(m[3])
  }
  return out
}

export function sandboxLabel (id) {
  return `{sandbox="${id}"}`
}
