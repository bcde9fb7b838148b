import { JournalSource } from '../sources/journal/journalctl.js';
import { KernelLog } from '../sources/kmsg/kernel-log.js';
import { KmsgReader } from '../sources/kmsg/reader.js';
import { OomSource } from '../sources/oom/oom.js';
import { PodLogs } from '../sources/podlogs/podlogs.js';
import type { AppDeps } from './deps.js';

/** The log-area sources, built once per AppDeps from its config and host root. */
export interface LogSources {
  journal: JournalSource;
  kmsg: KmsgReader;
  kernel: KernelLog;
  oom: OomSource;
  podLogs: PodLogs;
}

const built = new WeakMap<AppDeps, LogSources>();

export function logSources(deps: AppDeps): LogSources {
  let s = built.get(deps);
  if (!s) {
    const journal = new JournalSource({ hostFs: deps.hostFs, journalctl: deps.config.journalctl });
    const kmsg = new KmsgReader(deps.hostFs, deps.config.kmsgPath);
    s = {
      journal,
      kmsg,
      kernel: new KernelLog(kmsg, deps.hostFs, journal),
      oom: new OomSource(kmsg, journal, deps.hostFs),
      podLogs: new PodLogs(deps.hostFs),
    };
    built.set(deps, s);
  }
  return s;
}
