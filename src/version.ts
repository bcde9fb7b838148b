import { readFileSync } from 'node:fs';

/** package.json sits one level above both src/version.ts and dist/version.js. */
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
export const VERSION: string = pkg.version;
