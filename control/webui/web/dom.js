// SPDX-License-Identifier: MIT
// Building the page: every string that comes from kilnd or a sandbox
// (names, output, command lines) becomes a text node, never markup.
export function el (tag, attrs = {}, ...children) {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (k === 'class') e.className = v
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v)
    else e.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue
    e.append(c instanceof Node ? c : document.createTextNode(String(c)))
  }
  return e
}

export const $ = (id) => document.getElementById(id)

export function show (id, on) { $(id).hidden = !on }

export function clear (e) { e.replaceChildren() }

export function bytes (n) {
  if (n === undefined || n === null || Number.isNaN(n)) return '-'
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let i = 0
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++ }
  return `${n < 10 && i ? n.toFixed(1) : Math.round(n)} ${u[i]}`
}

export function age (iso) {
  const t = Date.parse(iso)
  if (Number.isNaN(t)) return '-'
  let s = Math.max(0, Math.round((Date.now() - t) / 1000))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`
  s = Math.floor(s / 60)
  if (s < 1440) return `${Math.floor(s / 60)}h ${s % 60}m`
  return `${Math.floor(s / 1440)}d ${Math.floor(s % 1440 / 60)}h`
}

let errorTimer
export function showError (e) {
  const msg = e && e.message ? e.message : String(e)
  $('error-text').textContent = msg
  show('error', true)
  clearTimeout(errorTimer)
  errorTimer = setTimeout(() => show('error', false), 15000)
  if (e && e.stack) console.error(e)
}
