// SPDX-License-Identifier: MIT
// The file tree of a sandbox (GET .../files/list, one folder at a time as
// it is opened), uploads (PUT .../files) into the selected folder,
// downloads (GET .../files, saved through a blob: the request needs the
// key header, which a plain link cannot send) and removal.
import { getJSON, request, postJSON } from './api.js'
import { $, bytes, clear, el, showError } from './dom.js'

let sb = null // the sandbox id
let selected = null // {path, li}

const base = () => `/sandboxes/${encodeURIComponent(sb)}/files`
const q = (p) => `?path=${encodeURIComponent(p)}`
const join = (dir, name) => (dir.endsWith('/') ? dir : dir + '/') + name

function select (path, li) {
  if (selected && selected.li) selected.li.classList.remove('selected')
  selected = { path, li }
  if (li) li.classList.add('selected')
  $('files-target').textContent = path
}

async function download (entry) {
  try {
    const r = await request('GET', base() + q(entry.path))
    const url = URL.createObjectURL(await r.blob())
    const a = el('a', { href: url, download: entry.name })
    document.body.append(a)
    a.click()
    a.remove()
    setTimeout(() => URL.revokeObjectURL(url), 10000)
  } catch (e) { showError(e) }
}

async function remove (entry, li) {
  if (!confirm(`Remove ${entry.path}${entry.type === 'dir' ? ' and everything in it' : ''}?`)) return
  try {
    await postJSON(base() + '/remove', { path: entry.path, recursive: entry.type === 'dir' })
    li.remove()
  } catch (e) { showError(e) }
}

function row (entry) {
  const li = el('li', { class: entry.type === 'dir' ? 'dir' : 'file', 'data-path': entry.path })
  const name = el('span', { class: 'name' }, entry.type === 'dir' ? '▸ ' + entry.name + '/'
    : entry.type === 'symlink' ? entry.name + ' -> ' + (entry.symlinkTarget || '?') : entry.name)
  li.append(name)
  if (entry.type === 'file') {
    li.append(el('span', { class: 'meta' }, bytes(entry.size)),
      el('button', { type: 'button', title: 'download', onclick: () => download(entry) }, 'download'))
  }
  li.append(el('button', { type: 'button', title: 'remove', onclick: () => remove(entry, li) }, 'remove'))
  if (entry.type === 'dir') {
    let open = false
    name.addEventListener('click', async () => {
      select(entry.path, li)
      open = !open
      name.textContent = (open ? '▾ ' : '▸ ') + entry.name + '/'
      const old = li.querySelector(':scope > ul')
      if (old) old.remove()
      if (open) li.append(await listing(entry.path))
    })
  }
  return li
}

async function listing (path) {
  const ul = el('ul')
  try {
    const j = await getJSON(base() + '/list' + q(path))
    const entries = Array.isArray(j.entries) ? j.entries : []
    entries.sort((a, b) => (a.type === 'dir') === (b.type === 'dir') ? String(a.name).localeCompare(String(b.name)) : a.type === 'dir' ? -1 : 1)
    for (const e of entries) ul.append(row(e))
    if (!entries.length) ul.append(el('li', { class: 'muted' }, '(empty)'))
  } catch (e) {
    ul.append(el('li', { class: 'warn' }, e.message))
  }
  return ul
}

// (Re)list the tree from the root folder in the path field.
export async function refresh () {
  if (!sb) return
  const root = $('files-path').value || '/'
  select(root, null)
  $('files-status').textContent = 'listing...'
  const ul = await listing(root)
  clear($('files'))
  $('files').append(...ul.childNodes)
  $('files-status').textContent = ''
}

export async function upload (files) {
  for (const f of files) {
    const path = join(selected ? selected.path : $('files-path').value || '/', f.name)
    $('files-status').textContent = `uploading ${f.name}...`
    try {
      await request('PUT', base() + q(path), { body: f })
    } catch (e) {
      showError(e)
    }
  }
  $('files-status').textContent = ''
  // show the folder it went to
  if (selected && selected.li) {
    const old = selected.li.querySelector(':scope > ul')
    if (old) old.replaceWith(await listing(selected.path))
  } else {
    await refresh()
  }
}

export function open (id, running) {
  sb = id
  clear($('files'))
  select($('files-path').value || '/', null)
  if (running) refresh()
  else $('files-status').textContent = '(paused: listing resumes the sandbox)'
}

export function close () { sb = null }

export function init () {
  $('files-root').addEventListener('submit', (e) => { e.preventDefault(); refresh() })
  $('files-upload').addEventListener('change', async (e) => {
    const files = [...e.target.files]
    e.target.value = ''
    await upload(files)
  })
}
