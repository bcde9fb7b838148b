/**
 * manifest.json, written last: what every section came from, its size, its
 * redaction markers and errors, what the budget trimmed, and the moment it shows.
 */
import { REDACTED, redactText } from '../redact.js';
import type { Sources } from '../sources.js';
import { VERSION } from '../version.js';
import { FORMAT_VERSION, SECTION_KINDS, TRIM_ORDER, type Manifest, type Section, type SectionKind } from './format.js';

const MOMENT_NOTE =
  'one moment: every answer and raw section was built from the same source reads (one ListContainers and ListPodSandbox, one walk of the kubepods cgroups, one verbose ContainerStatus per container for its detail, and the status of a list row only where the agent did not already hold it), made between capturedAt and finishedAt';
const REDACTION_POLICY =
  'best effort, as the API (src/redact.ts, docs/security.md): environment values, secret-looking keys, command-line secrets, CNI configs by key; in text URL userinfo, Go DSNs, secret query parameters, bearer tokens, authorization headers, password=/token= pairs and private-key blocks. Route answers, journal records and log lines get the same rules as the raw sections; `redacted` counts the markers each stored entry holds';

export function buildManifest(m: {
  config: Sources['config'];
  argv: string[];
  capturedAt: Date;
  finishedAt: Date;
  sinceMs: number;
  maxBytes: number;
  bytes: number;
  trimmed: ReadonlySet<SectionKind>;
  sections: Section[];
}): Manifest {
  const byKind: Record<string, number> = Object.fromEntries(SECTION_KINDS.map((k) => [k, 0]));
  for (const s of m.sections) byKind[s.kind] = (byKind[s.kind] ?? 0) + s.redacted;
  return {
    kind: 'nodetruth-bundle',
    formatVersion: FORMAT_VERSION,
    version: VERSION,
    node: m.config.nodeName,
    capturedAt: m.capturedAt.toISOString(),
    finishedAt: m.finishedAt.toISOString(),
    moment: MOMENT_NOTE,
    argv: m.argv.map((a) => redactText(a)),
    hostRoot: m.config.hostRoot,
    since: new Date(m.capturedAt.getTime() - m.sinceMs).toISOString(),
    maxBytes: m.maxBytes,
    bytes: m.bytes,
    trimOrder: [...TRIM_ORDER],
    trimmed: TRIM_ORDER.filter((k) => m.trimmed.has(k)),
    redaction: { marker: REDACTED, total: Object.values(byKind).reduce((a, b) => a + b, 0), byKind, policy: REDACTION_POLICY },
    sections: m.sections,
  };
}
