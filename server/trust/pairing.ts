// Channel senders admitted by `dmPolicy` (CONTRACT §5 "Trust"): pairing codes, held messages, pairings.list / resolve.
import crypto from 'node:crypto';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { channelTrustSchema, type DmPolicy } from './channel-config';
import type { CrosstalkConfig } from '../config';
import { CrosstalkError } from '../errors';
import { asciiLower } from '../ascii-case';
import type { Logger } from '../logger';
import type { InboundMessage } from '../channels/types';
import { nowIso, type Store } from '../store/store';
import type { Database } from '../store/schema';
import { expirePairings, pairingCutoff } from '../store/retention';

/** Held messages kept per sender, and senders waiting per channel: beyond these, more is dropped (and logged). */
export const MAX_HELD_PER_SENDER = 20;
export const MAX_PENDING_PER_CHANNEL = 200;

export interface SenderRule {
  policy: DmPolicy;
  allowFrom: Set<string>;
}

export function senderRule(config: CrosstalkConfig, channel: string): SenderRule {
  const raw = channelTrustSchema.safeParse(config.channels[channel] ?? {});
  const c = raw.success ? raw.data : {};
  return { policy: c.dmPolicy ?? 'pairing', allowFrom: new Set((c.allowFrom ?? []).map((s) => asciiLower(s))) };
}

/** `channels.<name>.approvers` as configured (the platform's ids, compared case-insensitively); empty when none are. */
export function approversOf(config: CrosstalkConfig, channel: string): string[] {
  const raw = channelTrustSchema.safeParse(config.channels[channel] ?? {});
  return raw.success ? (raw.data.approvers ?? []) : [];
}

// No 0/O, 1/I/L: read aloud or typed from a phone without mistakes.
const CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
export function newPairingCode(): string {
  let code = '';
  for (const b of crypto.randomBytes(8)) code += CODE_ALPHABET[b % CODE_ALPHABET.length];
  return code;
}

export type Admission = { kind: 'admit' } | { kind: 'held'; code: string; firstRequest: boolean } | { kind: 'drop'; reason: string };

/**
 * Whether a sender's message may run. Under `pairing` an unknown sender's message is held and a pending request
 * (with its code) is recorded once; the caller tells the sender the code when `firstRequest` is true. `heldWith` runs in
 * the transaction that holds the message (the inbound gate's settle): false there rolls the hold back, and the message
 * is dropped as handled elsewhere.
 */
export async function admit(
  store: Store,
  log: Logger,
  rule: SenderRule,
  channel: string,
  agentId: string,
  msg: InboundMessage,
  heldWith?: (tx: Kysely<Database>) => Promise<boolean>,
): Promise<Admission> {
  const peer = msg.from;
  if (rule.policy === 'open' || rule.allowFrom.has('*') || rule.allowFrom.has(asciiLower(peer))) return { kind: 'admit' }; // \u212Aate is not kate
  if (rule.policy === 'allowlist') return { kind: 'drop', reason: 'sender not in allowFrom' };
  const db = store.db;
  let sender = await db.selectFrom('channel_senders').selectAll().where('channel', '=', channel).where('peer', '=', peer).executeTakeFirst();
  if (sender?.status === 'approved') return { kind: 'admit' };
  if (sender?.status === 'denied') return { kind: 'drop', reason: 'sender was denied' };
  let firstRequest = false;
  const live = pairingCutoff();
  if (sender?.status === 'pending' && sender.requested_at < live) {
    // Their request expired (with the messages held for it): this message asks again, with a new code.
    await expirePairings(store, live, { channel, peer });
    sender = undefined;
  }
  if (!sender) {
    // Only live requests count: expired ones cannot block new senders.
    const waiting = await db
      .selectFrom('channel_senders')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .where('channel', '=', channel)
      .where('status', '=', 'pending')
      .where('requested_at', '>=', live)
      .executeTakeFirst();
    if (Number(waiting?.n ?? 0) >= MAX_PENDING_PER_CHANNEL) return { kind: 'drop', reason: 'too many pairing requests pending' };
    // Insert-if-absent is the claim: of two first messages at once, one records the request and sends the code.
    const res = await db
      .insertInto('channel_senders')
      .values({ channel, peer, status: 'pending', code: newPairingCode(), first_message: msg.text.slice(0, 500), requested_at: nowIso(), resolved_at: null })
      .onConflict((oc) => oc.columns(['channel', 'peer']).doNothing())
      .executeTakeFirst();
    firstRequest = Number(res.numInsertedOrUpdatedRows ?? 0) === 1;
    sender = await db.selectFrom('channel_senders').selectAll().where('channel', '=', channel).where('peer', '=', peer).executeTakeFirstOrThrow();
    if (sender.status === 'approved') return { kind: 'admit' };
  }
  const held = await db.selectFrom('channel_held').select((eb) => eb.fn.countAll<string | number>().as('n')).where('channel', '=', channel).where('peer', '=', peer).executeTakeFirst();
  if (Number(held?.n ?? 0) >= MAX_HELD_PER_SENDER) {
    log.warn({ channel, peer }, 'held message dropped: the sender has too many waiting for pairing');
    return { kind: 'drop', reason: 'too many held messages' };
  }
  // The hold and the message's gate settle in one transaction: a process killed between the two (while the code was
  // being sent) left the gate to be taken over by the platform's redelivery, which held the message again, and it ran
  // twice once the sender was approved (probe V).
  const NOT_MINE = Symbol('not mine');
  try {
    await db.transaction().execute(async (tx) => {
      await tx.insertInto('channel_held').values({ channel, peer, agent_id: agentId, message: JSON.stringify(msg), created_at: nowIso() }).execute();
      if (heldWith && !(await heldWith(tx))) throw NOT_MINE;
    });
  } catch (e) {
    if (e === NOT_MINE) return { kind: 'drop', reason: 'the message is held already' };
    throw e;
  }
  return { kind: 'held', code: sender.code, firstRequest };
}

/** The text a new sender gets back with their code. */
export const pairingNotice = (code: string) =>
  `This assistant only answers approved senders. Your pairing code is ${code}. Ask its operator to approve it; your messages are kept until then.`;

export interface PairingInfo {
  channel: string;
  peer: string;
  code: string;
  firstMessage: string;
  requestedAt: string;
}

export async function listPairings(store: Store): Promise<PairingInfo[]> {
  const rows = await store.db.selectFrom('channel_senders').selectAll().where('status', '=', 'pending').where('requested_at', '>=', pairingCutoff()).orderBy('requested_at').orderBy('channel').orderBy('peer').limit(1000).execute();
  return rows.map((r) => ({ channel: r.channel, peer: r.peer, code: r.code, firstMessage: r.first_message, requestedAt: r.requested_at }));
}

export const pairingsResolveParams = z
  .object({
    channel: z.string().trim().min(1).max(64).transform((s) => s.toLowerCase()),
    code: z.string().trim().min(1).max(64).transform((s) => s.toUpperCase()),
    decision: z.enum(['approve', 'deny']),
  })
  .strict();
export type PairingsResolveParams = z.input<typeof pairingsResolveParams>;

/**
 * Settles a pending request. Approve makes the sender allowed and hands back their held messages, oldest first
 * (the caller runs them); deny drops them. A second resolve is `already_resolved`.
 */
export async function resolvePairing(store: Store, p: z.output<typeof pairingsResolveParams>): Promise<{ channel: string; peer: string; held: Array<{ id: number; agentId: string; message: InboundMessage }> }> {
  const db = store.db;
  const row = await db.selectFrom('channel_senders').selectAll().where('channel', '=', p.channel).where('code', '=', p.code).executeTakeFirst();
  if (!row) throw new CrosstalkError('invalid_request', `no pairing request with code ${p.code} on channel ${p.channel}`, [{ path: 'code', message: 'no such pairing code' }]);
  const res = await db
    .updateTable('channel_senders')
    .set({ status: p.decision === 'approve' ? 'approved' : 'denied', resolved_at: nowIso() })
    .where('channel', '=', row.channel)
    .where('peer', '=', row.peer)
    .where('status', '=', 'pending')
    .where('requested_at', '>=', pairingCutoff())
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) {
    // Read again: a resolve that won a race (on another process, or between this read and the update) settled it, and
    // this one is `already_resolved`, not expired.
    const now = row.status === 'pending' ? await db.selectFrom('channel_senders').select('status').where('channel', '=', row.channel).where('peer', '=', row.peer).executeTakeFirst() : row;
    if (!now || now.status === 'pending') throw new CrosstalkError('invalid_request', `pairing request ${p.code} on channel ${p.channel} has expired`, [{ path: 'code', message: 'pairing request expired' }]);
    throw new CrosstalkError('already_resolved', `pairing ${p.code} is already ${now.status}`);
  }
  if (p.decision === 'deny') {
    await db.deleteFrom('channel_held').where('channel', '=', row.channel).where('peer', '=', row.peer).execute();
    return { channel: row.channel, peer: row.peer, held: [] };
  }
  return { channel: row.channel, peer: row.peer, held: await heldFor(store, row.channel, row.peer) };
}

export async function heldFor(store: Store, channel: string, peer: string) {
  const rows = await store.db.selectFrom('channel_held').selectAll().where('channel', '=', channel).where('peer', '=', peer).orderBy('id').execute();
  return rows.map((r) => ({ id: Number(r.id), agentId: r.agent_id, message: JSON.parse(r.message) as InboundMessage }));
}

/** Takes a held message to run it: true for the one caller whose delete removed it (approve and a new message may race). */
export async function claimHeld(store: Store, id: number): Promise<boolean> {
  const res = await store.db.deleteFrom('channel_held').where('id', '=', id).executeTakeFirst();
  return Number(res.numDeletedRows) === 1;
}

