// SPDX-License-Identifier: MIT
// One page load and screenshot through CDP, timed from the client: Playwright
// (playwright-core, from tests/e2e/browser/node_modules) connects over CDP to
// a running browser, then RUNS times opens URL in a new page (until "load"),
// takes a 1280x800 screenshot and closes the page. Prints the median and the
// min in ms. Used by browser_bench.sh for the sandbox's browser (through
// kilnd) and the host's, the same page and client for both.
//
//   node browser_page.mjs ENDPOINT URL RUNS [API-KEY]
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(path.join(here, '../../tests/e2e/browser/package.json'))
const { chromium } = require('playwright-core')
const [endpoint, url, runsArg, key] = process.argv.slice(2)
const runs = parseInt(runsArg, 10)

const browser = await chromium.connectOverCDP(endpoint, { headers: key ? { 'X-API-Key': key } : {} })
const ctx = browser.contexts()[0] || (await browser.newContext())
const times = []
for (let i = 0; i < runs; i++) {
  const t0 = performance.now()
  const page = await ctx.newPage()
  await page.setViewportSize({ width: 1280, height: 800 })
  await page.goto(url, { waitUntil: 'load' })
  const png = await page.screenshot()
  times.push(performance.now() - t0)
  if (png.length < 2000) throw new Error(`a ${png.length}-byte screenshot looks blank`)
  await page.close()
}
await browser.close()
times.sort((a, b) => a - b)
console.log(`median ${times[Math.floor(times.length / 2)].toFixed(1)} min ${times[0].toFixed(1)}`)
