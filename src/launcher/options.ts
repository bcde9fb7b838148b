/**
 * `nodetruth attach`'s flags: every value that will reach kubectl's argv is checked
 * here, once, so none can be read as another flag (see attach.ts).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { parseFlags } from '../args.js';
import { formatDuration } from '../format.js';
import { DNS1123_LABEL, DNS1123_SUBDOMAIN, durationSchema } from '../validate.js';
import { VERSION } from '../version.js';

/** Where nodetruth listens inside the debug pod: its default loopback address. */
export const REMOTE_PORT = 7070;
/**
 * The digest of the image published as ghcr.io/nodetruth/nodetruth:<version>, for the
 * release step that pushes the image before it packs the launcher to write here; null
 * while none is known (no image is published yet, and a build cannot know the digest of
 * an image built after it). Then the default is the version's tag, never a moving one
 * such as latest; an --image given with @sha256:<digest> is used as given.
 */
export const IMAGE_DIGEST: string | null = null;
const imageRef = (repoTag: string, digest: string | null): string => (digest ? `${repoTag}@${digest}` : repoTag);
export const DEFAULT_IMAGE = imageRef(`ghcr.io/nodetruth/nodetruth:${VERSION}`, IMAGE_DIGEST);
const DIGEST = /@sha256:[0-9a-f]{64}$/;

/** An image named by no digest and by latest or no tag at all: what it names can change between two pulls. */
export function movableImage(image: string): boolean {
  if (DIGEST.test(image)) return false;
  const name = image.slice(image.lastIndexOf('/') + 1);
  const colon = name.lastIndexOf(':');
  return colon < 0 || name.slice(colon + 1) === 'latest';
}
/** How long a debug pod may live (activeDeadlineSeconds): a session, not a deployment. */
const DEFAULT_MAX_DURATION = '4h';
const MAX_DURATION_BOUNDS = { minMs: 60_000, maxMs: 7 * 24 * 3_600_000 };
const TIMEOUT_BOUNDS = { minMs: 1000, maxMs: 24 * 3_600_000 };
/** deploy/debug-profile.yaml, next to dist/ (or src/) in the package. */
export const DEFAULT_PROFILE = fileURLToPath(new URL('../../deploy/debug-profile.yaml', import.meta.url));

/** A duration (src/format.ts parseDuration) within the bounds and in whole seconds, in ms. */
const wholeSeconds = (bounds: { minMs: number; maxMs: number }, message: string) => durationSchema(bounds, () => message).refine((ms) => ms % 1000 === 0, message);
const notAFlag = (what: string) => z.string().min(1).refine((s) => !s.startsWith('-'), `${what} must not start with "-"`);

const optionsSchema = z.object({
  node: z.string().regex(DNS1123_SUBDOMAIN, 'node: expected a node name (DNS-1123 subdomain)'),
  image: notAFlag('--image')
    .refine((s) => !/\s/.test(s), '--image must not contain whitespace')
    .refine((s) => !s.includes('@') || DIGEST.test(s), '--image: a digest must be @sha256: and 64 lowercase hex digits'),
  namespace: z.string().regex(DNS1123_LABEL, '--namespace: expected a namespace name (DNS-1123 label)').nullable(),
  port: z.coerce.number().int().min(0, '--port: 0..65535').max(65535, '--port: 0..65535'),
  kubeconfig: notAFlag('--kubeconfig').nullable(),
  context: notAFlag('--context').nullable(),
  profilePath: notAFlag('--profile-path'),
  /** as kubectl wait --timeout reads it: whole seconds, in their largest whole unit (90s, 2m) */
  timeout: wholeSeconds(TIMEOUT_BOUNDS, '--timeout: expected a duration of whole seconds from 1s to 24h, such as 90s or 2m').transform(formatDuration),
  maxDurationSeconds: wholeSeconds(MAX_DURATION_BOUNDS, '--max-duration: expected a duration of whole seconds between 1m and 168h, such as 4h or 90m').transform((ms) => ms / 1000),
  get: z.array(z.string().regex(/^\/[\x21-\x7e]*$/, '--get: expected a path such as /v1/triage?format=text')),
  /** --capture: download GET /v1/bundle into `output` (default nodetruth-<node>-<time>.tar.gz), then clean up */
  capture: z.boolean(),
  output: z.string().min(1).nullable(),
});
export type AttachOptions = z.output<typeof optionsSchema>;

export class UsageError extends Error {
  override name = 'UsageError';
}

export const ATTACH_USAGE = `Usage:
  nodetruth attach <node> [flags]
  kubectl nodetruth attach <node> [flags]

Starts nodetruth in a debug pod on <node> (kubectl debug --profile=sysadmin), waits for it,
port-forwards it to 127.0.0.1 and prints curl commands. Ctrl-C ends the session and deletes
the pod; so does any error.

Flags:
  --image IMAGE          nodetruth image (default ${DEFAULT_IMAGE}; env NODETRUTH_IMAGE)
  -n, --namespace NS     namespace of the debug pod (default: the context's); it must allow
                         privileged pods (Pod Security "privileged")
  --port PORT            local port on 127.0.0.1 (default ${REMOTE_PORT}; 0 picks a free one); the
                         launcher adds the session's secret token to what it passes on,
                         and the agent in the pod answers nothing without it
  --kubeconfig FILE      passed to kubectl
  --context NAME         passed to kubectl
  --profile-path FILE    custom debug profile (default: the packaged deploy/debug-profile.yaml)
  --timeout DURATION     how long to wait for the pod to be ready (default 2m)
  --max-duration DURATION
                         the debug pod's activeDeadlineSeconds: the kubelet ends it after
                         this long even if attach is killed (default ${DEFAULT_MAX_DURATION}, 1m..168h)
  --get PATH             fetch PATH (repeatable), print it, clean up and exit instead of
                         waiting for Ctrl-C; exit 1 if any answer is not 2xx
  --capture              capture the node into a bundle (GET /v1/bundle), download it, clean up
                         and exit; -o FILE (default nodetruth-<node>-<UTC time>.tar.gz); then
                         nodetruth serve --bundle FILE answers the same API from it, offline
`;

export function parseAttachArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): AttachOptions {
  const { values: v, positionals } = parseFlags(
    argv,
    {
      image: { type: 'string' },
      namespace: { type: 'string', short: 'n' },
      port: { type: 'string' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      'profile-path': { type: 'string' },
      timeout: { type: 'string' },
      'max-duration': { type: 'string' },
      get: { type: 'string', multiple: true },
      capture: { type: 'boolean' },
      output: { type: 'string', short: 'o' },
    },
    (m) => new UsageError(m),
  );
  if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'which node? nodetruth attach <node>' : `one node at a time, got ${positionals.join(' ')}`);
  const result = optionsSchema.safeParse({
    node: positionals[0],
    image: v.image ?? (env.NODETRUTH_IMAGE || DEFAULT_IMAGE),
    namespace: v.namespace ?? null,
    port: v.port ?? REMOTE_PORT,
    kubeconfig: v.kubeconfig ?? null,
    context: v.context ?? null,
    profilePath: v['profile-path'] ?? DEFAULT_PROFILE,
    timeout: v.timeout ?? '2m',
    maxDurationSeconds: v['max-duration'] ?? DEFAULT_MAX_DURATION,
    get: v.get ?? [],
    capture: v.capture ?? false,
    output: v.output ?? null,
  });
  if (!result.success) throw new UsageError(result.error.issues.map((i) => i.message).join('\n'));
  if (!existsSync(result.data.profilePath)) throw new UsageError(`--profile-path: no such file ${result.data.profilePath}`);
  return result.data;
}
