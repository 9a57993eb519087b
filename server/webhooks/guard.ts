// Webhook URL guard: http(s) only, and no loopback/private/link-local targets unless config allows them (SSRF).
import dns from 'node:dns/promises';
import net from 'node:net';

const blocked = new net.BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(addr, prefix, 'ipv4');
for (const [addr, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(addr, prefix, 'ipv6');

export function isPrivateAddress(ip: string): boolean {
  const v4mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (v4mapped) return blocked.check(v4mapped[1]!, 'ipv4');
  const family = net.isIP(ip);
  if (!family) return true;
  return blocked.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/** null when the URL may be called; otherwise the reason it may not. */
export async function checkWebhookUrl(raw: string, allowPrivateNetwork: boolean): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'webhook url does not parse';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'webhook url must be http(s)';
  if (url.username || url.password) return 'webhook url must not carry credentials';
  if (allowPrivateNetwork) return null;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addrs: string[];
  if (net.isIP(host)) addrs = [host];
  else {
    try {
      addrs = (await dns.lookup(host, { all: true })).map((a) => a.address);
    } catch {
      return `webhook host ${host} does not resolve`;
    }
  }
  if (addrs.some(isPrivateAddress)) return `webhook url points at a private or loopback address (${host}); set webhooks.allowPrivateNetwork to allow it`;
  return null;
}
