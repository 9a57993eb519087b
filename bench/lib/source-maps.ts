// A profile's call frames in the built server's chunks (.next/server/chunks/*.js, minified) mapped back to the
// sources through the chunks' .map files: `src/file.ts:line` and the original name where the map has it.
import fs from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

const maps = new Map<string, SourceMap | null>();

function mapOf(url: string): SourceMap | null {
  if (!maps.has(url)) {
    let m: SourceMap | null = null;
    try {
      const file = url.startsWith('file://') ? fileURLToPath(url) : url;
      if (file.includes('/.next/') && fs.existsSync(`${file}.map`)) m = new SourceMap(JSON.parse(fs.readFileSync(`${file}.map`, 'utf8')));
    } catch {
      m = null;
    }
    maps.set(url, m);
  }
  return maps.get(url)!;
}

/** The frame's place in the sources (0-based line and column, as V8's profiles give them), or null if unmapped. */
export function originalFrame(url: string, line: number, column: number): { url: string; line: number; name?: string } | null {
  const m = url ? mapOf(url) : null;
  if (!m) return null;
  const e = m.findEntry(line, column) as { originalSource?: string; originalLine?: number; name?: string };
  if (!e?.originalSource) return null;
  const src = e.originalSource.replace(/^.*?\/(server|app|lib|node_modules)\//, '$1/').replace(/^turbopack:\/\/\/\[project\]\//, '');
  return { url: src, line: (e.originalLine ?? 0) + 1, ...(e.name ? { name: e.name } : {}) };
}
