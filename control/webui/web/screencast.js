// SPDX-License-Identifier: MIT
// A live view of the sandbox's browser: CDP over GET /sandboxes/ID/cdp
// (the browser target; starting the browser if it is not running), attached
// to its first page (a new one if it has none), Page.startScreencast,
// each frame shown as an image and acknowledged (Chromium sends the next
// only then: a slow page never queues frames).
import { socket } from './api.js'
import { $, show } from './dom.js'

let ws = null
let nextId = 1
const waiting = new Map()

function status (t) { $('cast-status').textContent = t }

function call (method, params = {}, sessionId) {
  return new Promise((resolve, reject) => {
    const id = nextId++
    waiting.set(id, { resolve, reject })
    ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }))
  })
}

export function stop () {
  if (ws) ws.close()
  ws = null
  for (const w of waiting.values()) w.reject(new Error('closed'))
  waiting.clear()
  show('cast-stop', false)
  show('cast-nav', false)
  show('cast-start', true)
}

export function start (id) {
  stop()
  status('starting the browser (a first start takes a few seconds)...')
  show('cast-start', false)
  show('cast-stop', true)
  const s = socket(`/sandboxes/${encodeURIComponent(id)}/cdp`)
  ws = s
  let session = null
  s.onmessage = (ev) => {
    let m
    try { m = JSON.parse(ev.data) } catch { return }
    if (m.id && waiting.has(m.id)) {
      const w = waiting.get(m.id)
      waiting.delete(m.id)
      if (m.error) w.reject(new Error(m.error.message || 'CDP error'))
      else w.resolve(m.result || {})
    } else if (m.method === 'Page.screencastFrame' && m.params && typeof m.params.data === 'string') {
      const img = $('cast')
      img.src = 'data:image/jpeg;base64,' + m.params.data
      img.hidden = false
      call('Page.screencastFrameAck', { sessionId: m.params.sessionId }, session).catch(() => {})
    }
  }
  s.onopen = async () => {
    try {
      const { targetInfos = [] } = await call('Target.getTargets')
      let page = targetInfos.find((t) => t.type === 'page')
      const targetId = page ? page.targetId : (await call('Target.createTarget', { url: 'about:blank' })).targetId
      session = (await call('Target.attachToTarget', { targetId, flatten: true })).sessionId
      await call('Page.enable', {}, session)
      await call('Page.startScreencast', { format: 'jpeg', quality: 70, maxWidth: 1024, maxHeight: 768, everyNthFrame: 1 }, session)
      status('live')
      show('cast-nav', true)
      $('cast-nav').onsubmit = (e) => {
        e.preventDefault()
        const url = $('cast-url').value
        if (url) call('Page.navigate', { url }, session).catch((err) => status(err.message))
      }
    } catch (e) {
      status(`CDP: ${e.message}`)
    }
  }
  s.onclose = (ev) => {
    if (ws !== s) return
    status(ev.code === 1006 ? 'the browser could not be reached (does the image have one? see the logs)'
      : `closed (${ev.code}${ev.reason ? ': ' + ev.reason : ''})`)
    stop()
  }
}
