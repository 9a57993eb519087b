// The trust keys of `channels.<name>` (dmPolicy, allowFrom, approvers), checked at start; below config and pairing.
import { z } from 'zod';

export const dmPolicySchema = z.enum(['pairing', 'allowlist', 'open']);
export type DmPolicy = z.infer<typeof dmPolicySchema>;

/** The trust keys of `channels.<name>` (and of its `accounts.<id>`); the channel's own schema checks the rest. */
export const channelTrustSchema = z.object({
  dmPolicy: dmPolicySchema.optional(),
  allowFrom: z.array(z.union([z.string().min(1).max(256), z.number().int()]).transform(String)).max(10_000).optional(),
  /** Who decides tool approvals in chat (never "*": deciding is not something to hand to everyone who can write). */
  approvers: z
    .array(z.union([z.string().min(1).max(256), z.number().int()]).transform(String))
    .max(1_000)
    .refine((l) => !l.includes('*'), { message: '"*" is not allowed: list the peer ids who may decide approvals' })
    .optional(),
});

/** Checks the trust keys of every configured channel; the message names the bad key (a config error at start). */
export function checkChannelTrustConfig(channels: Record<string, Record<string, unknown>>): string | null {
  for (const [id, c] of Object.entries(channels)) {
    const r = channelTrustSchema.safeParse(c);
    if (!r.success) {
      const issue = r.error.issues[0]!;
      return `bad key "channels.${id}.${issue.path.join('.')}": ${issue.message}`;
    }
    // The trust keys are the channel's: under `accounts.<id>` they were accepted and never read (an `approvers: ["*"]`
    // there passed the start, a per-account allowlist admitted no one it named). Said at start instead.
    const accounts = c.accounts;
    if (accounts && typeof accounts === 'object') {
      for (const [acc, a] of Object.entries(accounts as Record<string, unknown>)) {
        const key = a && typeof a === 'object' ? TRUST_KEYS.find((k) => k in (a as object)) : undefined;
        if (key) return `bad key "channels.${id}.accounts.${acc}.${key}": who may talk and who may approve are set per channel, not per account: set it on channels.${id}`;
      }
    }
  }
  return null;
}

const TRUST_KEYS = Object.keys(channelTrustSchema.shape);

/**
 * Checks every configured channel's settings at start, as its plugin reads them on each send and inbound message:
 * `schemaOf(id)` (the plugin's schema with the shared keys) plus the trust keys, unknown keys refused (with the key
 * meant, for a near miss such as `allowfrom`), and `agentId` naming a configured agent; each `accounts.<id>` merged
 * over the channel's own keys, as resolveChannelConfig (server/channels/delivery.ts) merges them. Null when all pass,
 * else the message naming the key path.
 */
export function checkChannelSettings(channels: Record<string, Record<string, unknown>>, o: { schemaOf: (id: string) => z.ZodObject; agentIds: readonly string[] }): string | null {
  const trust = checkChannelTrustConfig(channels);
  if (trust) return trust;
  for (const [id, c] of Object.entries(channels)) {
    const schema = o.schemaOf(id).extend(channelTrustSchema.shape).strict();
    // `at(path)`: the key path as the user wrote it (an account's own keys under `accounts.<id>`).
    const bad = (v: Record<string, unknown>, at: (path: PropertyKey[]) => string) => {
      const r = schema.safeParse(v);
      if (!r.success) {
        const issue = r.error.issues[0]!;
        if (issue.code === 'unrecognized_keys') {
          const key = issue.keys[0]!;
          const near = nearKey(key, Object.keys(schema.shape));
          return `bad key "${at([...issue.path, key])}": unknown key${near ? ` (did you mean ${near}?)` : ''}`;
        }
        return `bad key "${at(issue.path)}": ${issue.message}`;
      }
      const agentId = (r.data as { agentId?: string }).agentId;
      if (agentId !== undefined && !o.agentIds.includes(agentId)) return `bad key "${at(['agentId'])}": no agent "${agentId}" (agents: ${o.agentIds.join(', ')})`;
      return null;
    };
    const own = bad(c, (p) => ['channels', id, ...p].map(String).join('.'));
    if (own) return own;
    for (const [acc, a] of Object.entries((c.accounts ?? {}) as Record<string, Record<string, unknown>>)) {
      const merged = bad({ ...c, ...a }, (p) => (typeof p[0] === 'string' && Object.hasOwn(a, p[0]) ? ['channels', id, 'accounts', acc, ...p] : ['channels', id, ...p]).map(String).join('.'));
      if (merged) return merged;
    }
  }
  return null;
}

/** The allowed key a misspelt one most likely meant: the same but for case, or at most two edits away. */
function nearKey(key: string, allowed: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  return allowed.find((k) => k.toLowerCase() === lower) ?? (key.length > 3 ? allowed.find((k) => editDistance(k.toLowerCase(), lower) <= 2) : undefined);
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}
