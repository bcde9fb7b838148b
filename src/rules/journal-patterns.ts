/** Phrases of kubelet's journal lines as data; triage/rules/journal.ts applies them. */

/**
 * A phrase a kubelet line contains: a literal, or literals in this order with anything
 * between them (what `A.*B` meant as a regex). Matched with indexOf, so a hostile
 * message (tenants' pod names, images and container errors reach kubelet's log) costs
 * linear time: the regex form `PLEG.*relist` took 18 s over 20,000 lines of `PLEGPLEG…`.
 */
export type Phrase = string | readonly string[];

export interface JournalPattern {
  /** the finding id (findings.ts holds its severity and text) */
  id: string;
  /** the line matches when it contains any of these */
  phrases: readonly Phrase[];
  /**
   * a matching line that also holds one of these is what every kubelet logs from its start
   * until its first success: it counts only while one kubelet process logs such lines for
   * longer than thresholds.ts's kubeletStartupSeconds
   */
  untilFirstSuccess?: readonly Phrase[];
}

/** Only this much of a message is searched: klog puts the error first; the rest is tenant-controlled detail. */
export const JOURNAL_MATCH_PREFIX = 1024;

/**
 * kubelet journal lines that mean trouble, matched on klog E/W/F lines only
 * (journald stores kubelet's stderr as PRIORITY 6; the klog letter is the severity).
 */
export const KUBELET_JOURNAL_PATTERNS: readonly JournalPattern[] = [
  {
    id: 'kubelet-image-pull-errors',
    phrases: [
      'ErrImagePull',
      'ImagePullBackOff',
      'Failed to pull image',
      'failed to pull image',
      'Failed to pull and unpack image',
      'failed to pull and unpack image',
      'failed to resolve reference',
      'pull access denied',
    ],
  },
  {
    id: 'kubelet-sandbox-network-errors',
    phrases: [
      'failed to set up network',
      'failed to setup network',
      'failed to setup network for sandbox',
      ['failed to set up sandbox container ', ' network'],
      'NetworkPluginNotReady',
      'cni plugin not initialized',
      'networkPlugin cni failed',
      'failed to find plugin',
      'failed to load plugin',
      'CNI failed',
      ['plugin type="', '" failed'],
    ],
  },
  {
    id: 'kubelet-pleg-unhealthy',
    phrases: ['PLEG is not healthy', ['PLEG', 'relist'], 'pleg was last seen active'],
    untilFirstSuccess: ['pleg has yet to be successful'],
  },
  {
    id: 'kubelet-runtime-not-ready',
    phrases: [
      'Container runtime is down',
      'container runtime is down',
      'Container runtime not ready',
      'container runtime not ready',
      'Container runtime status check may not have completed',
      'container runtime status check may not have completed',
      'ContainerRuntimeNotReady',
      'runtime not ready',
      'RuntimeReady=false',
      'rpc error: code = Unavailable desc = connection error',
    ],
    untilFirstSuccess: ['status check may not have completed yet'],
  },
  {
    // kubelet 1.36's lines when the API server answers 401 (an expired or foreign client
    // certificate, a revoked token): the status text alone, `err="Unauthorized"` or after the
    // call (`failed to list *v1.Node: Unauthorized"`). A registry's 401 reads "401 Unauthorized".
    id: 'kubelet-api-unauthorized',
    phrases: ['err="Unauthorized"', ': Unauthorized"', 'webhook authorizer request: Unauthorized'],
  },
];
