import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { keepSections, putMarked, putSection, writeMarked } from './sections';

const doc = [
  '# Benchmarks',
  '',
  'intro',
  '',
  '<!-- jobs:start -->',
  'old jobs',
  '<!-- jobs:end -->',
  '',
  '<!-- section:context -->',
  'context body',
  '<!-- /section:context -->',
  '',
  'tail text',
  '',
].join('\n');

describe('putMarked', () => {
  it('replaces an existing block in place and leaves the rest untouched', () => {
    const next = putMarked(doc, 'jobs', 'new jobs\nsecond line');
    expect(next).toBe(doc.replace('old jobs', 'new jobs\nsecond line'));
  });

  it('appends the block when absent, keeping the document as it was', () => {
    const next = putMarked(doc, 'cluster', 'cluster body');
    expect(next).toBe(`${doc.trimEnd()}\n\n<!-- cluster:start -->\ncluster body\n<!-- cluster:end -->\n`);
    expect(putMarked('', 'cluster', 'x')).toBe('<!-- cluster:start -->\nx\n<!-- cluster:end -->\n');
  });

  it('replaces only its own block, and takes `$` in the body literally', () => {
    const two = putMarked(putMarked(doc, 'cluster', 'c1'), 'jobs', 'cost $& and $1');
    expect(two).toContain('<!-- jobs:start -->\ncost $& and $1\n<!-- jobs:end -->');
    expect(two).toContain('<!-- cluster:start -->\nc1\n<!-- cluster:end -->');
    expect(two.match(/<!-- jobs:start -->/g)).toHaveLength(1);
    expect(putMarked(two, 'cluster', 'c2')).toBe(two.replace('\nc1\n', '\nc2\n'));
  });

  it('refuses a name that would not be a marker', () => {
    expect(() => putMarked(doc, 'a.*', 'x')).toThrow(/bad section name/);
  });
});

describe('writeMarked', () => {
  it('creates the file and its directory, then replaces the block on the next write', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sections-'));
    try {
      const file = path.join(dir, 'nested', 'BENCHMARKS.md');
      writeMarked(file, 'jobs', 'first');
      expect(fs.readFileSync(file, 'utf8')).toBe('<!-- jobs:start -->\nfirst\n<!-- jobs:end -->\n');
      fs.writeFileSync(file, `# head\n\n${fs.readFileSync(file, 'utf8')}\nafter\n`);
      writeMarked(file, 'jobs', 'second');
      expect(fs.readFileSync(file, 'utf8')).toBe('# head\n\n<!-- jobs:start -->\nsecond\n<!-- jobs:end -->\n\nafter\n');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('keepSections', () => {
  it('carries both marker styles over to the new document', () => {
    const previous = putSection(putMarked(doc, 'cluster', 'cluster body'), 'room', 'room body');
    const next = keepSections('# Benchmarks\n\nfresh\n', previous);
    expect(next).toBe(
      [
        '# Benchmarks',
        '',
        'fresh',
        '',
        '<!-- jobs:start -->\nold jobs\n<!-- jobs:end -->',
        '',
        '<!-- section:context -->\ncontext body\n<!-- /section:context -->',
        '',
        '<!-- cluster:start -->\ncluster body\n<!-- cluster:end -->',
        '',
        '<!-- section:room -->\nroom body\n<!-- /section:room -->',
        '',
      ].join('\n'),
    );
    expect(keepSections('fresh\n', undefined)).toBe('fresh\n');
  });
});
