/** kubelet's healthz endpoint (http://127.0.0.1:10248/healthz by default), with a hard 1 s deadline. */
import type { KubeletHealth } from '../../model/node.js';

const BODY_EXCERPT = 200;

export async function kubeletHealthz(url: string, timeoutMs = 1000): Promise<KubeletHealth> {
  const t0 = performance.now();
  const ms = () => Math.round(performance.now() - t0);
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual', headers: { accept: 'text/plain' } });
    const text = await readExcerpt(res, BODY_EXCERPT);
    return { url, reachable: true, ok: res.status === 200, status: res.status, body: text, durationMs: ms() };
  } catch (err) {
    return { url, reachable: false, ok: false, error: describe(err, timeoutMs), durationMs: ms() };
  }
}

async function readExcerpt(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let n = 0;
  try {
    while (n < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      n += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).toString('utf8').slice(0, max).trim();
}

function describe(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  const cause = e.cause;
  if (cause?.code) return `${cause.code}${cause.message ? `: ${cause.message}` : ''}`;
  return cause?.message ?? e.message ?? String(err);
}
