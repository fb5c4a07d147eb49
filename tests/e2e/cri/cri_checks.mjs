// What the CRI tests of tests/e2e/cri (cri.test.mjs, streams.test.mjs)
// share: "ok"/"not ok" per check and the closing "N passed, N failed",
// calls that must succeed, and bounded waits on a container's state.
import { rt, img, call } from './cri_client.mjs';

let passed = 0;
let failed = 0;
export function check(cond, what) {
  if (cond) passed++;
  else failed++;
  console.log(`${cond ? 'ok' : 'not ok'} - ${what}`);
}
// A call that must succeed: its answer, or null after a "not ok" naming it.
export async function must(svc, method, req, what) {
  try {
    return await call(svc, method, req);
  } catch (e) {
    check(false, `${what}: ${method} failed: ${e.details || e.message}`);
    return null;
  }
}
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export async function status(id) {
  return (await call(rt, 'ContainerStatus', { container_id: id, verbose: true })).status;
}
export async function waitExited(id, secs) {
  for (let i = 0; i < secs * 10; i++) {
    const s = await status(id);
    if (s.state === 'CONTAINER_EXITED') return s;
    await sleep(100);
  }
  return status(id);
}
// Runs main, counts a throw as a failed check, closes the clients and
// exits with the closing line.
export async function run(main) {
  try {
    await main();
  } catch (e) {
    check(false, `the test stopped: ${e.details || e.stack}`);
  }
  rt.close();
  img.close();
  console.log(`\n${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
