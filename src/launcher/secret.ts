/**
 * An attach session's identity and secret, and the debug profile that carries them into
 * the pod.
 *
 * - `token`: 32 random bytes (base64url). The agent in the debug pod requires it on every
 *   request but /healthz (src/server/plugins/session-secret.ts); the launcher holds it in
 *   memory only and adds it to every request through its local proxy (proxy.ts). It is
 *   never printed, written to a file of ours, or put on a command line.
 * - `id`: 16 random hex characters, not a secret. kubectl debug cannot label the pod it
 *   creates (no --labels flag; a custom profile is a container, not a pod), so the id
 *   travels as an env value too: when kubectl's "Creating debugging pod" line is not seen,
 *   the pod is found by it (kubectl's own managed-by label, the node, then this env value)
 *   and still given its deadline or deleted. Once the pod's name is known, the deadline
 *   patch also labels it SESSION_LABEL=<id>, for `kubectl delete pod -l` by hand.
 *
 * Both reach the agent as env values of the --custom container patch, the only channel
 * kubectl debug gives into the pod spec (besides --env, which would put the token on
 * kubectl's command line, readable by every local user in `ps`). A pod's env is readable
 * by whoever may `get pods` in its namespace: the attach namespace's users, who may create
 * such a pod themselves anyway (deploy/attach-rbac.yaml). What the token keeps out is the
 * node's other host-network pods and processes, which reach the agent's loopback port but
 * not the API server's view of the pod. (root on the node can read it from the process's
 * environment, as it can read anything there.)
 *
 * The profile reaches kubectl as a file (--custom takes a path; kubectl reads it with
 * os.ReadFile): only the user can read it (0600, in a fresh 0700 directory), on tmpfs
 * (/dev/shm) where there is one so it never reaches a disk, and it is removed as soon as
 * kubectl debug has ended. (Not /dev/stdin: Node gives a child's stdin as a socket, which
 * /dev/stdin cannot open: ENXIO.)
 */
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';

/** The env names the agent reads (src/config.ts: --session-token's twin) and the launcher finds the pod by. */
const SESSION_TOKEN_ENV = 'NODETRUTH_SESSION_TOKEN';
export const SESSION_ID_ENV = 'NODETRUTH_SESSION_ID';
/** The label the deadline patch puts on the pod once its name is known. */
export const SESSION_LABEL = 'nodetruth.dev/session';
/** The label kubectl debug itself puts on every node debug pod (pkg/cmd/debug/debug.go, generateNodeDebugPod). */
export const KUBECTL_DEBUG_LABEL = 'app.kubernetes.io/managed-by=kubectl-debug';
export interface SessionSecret {
  /** not secret: finds the pod, labels it */
  readonly id: string;
  /** secret: never printed or logged */
  readonly token: string;
}

export function newSessionSecret(): SessionSecret {
  return { id: randomBytes(8).toString('hex'), token: randomBytes(32).toString('base64url') };
}

const MAX_PROFILE_BYTES = 256 * 1024;

/**
 * The debug profile at `file` (a partial container, YAML or JSON) with the session's env
 * values added (replacing any of the same names), as the JSON kubectl reads first.
 */
function profileWithSession(file: string, secret: SessionSecret): string {
  const text = readFileSync(file, 'utf8');
  if (Buffer.byteLength(text) > MAX_PROFILE_BYTES) throw new Error(`${file}: larger than ${MAX_PROFILE_BYTES / 1024} KiB, not a container spec`);
  const container = parseYaml(text, { maxAliasCount: 100 }) as unknown;
  if (container === null || typeof container !== 'object' || Array.isArray(container)) throw new Error(`${file}: expected a partial container spec (a mapping)`);
  const c = container as Record<string, unknown>;
  if (c.env !== undefined && !Array.isArray(c.env)) throw new Error(`${file}: env must be a list`);
  const ours = new Set([SESSION_TOKEN_ENV, SESSION_ID_ENV]);
  const env = ((c.env as unknown[] | undefined) ?? []).filter((e) => !(e && typeof e === 'object' && ours.has((e as { name?: unknown }).name as string)));
  env.push({ name: SESSION_ID_ENV, value: secret.id }, { name: SESSION_TOKEN_ENV, value: secret.token });
  return JSON.stringify({ ...c, env });
}

/** The session's copy of the profile for kubectl: its path, and its removal (idempotent). */
interface CustomProfile {
  file: string;
  cleanup(): void;
}

/** tmpfs where the system has one (Linux), else the user's temporary directory. */
function privateBase(): string {
  try {
    if (statSync('/dev/shm').isDirectory()) {
      accessSync('/dev/shm', constants.W_OK);
      return '/dev/shm';
    }
  } catch {
    /* none, or not writable */
  }
  return tmpdir();
}

export function customProfile(file: string, secret: SessionSecret, base: string = privateBase()): CustomProfile {
  const json = profileWithSession(file, secret);
  const dir = mkdtempSync(path.join(base, 'nodetruth-attach-'));
  const f = path.join(dir, 'profile.json');
  try {
    writeFileSync(f, json, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return { file: f, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
