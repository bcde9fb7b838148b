// Developer tool: boot the node guest (image from the cache, built if missing), run each
// argument as a shell script in it, print the output, stop the VM.
//   node --import tsx test/e2e-host/shell.ts 'systemctl status containerd' 'ls /sys/fs/cgroup'
// With --keep it waits for Enter (or SIGINT) before stopping, printing the run directory.
import { ensureImage } from './image.js';
import { NodeVm } from '../e2e/vm.js';

const args = process.argv.slice(2);
const keep = args.includes('--keep');
const scripts = args.filter((a) => a !== '--keep');
const vm = new NodeVm({ ...(await ensureImage()), suite: 'bookworm' });
process.once('SIGINT', () => {
  vm.killNow();
  process.exit(130);
});
try {
  await vm.boot();
  for (const s of scripts) {
    const r = await vm.exec(s, 600);
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
