// SPDX-License-Identifier: MIT
// The sandbox's terminal: xterm.js on GET /sandboxes/ID/pty (a WebSocket:
// binary frames are terminal bytes both ways, text frames JSON control
// messages, control/api/pty.c). The Terminal object is window.kilnTerm
// for the console's own test, which reads the screen from its buffer.
import { Terminal } from './xterm.mjs'
import { FitAddon } from './addon-fit.mjs'
import { socket } from './api.js'
import { $ } from './dom.js'

let term, fit, ws, sandboxId, onEnd

function status (text) { $('term-status').textContent = text }

function ensureTerminal () {
  if (term) return
  term = new Terminal({ fontSize: 13, scrollback: 5000, cursorBlink: true, convertEol: false })
  fit = new FitAddon()
  term.loadAddon(fit)
  term.open($('terminal'))
  window.kilnTerm = term
  const enc = new TextEncoder()
  term.onData((d) => { if (ws && ws.readyState === 1) ws.send(enc.encode(d)) })
  term.onBinary((d) => {
    if (ws && ws.readyState === 1) ws.send(Uint8Array.from(d, (c) => c.charCodeAt(0) & 255))
  })
  term.onResize(({ cols, rows }) => {
    if (ws && ws.readyState === 1) ws.send(JSON.stringify({ resize: { cols, rows } }))
  })
  new ResizeObserver(() => { try { fit.fit() } catch {} }).observe($('terminal'))
}

// Open a shell in sandbox id (which resumes a paused one: the caller asks
// only for running ones). ended(reason) is called when it closes.
export function connect (id, ended) {
  disconnect()
  ensureTerminal()
  sandboxId = id
  onEnd = ended
  term.reset()
  try { fit.fit() } catch {}
  status('connecting...')
  const q = `cols=${term.cols}&rows=${term.rows}`
  const s = socket(`/sandboxes/${encodeURIComponent(id)}/pty?${q}`)
  ws = s
  let exit = null
  s.onopen = () => { status('connected'); term.focus() }
  s.onmessage = (ev) => {
    if (typeof ev.data === 'string') {
      try {
        const m = JSON.parse(ev.data)
        if (m.type === 'exit') exit = m
      } catch {}
      return
    }
    term.write(new Uint8Array(ev.data))
  }
  s.onclose = (ev) => {
    if (ws !== s) return
    ws = null
    const why = exit ? `the shell exited (status ${exit.exitCode}${exit.signal ? ', signal ' + exit.signal : ''})`
      : ev.code === 1006 ? 'the connection broke (was the sandbox paused or deleted?)'
        : `closed (${ev.code}${ev.reason ? ': ' + ev.reason : ''})`
    status(why)
    if (onEnd) onEnd(why)
  }
}

export function disconnect () {
  if (ws) {
    const s = ws
    ws = null
    s.close()
  }
  sandboxId = null
}

export function connectedTo () { return ws ? sandboxId : null }

export function idle (text) { ensureTerminal(); status(text) }
