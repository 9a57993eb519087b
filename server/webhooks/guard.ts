// Webhook URL guard: http(s) only, and no loopback/private/link-local targets unless config allows them (SSRF).
import dns from 'node:dns/promises';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import net from 'node:net';
import { Agent } from 'undici';

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
  // IETF protocol assignments, the documentation ranges (TEST-NET-1/2/3: a lab or container network may use them for
  // its own hosts, 192.0.2.0/24 did on a machine here) and the retired 6to4 relay anycast: none is a public host.
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(addr, prefix, 'ipv4');
for (const [addr, prefix] of [
  ['::', 128],
  ['::1', 128],
  // NAT64 (RFC 6052 well-known and local-use prefixes) and 6to4 embed an IPv4 address that may be private.
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['2002::', 16],
  // Teredo, IPv4-compatible (deprecated), discard-only and documentation ranges.
  ['2001::', 32],
  ['::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['3fff::', 20], // documentation (RFC 9637)
  // IPv4-translated (SIIT: embeds an IPv4 address, maybe a private one), benchmarking, ORCHID v1/v2, SRv6 SIDs and the
  // retired site-local range: none is a public host.
  ['::ffff:0:0:0', 96],
  ['2001:2::', 48],
  ['2001:10::', 28],
  ['2001:20::', 28],
  ['5f00::', 16],
  ['fec0::', 10],
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

/** The addresses a host stands for: itself when it is an IP address, else what DNS answers; null when it does not resolve. */
export async function hostAddresses(host: string): Promise<string[] | null> {
  if (net.isIP(host)) return [host];
  try {
    return (await dns.lookup(host, { all: true })).map((a) => a.address);
  } catch {
    return null;
  }
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
  const addrs = await hostAddresses(host);
  if (!addrs) return `webhook host ${host} does not resolve`;
  if (addrs.some(isPrivateAddress)) return `webhook url points at a private or loopback address (${host}); set webhooks.allowPrivateNetwork to allow it`;
  return null;
}

/**
 * An undici dispatcher whose connections go only to the addresses its own lookup checked: the name is resolved once,
 * at connect time, and a private answer fails the connection (no second resolution for DNS rebinding to slip into).
 */
export function guardedDispatcher(allowPrivateNetwork: boolean): Agent {
  return new Agent({
    connect: {
      lookup(hostname, options, callback) {
        dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
          if (err) return callback(err, '', 0);
          const list = addresses as unknown as LookupAddress[];
          const bad = !allowPrivateNetwork && list.find((a) => isPrivateAddress(a.address));
          if (bad) {
            const e = Object.assign(new Error(`webhook host ${hostname} resolved to a private or loopback address (${bad.address})`), { code: 'EPRIVATEADDR' });
            return callback(e, '', 0);
          }
          if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
          callback(null, list[0]!.address, list[0]!.family);
        });
      },
    },
  });
}

const shared = new Map<boolean, Agent>();

/** One guardedDispatcher per setting for the process (remote A2A agents, MCP OAuth): its connections are pooled. */
export function sharedGuardedDispatcher(allowPrivateNetwork: boolean): Agent {
  let d = shared.get(allowPrivateNetwork);
  if (!d) shared.set(allowPrivateNetwork, (d = guardedDispatcher(allowPrivateNetwork)));
  return d;
}
