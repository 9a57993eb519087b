// A path with its symlinks resolved as far as it exists: where a folder not made yet would really be (config's data-dir check, exec's cwd check).
import fs from 'node:fs';
import path from 'node:path';

/** `p` with the symlinks of its longest existing prefix resolved, the rest (not made yet) appended as written. */
export function realPrefix(p: string): string {
  const rest: string[] = [];
  for (let d = p; ; d = path.dirname(d)) {
    try {
      return path.join(fs.realpathSync(/* turbopackIgnore: true */ d), ...rest.reverse());
    } catch {
      if (d === path.dirname(d)) return p;
      rest.push(path.basename(d));
    }
  }
}
