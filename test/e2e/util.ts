// Small helpers shared by the e2e harness: child processes with deadlines, polling, logs.
import { spawn } from 'node:child_process';
import { openSync, closeSync, readFileSync, existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export { sleep };

/**
 * Where the harnesses keep what they build (guest images, the agent image, run
 * directories): outside the clone, so a fresh clone on the same machine (CI's) finds
 * them; every entry is keyed by the hash of its inputs. $NODETRUTH_CACHE moves it.
 */
export function cacheHome(part: string): string {
  return join(process.env.NODETRUTH_CACHE ?? join(homedir(), '.cache', 'nodetruth'), part);
}

export function log(msg: string): void {
  const t = new Date().toISOString().slice(11, 23);
  process.stderr.write(`# [e2e ${t}] ${msg}\n`);
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface RunOptions {
  timeoutMs: number;
  /** append stdout and stderr to this file instead of capturing them */
  logFile?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Runs a command (no shell) with a deadline. On timeout the child (which we started) is
 * sent SIGTERM, then SIGKILL 5 s later, by its own PID.
 */
export function run(cmd: string, args: string[], opts: RunOptions): Promise<RunResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    let fd: number | undefined;
    if (opts.logFile) fd = openSync(opts.logFile, 'a');
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ['ignore', fd ?? 'pipe', fd ?? 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    let killTimer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      if (child.pid !== undefined) {
        try {
          process.kill(child.pid, 'SIGTERM');
        } catch {
          /* already gone */
        }
        killTimer = setTimeout(() => {
          try {
            if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
          } catch {
            /* already gone */
          }
        }, 5000);
      }
    }, opts.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      if (fd !== undefined) closeSync(fd);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      if (fd !== undefined) closeSync(fd);
      const ms = Date.now() - started;
      if (ms >= opts.timeoutMs && code === null) {
        reject(new Error(`${cmd} ${args.join(' ')}: timed out after ${opts.timeoutMs} ms`));
        return;
      }
      resolve({ code, signal, stdout, stderr, ms });
    });
  });
}

/** run() that throws unless the command exits 0; the error carries the output's tail. */
export async function runOk(cmd: string, args: string[], opts: RunOptions): Promise<RunResult> {
  const r = await run(cmd, args, opts);
  if (r.code !== 0) {
    const out = opts.logFile ? tailFile(opts.logFile, 40) : `${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-40).join('\n');
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.code ?? r.signal}:\n${out}`);
  }
  return r;
}

/**
 * An agent's answer that must be 200. The agent's CRI deadline is wall-clock time: on a
 * starved TCG guest a verbose ContainerStatus can outlive it (seen on sid at host load 10,
 * and on bookworm at load 6 in a cold CI run). That 504 `runtime_timeout` is the deadline
 * doing its job, not the scenario's subject: ask again, at most twice, on exactly that answer.
 */
export async function answer200<R extends { status: number; body: any; ms: number; text: string }>(what: string, ask: () => Promise<R>): Promise<R> {
  let r = await ask();
  for (let retry = 0; retry < 2 && r.status === 504 && r.body?.code === 'runtime_timeout'; retry++) {
    log(`${what} answered 504 runtime_timeout in ${r.ms} ms (starved guest); asking again`);
    r = await ask();
  }
  if (r.status !== 200) throw new Error(`${what} answered ${r.status} in ${r.ms} ms: ${r.text.slice(0, 800)}`);
  return r;
}

export function tailFile(path: string, lines: number): string {
  if (!existsSync(path)) return `(${path} does not exist)`;
  return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
}

/** Thrown inside a waitFor() callback to stop waiting at once (a crashed VM or agent). */
export class GiveUp extends Error {}

/**
 * Polls `fn` until it returns a value other than undefined, or throws after `timeoutMs`
 * with `what` and the last error seen. A GiveUp thrown by `fn` ends the wait at once.
 */
export async function waitFor<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined> | T | undefined, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      if (err instanceof GiveUp) throw err;
      lastErr = err;
    }
    if (Date.now() >= deadline) {
      const why = lastErr instanceof Error ? `: last error: ${lastErr.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await sleep(intervalMs);
  }
}
