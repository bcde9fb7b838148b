// Developer tool: boot the node guest (image from the cache, built if missing), run each
// argument as a shell script in it, print the output, stop the VM.
//   node --import tsx test/e2e/shell.ts 'systemctl status containerd' 'ls /sys/fs/cgroup'
// Options (before or between the scripts):
//   --suite=sid          the guest (default bookworm)
//   --drive=<file>       a host file as a read-only raw disk: /dev/vdb, then /dev/vdc, …
//   --cache=<mode>       qemu's cache mode for the overlay disk (e.g. unsafe)
//   --keep               wait for Enter (or SIGINT) before stopping, printing the run directory
import { ensureImage, type Suite } from './image.js';
import { NodeVm } from './vm.js';

const args = process.argv.slice(2);
const opt = (name: string): string[] => args.filter((a) => a.startsWith(`--${name}=`)).map((a) => a.slice(name.length + 3));
const keep = args.includes('--keep');
const scripts = args.filter((a) => !a.startsWith('--'));
const vm = new NodeVm(await ensureImage((opt('suite')[0] as Suite | undefined) ?? 'bookworm'));
vm.readonlyDrives = opt('drive');
vm.overlayCache = opt('cache')[0];
process.once('SIGINT', () => {
  vm.killNow();
  process.exit(130);
});
try {
  await vm.boot();
  process.stdout.write(`[guest ready in ${vm.bootMs} ms]\n`);
  for (const s of scripts) {
    const r = await vm.exec(s, 1800);
    process.stdout.write(`$ ${s}\n${r.out}[exit ${r.rc}, ${r.ms} ms]\n`);
  }
  if (keep) {
    process.stdout.write(`guest running: share ${vm.shareDir}, host port ${vm.hostPort}; press Enter to stop\n`);
    await new Promise((res) => process.stdin.once('data', res));
  }
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  console.error(vm.where());
  process.exitCode = 1;
} finally {
  await vm.stop();
  process.stdin.pause();
}
