// BENCHMARKS.md sections written by other bench scripts (`<!-- section:NAME -->` … `<!-- /section:NAME -->`, or
// `<!-- NAME:start -->` … `<!-- NAME:end -->`): kept across rewrites.
import fs from 'node:fs';
import path from 'node:path';

const BLOCK = /<!-- section:([a-z0-9-]+) -->[\s\S]*?<!-- \/section:\1 -->\n?|<!-- ([a-z0-9-]+):start -->[\s\S]*?<!-- \2:end -->\n?/g;

/** The new document with every marked section of the old one carried over (appended at the end). */
export function keepSections(next: string, previous: string | undefined): string {
  if (!previous) return next;
  const blocks = [...previous.matchAll(BLOCK)].map((m) => m[0].trimEnd());
  return blocks.length ? `${next.trimEnd()}\n\n${blocks.join('\n\n')}\n` : next;
}

/** Replaces (or appends) one marked section. */
export function putSection(doc: string, name: string, body: string): string {
  const block = `<!-- section:${name} -->\n${body.trimEnd()}\n<!-- /section:${name} -->`;
  const re = new RegExp(`<!-- section:${name} -->[\\s\\S]*?<!-- /section:${name} -->`);
  return re.test(doc) ? doc.replace(re, block) : `${doc.trimEnd()}\n\n${block}\n`;
}

function checkName(name: string): void {
  if (!/^[a-z0-9-]+$/.test(name)) throw new Error(`bad section name: ${JSON.stringify(name)}`);
}

/** `body` between `<!-- NAME:start -->` and `<!-- NAME:end -->`, as written to BENCHMARKS.md. */
export function markedBlock(name: string, body: string): string {
  checkName(name);
  return `<!-- ${name}:start -->\n${body}\n<!-- ${name}:end -->`;
}

/** Replaces the `<!-- NAME:start -->` … `<!-- NAME:end -->` block of `doc` in place, or appends it when absent. */
export function putMarked(doc: string, name: string, body: string): string {
  const block = markedBlock(name, body);
  const re = new RegExp(`<!-- ${name}:start -->[\\s\\S]*?<!-- ${name}:end -->`);
  // A function, so that `$&`, `$1`… in the figures are not read as replacement patterns.
  if (re.test(doc)) return doc.replace(re, () => block);
  return doc.trim() ? `${doc.trimEnd()}\n\n${block}\n` : `${block}\n`;
}

/** putMarked on a file (created, with its directory, when missing). */
export function writeMarked(file: string, name: string, body: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const before = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  fs.writeFileSync(file, putMarked(before, name, body));
}
