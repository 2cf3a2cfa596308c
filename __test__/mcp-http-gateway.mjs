// The gateway over Streamable HTTP as its own process, for mcp-gateway and mcp-inspector tests.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { firstLine } from './mcp-helpers.mjs';

const bin = path.join(import.meta.dirname, '..', 'bin', 'codemode-executor.js');

/**
 * Starts `codemode-executor mcp` on 127.0.0.1, port chosen by the system, one worker, with
 * `config` and the token file `token.file` (written with `token.text` first): the child, once it
 * listens, and its URL.
 * @param {string} config
 * @param {{ file: string, text: string }} token
 */
export async function httpGateway(config, token) {
  fs.writeFileSync(token.file, token.text);
  const child = spawn(process.execPath, [bin, 'mcp', '--config', config, '--http', '0', '--token-file', token.file, '--workers', '1'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = (await firstLine(child)).replace('codemode-executor mcp listening on ', '');
  return { child, url };
}
