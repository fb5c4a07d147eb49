// SPDX-License-Identifier: MIT
// The kiln web console: the key, the sandbox list (state, template, age,
// CPU, memory; create, pause, resume, fork, delete) and a sandbox's page
// (sandbox.js), routed by the URL's fragment: #/ and #/sandbox/ID.
import { getJSON, key, postJSON, request, whenUnauthorized } from './api.js'
import { $, age, bytes, clear, el, show, showError } from './dom.js'
import { sample } from './metrics.js'
import * as sandbox from './sandbox.js'

const TICK_MS = 5000
let usage = {} // id -> {cpu, rss}, from the last sample
let timer = null

function go (hash) {
  if (location.hash === hash) route()
  else location.hash = hash
}

function login (why) {
  sandbox.close()
  show('list', false)
  show('detail', false)
  show('forget', false)
  show('login', true)
  $('crumb').textContent = ''
  if (why) showError(new Error(why))
  $('login-key').focus()
}

whenUnauthorized(() => {
  key.forget()
  login('kilnd refused the API key: enter the right one')
})

async function templates () {
  const sel = $('create-template')
  const keep = sel.value
  const [images, tmpls] = await Promise.all([getJSON('/images'), getJSON('/templates').catch(() => [])])
  clear(sel)
  const imgGroup = el('optgroup', { label: 'images' })
  for (const i of images) imgGroup.append(el('option', { value: i.name }, i.builtin ? `${i.name} (built in)` : i.name))
  sel.append(imgGroup)
  if (Array.isArray(tmpls) && tmpls.length) {
    const g = el('optgroup', { label: 'templates' })
    for (const t of tmpls) g.append(el('option', { value: t.name }, t.name))
    sel.append(g)
  }
  if (keep) sel.value = keep
}

async function action (id, what) {
  const p = `/sandboxes/${encodeURIComponent(id)}`
  if (what === 'pause') await postJSON(p + '/pause')
  else if (what === 'resume') await postJSON(p + '/resume', {})
  else if (what === 'fork') {
    const r = await postJSON(p + '/fork', { count: 1 })
    const err = Array.isArray(r) && r.find((x) => x && x.error)
    if (err) throw new Error(`fork of ${id}: ${err.error.message}`)
  } else if (what === 'delete') {
    if (!confirm(`Delete sandbox ${id}? Its processes, files and snapshot go.`)) return
    await request('DELETE', p)
  }
}

function row (s) {
  const u = usage[s.sandboxID] || {}
  const btn = (what, label, enabled) => el('button', {
    type: 'button',
    class: what === 'delete' ? 'danger' : undefined,
    'data-action': what,
    disabled: !enabled,
    onclick: async (e) => {
      e.target.disabled = true
      try { await action(s.sandboxID, what) } catch (err) { showError(err) }
      refreshList()
    }
  }, label)
  return el('tr', { 'data-id': s.sandboxID },
    el('td', {}, el('a', { class: 'sb', href: `#/sandbox/${encodeURIComponent(s.sandboxID)}` }, s.sandboxID),
      s.tenant ? el('span', { class: 'muted tenant', title: 'tenant' }, ` ${s.tenant}`) : null),
    el('td', { class: `state state-${s.state}` }, s.state),
    el('td', {}, s.templateID || 'busybox'),
    el('td', { class: 'num', title: s.startedAt }, age(s.startedAt)),
    el('td', { class: 'num' }, typeof u.cpu === 'number' ? `${u.cpu.toFixed(1)} %` : '-', el('span', { class: 'muted' }, ` / ${s.cpuCount}`)),
    el('td', { class: 'num' }, u.rss !== undefined ? bytes(u.rss) : '-', el('span', { class: 'muted' }, ` / ${s.memoryMB} MiB`)),
    el('td', {}, btn('pause', 'Pause', s.state === 'running'), btn('resume', 'Resume', s.state === 'paused'),
      btn('fork', 'Fork', s.state === 'running'), btn('delete', 'Delete', true)))
}

// Does sandbox s match every word of the filter? A word is part of its
// id, state, template or tenant, or a metadata key=value (or part of one).
function matches (s, words) {
  const meta = Object.entries(s.metadata && typeof s.metadata === 'object' ? s.metadata : {}).map(([k, v]) => `${k}=${v}`)
  const hay = [s.sandboxID, s.state, s.templateID || 'busybox', s.tenant || '', ...meta].map((x) => String(x).toLowerCase())
  return words.every((w) => hay.some((h) => h.includes(w)))
}

let lastList = []
function renderList () {
  const words = $('list-filter').value.toLowerCase().split(/\s+/).filter(Boolean)
  const shown = lastList.filter((s) => matches(s, words))
  const body = $('sandboxes').tBodies[0]
  clear(body)
  for (const s of shown) body.append(row(s))
  show('list-empty', lastList.length === 0)
  show('list-none', lastList.length > 0 && shown.length === 0)
}

async function refreshList () {
  const list = await getJSON('/sandboxes')
  lastList = Array.isArray(list) ? list : []
  renderList()
}

async function tick () {
  if (!key.get()) return
  try {
    usage = await sample(sandbox.openId(), lastList.filter((s) => s.state === 'running').map((s) => s.sandboxID))
    if (!$('list').hidden) await refreshList()
    if (!$('detail').hidden) await sandbox.tick()
  } catch (e) {
    if (e.status !== 401) showError(e)
  }
}

async function route () {
  if (!key.get()) return login()
  show('login', false)
  show('forget', true)
  const m = /^#\/sandbox\/([^/]+)$/.exec(location.hash)
  sandbox.close()
  if (m) {
    show('list', false)
    show('detail', true)
    await sandbox.open(decodeURIComponent(m[1]), go)
  } else {
    show('detail', false)
    show('list', true)
    $('crumb').textContent = ''
    try {
      await Promise.all([templates(), refreshList()])
    } catch (e) { showError(e) }
  }
  clearInterval(timer)
  timer = setInterval(tick, TICK_MS)
  tick()
}

function init () {
  $('error-close').addEventListener('click', () => show('error', false))
  $('login-form').addEventListener('submit', async (e) => {
    e.preventDefault()
    key.set($('login-key').value.trim())
    $('login-key').value = ''
    try {
      const info = await getJSON('/') // checks the key
      $('version').textContent = `${info.name || 'kilnd'} ${info.version || ''}`
      show('error', false)
      route()
    } catch (err) { if (err.status !== 401) showError(err) }
  })
  $('forget').addEventListener('click', () => { key.forget(); clearInterval(timer); login() })
  $('create-form').addEventListener('submit', async (e) => {
    e.preventDefault()
    const t = $('create-template').value
    const timeout = Number($('create-timeout').value) || 300
    $('create').disabled = true
    $('create-status').textContent = `creating a sandbox of ${t}...`
    try {
      const s = await postJSON('/sandboxes', { templateID: t, timeout })
      $('create-status').textContent = `created ${s.sandboxID}`
      go(`#/sandbox/${encodeURIComponent(s.sandboxID)}`)
    } catch (err) {
      $('create-status').textContent = ''
      showError(err)
    } finally { $('create').disabled = false }
  })
  $('list-filter').addEventListener('input', renderList)
  sandbox.init(go)
  window.addEventListener('hashchange', route)
  if (key.get()) getJSON('/').then((info) => { $('version').textContent = `${info.name} ${info.version}` }).catch(() => {})
  route()
}

init()
