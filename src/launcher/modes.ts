/**
 * 4. What a session does once nodetruth answers through the forward: capture a
 * bundle (--capture), fetch paths (--get), or print curl lines and hold the
 * session until Ctrl-C. Each resolves to the exit code.
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { defaultBundleName } from '../bundle/format.js';
import { escapeTerminal, formatDuration } from '../format.js';
import type { Proc } from './kubectl.js';
import type { AttachOptions } from './options.js';
import { StepFailed, type Session } from './session.js';

/** 4c. --capture: the bundle through the port-forward into a local file. */
export async function captureTo(s: Session, o: AttachOptions, port: number): Promise<number> {
  const file = o.output ?? defaultBundleName(o.node);
  s.say(`capturing node ${o.node} into ${file}`);
  try {
    const res = await fetch(`http://127.0.0.1:${port}/v1/bundle`, { signal: AbortSignal.any([AbortSignal.timeout(10 * 60_000), s.abortSignal()]) });
    if (!res.ok || !res.body) throw new StepFailed(`GET /v1/bundle: ${res.status} ${(await res.text()).slice(0, 500)}`);
    // 'wx': never overwrite a file; a half-written bundle is removed
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), createWriteStream(file, { flags: 'wx', mode: 0o600 }));
  } catch (err) {
    if (!(err instanceof Error && 'code' in err && err.code === 'EEXIST')) await rm(file, { force: true });
    s.checkStopped();
    throw err instanceof StepFailed ? err : new StepFailed(`capture: ${(err as Error).message}`);
  }
  s.say(`wrote ${file}; read it with: nodetruth serve --bundle ${file}`);
  return 0;
}

/** 4b. --get: fetch each path and print it; 1 if any answer is not 2xx. */
export async function getPaths(s: Session, o: AttachOptions, port: number): Promise<number> {
  let code = 0;
  for (const path of o.get) {
    s.checkStopped();
    let res: Response;
    let body: string;
    try {
      res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(60_000) });
      body = await res.text();
    } catch (err) {
      throw new StepFailed(`GET ${path}: ${(err as Error).message}`);
    }
    const shown = printable(body, res.headers.get('content-type'));
    s.io.out(shown.endsWith('\n') ? shown : `${shown}\n`);
    if (!res.ok) {
      s.say(`GET ${path}: ${res.status}`);
      code = 1;
    }
  }
  return code;
}

/**
 * An answer as --get prints it, to the user's terminal: no control character of the
 * node's content reaches it. A JSON answer stays the same JSON (a C1 control or a bidi
 * override, which JSON.stringify leaves as they are, written as its \u escape); any
 * other answer keeps its line breaks and has every other control written as its
 * visible escape (src/format.ts escapeTerminal).
 */
export function printable(body: string, contentType: string | null): string {
  return escapeTerminal(body, /json/i.test(contentType ?? '') ? { json: true } : { keepNewlines: true });
}

/** 4. Interactive: print curl lines and hold the session until Ctrl-C (exit 0) or the forward ends (a failure). */
export async function holdSession(s: Session, o: AttachOptions, t: { pod: string; port: number; health: string; forward: Proc }): Promise<number> {
  s.say(`${t.health} answering for node ${o.node} on http://127.0.0.1:${t.port} (pod ${t.pod}${o.namespace ? ` in ${o.namespace}` : ''}; it ends by itself after ${formatDuration(o.maxDurationSeconds * 1000)}, --max-duration)`);
  s.io.out(`\n${curlLines(t.port).join('\n')}\n\n`);
  s.say('Ctrl-C ends the session and deletes the pod');
  const end = await Promise.race([t.forward.exited.then((r) => ({ exited: r })), s.stopped.then(() => ({ stopped: true }))]);
  if ('stopped' in end || s.stopSignal) return 0; // the user ended the session: that is success
  throw new StepFailed(`kubectl port-forward ended (${end.exited.code ?? end.exited.signal}); the pod may have stopped (or reached its --max-duration of ${formatDuration(o.maxDurationSeconds * 1000)})`);
}

/** The curl lines printed once the session is up. Single-quoted: they are pasted into a shell. */
export function curlLines(port: number): string[] {
  const base = `http://127.0.0.1:${port}`;
  return [
    '/readyz?format=text',
    '/v1/triage?format=text',
    '/v1/runtime?format=text',
    '/v1/containers?format=text',
    '/v1/oom?format=text',
    '/v1/throttling?window=5s&format=text',
    '/v1/node?format=text',
    '/v1/logs?query=kubelet&tailLines=50&format=text',
    '/v1/kernel?tailLines=50&format=text',
    '/metrics',
  ].map((p) => `curl -s '${base}${p}'`);
}
