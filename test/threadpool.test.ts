/**
 * The agent process runs with a thread pool that stuck /proc and statfs calls cannot empty
 * (src/threadpool.ts): counted from the process's own threads, as the kernel lists them.
 * The built dist/cli.js, as shipped (npm ci builds it): under tsx the loader's own reads
 * may start the pool before the entry module runs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { DEFAULT_THREADPOOL_SIZE } from '../src/threadpool.js';
import { startAgentProcess } from './helpers/agent-process.js';

const poolThreads = (pid: number) =>
  readdirSync(`/proc/${pid}/task`).filter((tid) => {
    try {
      return readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim() === 'libuv-worker';
    } catch {
      return false; // a thread that ended meanwhile
    }
  }).length;

t.test('nodetruth serve starts libuv with 8 pool threads; an operator setting wins', async (t) => {
  const agent = await startAgentProcess(['--host-root', '/'], { dist: true, env: { UV_THREADPOOL_SIZE: undefined } });
  t.teardown(() => agent.stop());
  await fetch(`${agent.url}/v1/node`, { headers: { host: '127.0.0.1' } }); // file reads and statfs: the pool is up
  t.equal(poolThreads(agent.pid), DEFAULT_THREADPOOL_SIZE, "default");
  const own = await startAgentProcess(['--host-root', '/'], { dist: true, env: { UV_THREADPOOL_SIZE: '5' } });
  t.teardown(() => own.stop());
  await fetch(`${own.url}/v1/node`, { headers: { host: '127.0.0.1' } });
  t.equal(poolThreads(own.pid), 5, "operator");
});
