// Helpers of the MCP gateway's tests (mcp-gateway, mcp-inspector): the processes a gateway
// started (Linux /proc), and the line a child prints when it listens.

import fs from 'node:fs';

/** Every process this user can read, as { pid, ppid, cmdline }. */
function processes() {
  const out = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      out.push({ pid: Number(entry), ppid, cmdline: fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8') });
    } catch {}
  }
  return out;
}

/** The pids of processes whose parent is `ppid` and whose command line holds `needle`. */
export function children(ppid, needle) {
  return processes().filter((p) => p.ppid === ppid && p.cmdline.includes(needle)).map((p) => p.pid);
}

/** The pid of a process whose command line holds `needle` and whose parent's holds `parentNeedle`, or null. */
export function upstreamOf(parentNeedle, needle) {
  const all = processes();
  const byPid = new Map(all.map((p) => [p.pid, p]));
  return all.find((p) => p.cmdline.includes(needle) && byPid.get(p.ppid)?.cmdline.includes(parentNeedle))?.pid ?? null;
}

/** The first line a child prints on stdout. */
export function firstLine(child) {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before printing`)));
  });
}
