// The system's own programs the server starts others through (util-linux's setpriv and unshare, coreutils' timeout), found once on first use.
import fs from 'node:fs';

/** An executable regular file (what spawn can run). */
export function isExecutableFile(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

const found = new Map<string, string | null>();

/** `/usr/bin/<name>` or `/bin/<name>`, looked up at the first call and remembered; null where neither is there. */
export function systemBinary(name: 'setpriv' | 'timeout' | 'unshare'): string | null {
  let bin = found.get(name);
  if (bin === undefined) {
    bin = [`/usr/bin/${name}`, `/bin/${name}`].find(isExecutableFile) ?? null;
    found.set(name, bin);
  }
  return bin;
}
