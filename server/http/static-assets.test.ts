// scripts/static-assets.mjs: the build's /_next/static/* answered from memory, compressed once; the rest left to Next.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { acceptedEncodings, BROTLI_QUALITY, staticAssets } from '../../scripts/static-assets.mjs';

const CHUNK = `console.log(${JSON.stringify('crosstalk '.repeat(2000))});\n`;

describe('static assets (scripts/static-assets.mjs)', () => {
  let dir: string;
  let server: http.Server;
  let base: string;
  let toNext = 0;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ct-static-'));
    fs.mkdirSync(path.join(dir, 'static', 'chunks'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'static', 'chunks', 'a.js'), CHUNK);
    fs.writeFileSync(path.join(dir, 'static', 'chunks', 'gone.js'), CHUNK);
    fs.writeFileSync(path.join(dir, 'secret.txt'), 'not an asset');
    const serve = staticAssets(path.join(dir, 'static'), { headers: { 'X-Frame-Options': 'DENY' } });
    server = http.createServer((req, res) =>
      serve(req, res, () => {
        toNext++;
        res.statusCode = 404;
        res.end('next');
      }),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const get = (p: string, headers: Record<string, string> = {}, method = 'GET') =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const req = http.request(base + p, { method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end();
    });

  it('answers brotli, gzip or identity as asked, immutable, with the given headers', async () => {
    const br = await get('/_next/static/chunks/a.js', { 'accept-encoding': 'gzip, deflate, br' });
    expect(br.status).toBe(200);
    expect(br.headers['content-encoding']).toBe('br');
    expect(zlib.brotliDecompressSync(br.body).toString()).toBe(CHUNK);
    expect(br.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(br.headers['content-type']).toBe('application/javascript; charset=UTF-8');
    expect(br.headers['x-frame-options']).toBe('DENY');
    expect(br.headers.vary).toBe('Accept-Encoding');
    const gz = await get('/_next/static/chunks/a.js', { 'accept-encoding': 'gzip, br;q=0' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(gz.body).toString()).toBe(CHUNK);
    const plain = await get('/_next/static/chunks/a.js');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body.toString()).toBe(CHUNK);
    const head = await get('/_next/static/chunks/a.js', { 'accept-encoding': 'br' }, 'HEAD');
    expect(head.body.length).toBe(0);
    expect(Number(head.headers['content-length'])).toBe(br.body.length);
    const again = await get('/_next/static/chunks/a.js', { 'if-none-match': br.headers.etag as string });
    expect(again.status).toBe(304);
    expect(toNext).toBe(0);
  });

  it('compresses with brotli quality 6: quality 9 took 55 times the CPU for 1.5% fewer bytes of a build', async () => {
    // Text that the two qualities compress differently (a repeated line would give the same bytes).
    let x = 1;
    const words = Array.from({ length: 6000 }, () => `v${(x = (x * 48271) % 2147483647) % 5000}`);
    const src = `export const t = ${JSON.stringify(words)};\n`;
    fs.writeFileSync(path.join(dir, 'static', 'chunks', 'words.js'), src);
    const r = await get('/_next/static/chunks/words.js', { 'accept-encoding': 'br' });
    expect(r.headers['content-encoding']).toBe('br');
    const at = (q: number) => zlib.brotliCompressSync(Buffer.from(src), { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: q, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: src.length } });
    expect(Buffer.compare(at(6), at(9))).not.toBe(0);
    expect(r.body.equals(at(6))).toBe(true);
    expect(BROTLI_QUALITY).toBe(6);
  });

  it('gzips only for a client that takes gzip and not brotli, once', async () => {
    fs.writeFileSync(path.join(dir, 'static', 'chunks', 'lazy.js'), CHUNK);
    const spy = vi.spyOn(zlib, 'gzip');
    try {
      const br = await get('/_next/static/chunks/lazy.js', { 'accept-encoding': 'gzip, deflate, br' });
      expect(br.headers['content-encoding']).toBe('br');
      expect((await get('/_next/static/chunks/lazy.js')).body.toString()).toBe(CHUNK);
      expect(spy).not.toHaveBeenCalled();
      const [a, b] = await Promise.all([1, 2].map(() => get('/_next/static/chunks/lazy.js', { 'accept-encoding': 'gzip' })));
      for (const r of [a, b]) {
        expect(r.headers['content-encoding']).toBe('gzip');
        expect(zlib.gunzipSync(r.body).toString()).toBe(CHUNK);
      }
      expect((await get('/_next/static/chunks/lazy.js', { 'accept-encoding': 'gzip' }, 'HEAD')).headers['content-length']).toBe(String(a.body.length));
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });

  it('keeps what it served in memory: compressed once, not read again', async () => {
    expect((await get('/_next/static/chunks/gone.js', { 'accept-encoding': 'br' })).status).toBe(200);
    fs.rmSync(path.join(dir, 'static', 'chunks', 'gone.js'));
    const r = await get('/_next/static/chunks/gone.js', { 'accept-encoding': 'br' });
    expect(r.status).toBe(200);
    expect(zlib.brotliDecompressSync(r.body).toString()).toBe(CHUNK);
  });

  it('leaves to Next what is not one of its files: missing, outside the directory, ranges, other methods', async () => {
    const before = toNext;
    expect((await get('/_next/static/chunks/missing.js')).body.toString()).toBe('next');
    expect((await get('/_next/static/..%2fsecret.txt')).body.toString()).toBe('next');
    expect((await get('/_next/static/%2e%2e/secret.txt')).body.toString()).toBe('next');
    expect((await get('/_next/static/chunks/a.js', { range: 'bytes=0-10' })).body.toString()).toBe('next');
    expect((await get('/_next/static/chunks/a.js', {}, 'POST')).body.toString()).toBe('next');
    expect((await get('/_next/static/%E0%A4%A')).body.toString()).toBe('next');
    expect(toNext - before).toBe(6);
  });

  it('reads Accept-Encoding with its q-values', () => {
    expect([...acceptedEncodings('gzip, deflate, br;q=0.5')]).toEqual(['gzip', 'deflate', 'br']);
    expect([...acceptedEncodings('br;q=0, gzip;q=0')]).toEqual([]);
    expect([...acceptedEncodings(undefined)]).toEqual([]);
  });
});
