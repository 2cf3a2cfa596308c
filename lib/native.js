'use strict';
// Finds and loads the addon for this platform, and the worker binary shipped beside it: first in
// the package folder itself (a development build), then in the platform package
// (@supolka/codemode-executor-<platform>), the way napi-rs packages ship binaries.

const fs = require('node:fs');
const path = require('node:path');

function platformTag() {
  const { platform, arch } = process;
  if (platform === 'linux') {
    const glibc = typeof process.report?.getReport === 'function'
      ? Boolean(process.report.getReport().header.glibcVersionRuntime)
      : true;
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
  }
  return `${platform}-${arch}`;
}

let loaded = null;

/** @returns {{ binding: any, dir: string, tag: string }} */
function loadNative() {
  if (loaded) return loaded;
  const tag = platformTag();
  const file = `codemode-executor.${tag}.node`;
  const root = path.join(__dirname, '..');
  const tried = [];
  const local = path.join(root, file);
  tried.push(local);
  if (fs.existsSync(local)) {
    loaded = { binding: require(local), dir: root, tag };
    return loaded;
  }
  const pkg = `@supolka/codemode-executor-${tag}`;
  try {
    const resolved = require.resolve(`${pkg}/${file}`);
    loaded = { binding: require(resolved), dir: path.dirname(resolved), tag };
    return loaded;
  } catch (e) {
    tried.push(`${pkg}/${file} (${e.code || e.message})`);
  }
  const err = new Error(
    `The codemode-executor addon for ${tag} was not found. Looked in: ${tried.join('; ')}. ` +
      'Build it with `npm run build`, or install the platform package for this machine.',
  );
  err.code = 'ADDON_NOT_FOUND';
  throw err;
}

module.exports = { loadNative, platformTag };
