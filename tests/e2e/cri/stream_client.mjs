// The client end of the Kubernetes streaming protocol that `kubectl exec`,
// `attach` and `port-forward` speak to the URL a CRI Exec, Attach or
// PortForward hands out (containerd's streaming server, 127.0.0.1): a
// WebSocket (npm's ws) with subprotocol v4.channel.k8s.io, each binary
// message one channel's: its first byte the channel, the rest the bytes.
// Exec and Attach: 0 stdin, 1 stdout, 2 stderr, 3 the status (a JSON
// metav1.Status as the stream ends), 4 resize (JSON {Width, Height}).
// PortForward: per port a data channel 2i and an error channel 2i+1, each
// opened by the server with the port (uint16, little-endian). Every wait
// here is bounded. Used by streams.test.mjs and cri_bench.mjs.
import WebSocket from 'ws';

export const STDIN = 0;
export const STDOUT = 1;
export const STDERR = 2;
export const STATUS = 3;
export const RESIZE = 4;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class Stream {
  constructor(ws) {
    this.ws = ws;
    this.chunks = new Map();
    this.protocol = ws.protocol;
    this.closed = new Promise((resolve) => ws.on('close', (code) => resolve(code)));
    ws.on('message', (data) => {
      const b = Buffer.from(data);
      if (b.length === 0) return;
      const ch = b[0];
      if (!this.chunks.has(ch)) this.chunks.set(ch, []);
      this.chunks.get(ch).push(b.subarray(1));
    });
  }

  bytes(ch) { return Buffer.concat(this.chunks.get(ch) || []); }

  text(ch) { return this.bytes(ch).toString(); }

  send(ch, data) { this.ws.send(Buffer.concat([Buffer.from([ch]), Buffer.from(data)])); }

  resize(width, height) { this.send(RESIZE, JSON.stringify({ Width: width, Height: height })); }

  // true once test(bytes of channel ch) holds, false after secs
  async waitFor(ch, test, secs) {
    const end = Date.now() + secs * 1000;
    while (Date.now() < end) {
      if (test(this.bytes(ch))) return true;
      if (this.ws.readyState === WebSocket.CLOSED) return test(this.bytes(ch));
      await sleep(20);
    }
    return false;
  }

  // The end of the stream (the server closes it), within secs; then the
  // status channel's JSON, or null, and the exit code it names (0 for
  // Success, the ExitCode cause of NonZeroExitCode, else null).
  async done(secs) {
    const closed = await Promise.race([this.closed.then(() => true), sleep(secs * 1000).then(() => false)]);
    if (!closed) this.ws.terminate();
    let status = null;
    try { status = JSON.parse(this.text(STATUS)); } catch { /* none, or not JSON */ }
    return { closed, status, code: exitCode(status) };
  }

  close() { this.ws.close(); }
}

export function exitCode(status) {
  if (!status) return null;
  if (status.status === 'Success') return 0;
  const cause = status.reason === 'NonZeroExitCode' && status.details &&
    (status.details.causes || []).find((c) => c.reason === 'ExitCode');
  return cause ? Number(cause.message) : null;
}

// Opens the stream at a CRI streaming URL (http://...), offering the
// given subprotocols; rejects on a refused upgrade or after secs.
export function open(url, protocols = ['v4.channel.k8s.io'], secs = 10) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), protocols, { handshakeTimeout: secs * 1000 });
    ws.once('open', () => resolve(new Stream(ws)));
    ws.once('unexpected-response', (req, res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => {
        req.destroy();
        reject(new Error(`HTTP ${res.statusCode}: ${body.trim()}`));
      });
    });
    ws.once('error', reject);
  });
}
