/**
 * The raw evidence behind the answers, read with the agent's own sources (the CRI
 * client and runtime index, the kmsg reader, cgroup files and container log files
 * through HostFs) and passed through src/redact.ts like every answer.
 */
import { redactDeep, redactLogText, redactText } from '../redact.js';
import type { Section } from './format.js';
import { aborted, addFile, CAPTURE_LIMITS, errText, now, storeRaw, type CaptureContext } from './writer.js';

/**
 * The CRI records the routes are built from, as the client normalizes them (already redacted; redacted again, idempotently).
 * The two lists are the moment's, the very ones the answers used (a ListContainers of its own only when the shared pair failed).
 */
export async function captureCri(ctx: CaptureContext): Promise<void> {
  const cri = ctx.o.deps.cri;
  const index = ctx.o.deps.index;
  const calls: [string, () => Promise<unknown>][] = [
    ['Version', () => cri!.version()],
    ['Status', () => cri!.status(true)],
    ['ListPodSandbox', () => index.sandboxes()],
    ['ListContainers', () => index.index().then((i) => i.listed, () => cri!.listContainers())],
    ['ListImages', () => cri!.listImages()],
    ['ImageFsInfo', () => cri!.imageFsInfo()],
  ];
  // at once: with the runtime wedged, the whole section costs one deadline, not six
  const results = await Promise.all(
    calls.map(async ([call, fn]) => {
      const t0 = performance.now();
      try {
        if (!cri) throw new Error(`no CRI socket configured or found under ${ctx.o.deps.config.hostRoot}`);
        return { call, value: await fn(), ms: performance.now() - t0 };
      } catch (err) {
        return { call, error: err, ms: performance.now() - t0 };
      }
    }),
  );
  for (const r of results) {
    await storeRaw(ctx, 'cri', r.call, { cri: `runtime.v1 ${r.call}${cri ? ` at ${cri.endpoint}` : ''}` }, `raw/cri/${r.call}.json`, async () => {
      if ('error' in r) throw r.error;
      return { text: `${JSON.stringify(redactDeep(r.value), null, 1)}\n` };
    });
  }
}

/** Kernel log records, as the kmsg reader gives them, one JSON per line. */
export async function captureKmsg(ctx: CaptureContext): Promise<void> {
  const kmsg = ctx.o.deps.kmsg;
  let file = '<host-root>/dev/kmsg';
  try {
    file = await kmsg.path();
  } catch {
    /* reported by the read below */
  }
  await storeRaw(ctx, 'kmsg', 'kernel log', { file }, 'raw/kmsg.ndjson', async () => {
    const items = await kmsg.readAll(ctx.signal);
    const lines: string[] = [];
    let bytes = 0;
    let trimmed: string | undefined;
    // the newest records matter most: keep the tail that fits
    for (let i = items.length - 1; i >= 0; i--) {
      const it = items[i]!;
      // the record's text passes the same redaction as the /v1/kernel answer stored beside it
      const line = JSON.stringify(it.kind === 'record' ? { ...it, record: { ...it.record, text: redactLogText(it.record.text) } } : it);
      bytes += line.length + 1;
      if (bytes > CAPTURE_LIMITS.kmsgBytes) {
        trimmed = `oldest ${i + 1} of ${items.length} records left out (section bound ${CAPTURE_LIMITS.kmsgBytes} bytes)`;
        break;
      }
      lines.push(line);
    }
    return { text: lines.reverse().join('\n') + (lines.length ? '\n' : ''), ...(trimmed ? { trimmed } : {}) };
  });
}

/** Writes that must never happen, and files reading which means nothing: not read at all. */
const CGROUP_SKIP = new Set(['cgroup.kill', 'memory.reclaim', 'cgroup.event_control']);
const CGROUP_FILE = /^[a-z][a-z0-9_]*\.[a-z0-9_.]+$/;

/** Every interface file of every kubepods cgroup, each under raw/cgroup/<host path>. */
export async function captureCgroups(ctx: CaptureContext): Promise<void> {
  aborted(ctx);
  const fs = ctx.o.deps.hostFs;
  const t0 = performance.now();
  const section: Section = { kind: 'cgroup', name: 'kubepods cgroups', source: { file: '/sys/fs/cgroup/kubepods*' }, time: now(), ms: 0, bytes: 0, files: 0, redacted: 0 };
  ctx.sections.push(section);
  const warnings: string[] = [];
  const warn = (s: string) => {
    if (warnings.length < CAPTURE_LIMITS.maxWarnings) warnings.push(s.slice(0, 4000));
  };
  try {
    // the moment's walk: the cgroups the answers were built from
    const walked = await ctx.o.deps.cgroups.found({ names: false });
    for (const s of walked.warnings) warn(s);
    const found = walked.found;
    section.path = 'raw/cgroup/';
    for (const cg of found) {
      aborted(ctx);
      if (section.trimmed) break;
      const entries = await fs.readdir(cg.dir).catch((err: unknown) => {
        warn(`${cg.dir.hostPath}: ${errText(err)}`);
        return null;
      });
      if (!entries) continue;
      const names = entries.filter((e) => e.isFile() && CGROUP_FILE.test(e.name) && !CGROUP_SKIP.has(e.name)).map((e) => e.name).sort();
      const texts = await Promise.all(names.map((n) => fs.readIn(cg.dir, n, CAPTURE_LIMITS.cgroupFileBytes).catch(() => null)));
      for (let i = 0; i < names.length; i++) {
        const text = texts[i];
        if (text === null || text === undefined) continue; // write-only or gone
        if (!(await addFile(ctx, section, `raw/cgroup${cg.dir.hostPath}/${names[i]}`, redactText(text)))) break;
      }
    }
  } catch (err) {
    section.error = errText(err);
  }
  if (warnings.length) section.warnings = warnings;
  section.ms = Math.round(performance.now() - t0);
}

/**
 * The tail of each container's CRI log file: the runtime's logPath when the
 * container route gave one, kubelet's /var/log/containers link otherwise; opened
 * through HostFs within /var/log, never followed outside it.
 */
export async function capturePodLogs(ctx: CaptureContext, logs: Map<string, string | null>): Promise<void> {
  aborted(ctx);
  const fs = ctx.o.deps.hostFs;
  const podLogs = ctx.o.deps.podLogs;
  const t0 = performance.now();
  const section: Section = { kind: 'podlog', name: 'container log tails', source: { file: '/var/log/pods' }, time: now(), ms: 0, bytes: 0, files: 0, redacted: 0, path: 'raw/podlogs/' };
  ctx.sections.push(section);
  const warnings: string[] = [];
  for (const [id, known] of logs) {
    aborted(ctx);
    let logPath = known;
    try {
      logPath ??= (await podLogs.locateWithoutRuntime(id)).logPath;
      const fh = await fs.openFile(logPath, { within: '/var/log' });
      if (!fh) continue;
      let text: string;
      try {
        const { size } = await fh.stat();
        const start = Math.max(0, size - CAPTURE_LIMITS.podLogTailBytes);
        const buf = Buffer.alloc(Math.min(size, CAPTURE_LIMITS.podLogTailBytes));
        const { bytesRead } = await fh.read(buf, 0, buf.length, start);
        let b = buf.subarray(0, bytesRead);
        if (start > 0) b = b.subarray(b.indexOf(0x0a) + 1); // a whole first line
        // the free-text rules, as /v1/containers/{id}/logs gives each line (over the whole
        // tail, so a private-key block written over several lines goes too)
        text = redactLogText(b.toString('utf8'));
      } finally {
        await fh.close();
      }
      if (!(await addFile(ctx, section, `raw/podlogs/${id}.log`, text))) break;
    } catch (err) {
      if (warnings.length < CAPTURE_LIMITS.maxWarnings) warnings.push(`${id.slice(0, 13)}: ${errText(err)}`);
    }
  }
  if (warnings.length) section.warnings = warnings;
  section.ms = Math.round(performance.now() - t0);
}
