// The build's immutable assets (GET /_next/static/*) from memory, each compressed once (brotli when loaded, gzip at the
// first request that takes gzip but not brotli; both on libuv's thread pool), instead of through Next's router, which
// compressed every chunk again on the event loop at every visit (~51 ms of server CPU per room load, issue 24.2).
// What is not a file here (or asks for a byte range) goes to Next.
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

const brotli = promisify(zlib.brotliCompress);
/** Through `zlib.gzip` at each call (not bound at import), so a test can count the calls. */
const gzip = (raw) => new Promise((resolve, reject) => zlib.gzip(raw, { level: 9 }, (err, out) => (err ? reject(err) : resolve(out))));

/**
 * Brotli's quality for the assets. Quality 9 (what this used) took 13.2 s of CPU for a build's 13.6 MB of chunks,
 * on libuv's pool on the first visits after each start (2–3 s for a room's first load, beside the runs streaming);
 * quality 6 takes 0.24 s for 1.5% more bytes (2.45 against 2.41 MB). BENCHMARKS.md 'Stop 45'.
 */
export const BROTLI_QUALITY = 6;

const TYPES = {
  '.js': 'application/javascript; charset=UTF-8',
  '.mjs': 'application/javascript; charset=UTF-8',
  '.css': 'text/css; charset=UTF-8',
  '.json': 'application/json; charset=UTF-8',
  '.map': 'application/json; charset=UTF-8',
  '.txt': 'text/plain; charset=UTF-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
};
const COMPRESSIBLE = new Set(['.js', '.mjs', '.css', '.json', '.map', '.txt', '.svg']);
const PREFIX = '/_next/static/';

/** The encodings a request accepts (q=0 excluded), from its Accept-Encoding header. */
export function acceptedEncodings(header) {
  const out = new Set();
  for (const part of String(header ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (name && !(q && Number(q.slice(2)) === 0)) out.add(name);
  }
  return out;
}

/**
 * A handler for `dir` (the build's .next/static): `(req, res, next)` answers from memory, or calls `next()` (Next's
 * own handler) for anything else. `headers`: set on every answer (the framing ban Next's config gives its responses).
 * At most `maxBytes` are kept; past that an asset is still served, just not kept.
 */
export function staticAssets(dir, { headers = {}, maxBytes = 32 << 20 } = {}) {
  const root = path.resolve(dir);
  /** Relative path → the asset as loaded and compressed (a promise: one load however many ask at once). */
  const cache = new Map();
  let kept = 0;

  async function load(file) {
    const st = await fs.promises.stat(file).catch(() => null);
    if (!st?.isFile()) return null;
    const raw = await fs.promises.readFile(file);
    const ext = path.extname(file).toLowerCase();
    const squeeze = COMPRESSIBLE.has(ext) && raw.length >= 512;
    // Gzip waits until a client takes gzip and not brotli (every browser the room supports takes brotli): gzip at level 9
    // of a build's chunks cost 0.39 s of the pool's CPU after each start, for nothing (BENCHMARKS.md 'Stop 46').
    const br = squeeze ? await brotli(raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }) : null;
    return {
      raw,
      br: br && br.length < raw.length ? br : null,
      /** The gzip body (null: not smaller than raw), as a promise made at the first request that takes gzip. */
      gzip: squeeze ? undefined : Promise.resolve(null),
      type: TYPES[ext] ?? 'application/octet-stream',
      etag: `W/"${raw.length.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`,
      modified: st.mtime.toUTCString(),
      size: raw.length + (br?.length ?? 0),
      /** Whether the cache holds it (what it holds counts against `maxBytes`). */
      kept: false,
    };
  }

  /** The asset's gzip body, made once and kept with it while `maxBytes` has room (else made again when asked). */
  function gzipOf(a) {
    if (a.gzip) return a.gzip;
    const p = gzip(a.raw).then(
      (gz) => {
        const body = gz.length < a.raw.length ? gz : null;
        if (body && a.kept) {
          if (kept + body.length > maxBytes) a.gzip = undefined;
          else kept += body.length;
        }
        return body;
      },
      () => ((a.gzip = undefined), null),
    );
    a.gzip = p;
    return p;
  }

  function assetFor(rel) {
    let p = cache.get(rel);
    if (p) return p;
    p = load(path.join(root, rel)).then(
      (a) => {
        // Missing files are not kept (nor is what would pass the cap): asked again, they are looked for again.
        if (!a || kept + a.size > maxBytes) cache.delete(rel);
        else {
          kept += a.size;
          a.kept = true;
        }
        return a;
      },
      () => (cache.delete(rel), null),
    );
    cache.set(rel, p);
    return p;
  }

  return function serveStatic(req, res, next) {
    const url = req.url ?? '';
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !url.startsWith(PREFIX) || req.headers.range) return next();
    let rel;
    try {
      rel = decodeURIComponent(url.slice(PREFIX.length).split('?')[0]);
    } catch {
      return next();
    }
    const file = path.resolve(root, rel);
    if (!rel || rel.includes('\0') || !file.startsWith(root + path.sep)) return next();
    assetFor(path.relative(root, file))
      .then(async (a) => {
        if (!a) return next();
        for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
        res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
        res.setHeader('ETag', a.etag);
        res.setHeader('Last-Modified', a.modified);
        res.setHeader('Content-Type', a.type);
        res.setHeader('Vary', 'Accept-Encoding');
        if (req.headers['if-none-match'] === a.etag) {
          res.statusCode = 304;
          return res.end();
        }
        const ok = acceptedEncodings(req.headers['accept-encoding']);
        const gz = !(a.br && ok.has('br')) && ok.has('gzip') ? await gzipOf(a) : null;
        const [body, encoding] = a.br && ok.has('br') ? [a.br, 'br'] : gz ? [gz, 'gzip'] : [a.raw, null];
        if (encoding) res.setHeader('Content-Encoding', encoding);
        res.setHeader('Content-Length', body.length);
        res.end(req.method === 'HEAD' ? undefined : body);
      })
      .catch(() => (res.headersSent ? res.destroy() : next()));
  };
}
