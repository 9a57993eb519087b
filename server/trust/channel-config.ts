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
