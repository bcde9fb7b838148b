import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

/**
 * Command-line flags as every command reads them: positionals allowed, unknown flags
 * refused, and parseArgs' own error rethrown as the command's usage error (which
 * prints the usage and exits 2) instead of escaping as an unexpected one.
 */
export function parseFlags<O extends ParseArgsOptionsConfig>(argv: string[], options: O, usageError: (message: string) => Error) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, strict: true, options });
  } catch (err) {
    throw usageError((err as Error).message);
  }
}

/**
 * Whether argv gives flag `name` (`--name`, `--name=v`), read as parseFlags reads argv:
 * for choosing a command's mode (serve --bundle) before its own flags are known.
 */
export function givesFlag(argv: string[], name: string): boolean {
  const { tokens } = parseArgs({ args: argv, allowPositionals: true, strict: false, tokens: true });
  return tokens.some((t) => t.kind === 'option' && t.name === name);
}
