// BENCHMARKS.md sections written by other bench scripts (`<!-- section:NAME -->` … `<!-- /section:NAME -->`, or
// `<!-- NAME:start -->` … `<!-- NAME:end -->`): kept across rewrites.

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
