// zod schemas for every gateway method's params (CONTRACT §3): the one edge validation for JSON-RPC and tRPC.
import { asciiLower, MAX_SESSION_KEY } from '../sessions/keys';
import { z } from 'zod';
import { queueModeSchema } from '../config';
import { THINKING_LEVELS } from '../models/thinking';

export const MAX_MESSAGE_BYTES = 256 * 1024;

/**
 * The longest session key taken: room for the keys crosstalk derives itself (an A2A session of a 512-character
 * contextId, a channel peer's of a 512-character `to` with its account and thread), two of which still fit in one
 * PostgreSQL index entry (session_links' primary key).
 */
export { MAX_SESSION_KEY } from '../sessions/keys';

/**
 * Session keys: ASCII upper case lowered, then `agent:<agentId>:<rest>` of [a-z0-9:._+-] (CONTRACT §4). Only ASCII is
 * canonicalised, so a look-alike (the Kelvin sign U+212A lowercases to `k`) is refused rather than folded.
 */
export const sessionKeySchema = z
  .string()
  .min(1)
  .max(MAX_SESSION_KEY)
  .transform(asciiLower)
  .refine((s) => /^agent:[a-z0-9._+-]+:[a-z0-9:._+-]+$/.test(s), {
    message: 'session key must be agent:<agentId>:<rest> made of [a-z0-9:._+-]',
  });

export const messageSchema = z
  .string()
  .min(1, 'message must not be empty')
  .refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_MESSAGE_BYTES, { message: 'message is larger than 256 KiB' })
  .refine((s) => !s.includes('\u0000'), { message: 'message must not contain NUL (U+0000)' });

export const limitSchema = z.number().int().min(1).max(200);
export const cursorSchema = z.string().min(1).max(2048);

export const webhookSchema = z
  .object({
    // Bounded as a push endpoint is: a 900 KB URL was stored, listed by `webhooks.list` and logged at each attempt.
    url: z.string().max(2048).url().refine((u) => /^https?:\/\//i.test(u), { message: 'webhook url must be http(s)' }),
    secret: z.string().min(1).max(1024).optional(),
  })
  .strict();

export const agentParams = z
  .object({
    sessionKey: sessionKeySchema,
    message: messageSchema,
    queueMode: queueModeSchema.optional(),
    idempotencyKey: z.string().min(1).max(256).optional(),
    webhook: webhookSchema.optional(),
  })
  .strict();

export const agentWaitParams = z
  .object({ runId: z.string().min(1).max(128), timeoutMs: z.number().int().min(0).max(600_000).optional() })
  .strict();

export const agentCancelParams = z
  .object({ runId: z.string().min(1).max(128), reason: z.string().max(1024).optional() })
  .strict();

export const sessionsListParams = z
  .object({
    limit: limitSchema.optional(),
    cursor: cursorSchema.optional(),
    agentId: z.string().min(1).max(128).optional(),
    kind: z.enum(['main', 'subagent', 'channel', 'other']).optional(),
  })
  .strict();

/** A session's reasoning level for its runs' model steps (../models/thinking.ts maps it per provider). */
export const thinkingLevelSchema = z.enum(THINKING_LEVELS, { message: `thinkingLevel must be one of ${THINKING_LEVELS.join(', ')} (or null to clear it)` });

export const sessionsPatchParams = z
  .object({
    sessionKey: sessionKeySchema,
    model: z.string().min(1).max(256).nullable().optional(),
    thinkingLevel: thinkingLevelSchema.nullable().optional(),
    label: z.string().max(256).nullable().optional(),
    spawnDepth: z.number().int().min(0).max(100).optional(),
    queueMode: queueModeSchema.nullable().optional(),
  })
  .strict();

export const sessionsDeleteParams = z
  .object({ sessionKey: sessionKeySchema, deleteTranscript: z.boolean().optional() })
  .strict();

export const chatHistoryParams = z
  .object({
    sessionKey: sessionKeySchema,
    limit: limitSchema.optional(),
    cursor: cursorSchema.optional(),
    includeTools: z.boolean().optional(),
  })
  .strict();

export const approvalsListParams = z.object({ sessionKey: sessionKeySchema.optional() }).strict();

export const approvalsResolveParams = z
  .object({
    approvalId: z.string().min(1).max(128),
    decision: z.enum(['allow_once', 'allow_always', 'deny', 'accept', 'decline', 'cancel']),
    reason: z.string().max(4096).optional(),
    /**
     * An elicitation form's answer (with `accept`), checked against its requestedSchema. A `__proto__` field is refused
     * here like any unknown field: a record drops it silently, so the person's answer would lose it unsaid.
     */
    content: z
      .unknown()
      .superRefine((v, ctx) => {
        if (v && typeof v === 'object' && Object.hasOwn(v, '__proto__')) ctx.addIssue({ code: 'custom', path: ['__proto__'], message: 'is not a field of the requested schema' });
      })
      .pipe(z.record(z.string(), z.unknown()))
      .optional(),
  })
  .strict();

export const approvalsHistoryParams = z.object({ sessionKey: sessionKeySchema.optional(), limit: limitSchema.optional(), cursor: cursorSchema.optional() }).strict();

export const agentsListParams = z.object({}).strict();

export const sessionsSearchParams = z
  .object({
    query: z.string().min(1).max(1024),
    limit: limitSchema.optional(),
    cursor: cursorSchema.optional(),
    agentId: z.string().min(1).max(128).optional(),
  })
  .strict();
export type SessionsSearchParams = z.infer<typeof sessionsSearchParams>;

export const delegatesListParams = z
  .object({ sessionKey: sessionKeySchema, cursor: cursorSchema.optional(), limit: limitSchema.optional() })
  .strict();

export const delegatesMessagesParams = z
  .object({
    sessionKey: sessionKeySchema,
    conversation_id: sessionKeySchema,
    cursor: cursorSchema.optional(),
    limit: limitSchema.optional(),
  })
  .strict();

export const delegatesDismissParams = z.object({ sessionKey: sessionKeySchema, conversation_id: sessionKeySchema }).strict();

export const delegatesResumeParams = z
  .object({ sessionKey: sessionKeySchema, conversation_id: sessionKeySchema, prompt: messageSchema, mode: z.enum(['standard', 'detached']).optional() })
  .strict();

export const delegatesStatsParams = z.object({}).strict();

export type DelegatesListParams = z.infer<typeof delegatesListParams>;
export type DelegatesMessagesParams = z.infer<typeof delegatesMessagesParams>;
export type DelegatesDismissParams = z.infer<typeof delegatesDismissParams>;
export type DelegatesResumeParams = z.infer<typeof delegatesResumeParams>;

export type AgentParams = z.infer<typeof agentParams>;
export type AgentWaitParams = z.infer<typeof agentWaitParams>;
export type AgentCancelParams = z.infer<typeof agentCancelParams>;
export type SessionsListParams = z.infer<typeof sessionsListParams>;
export type SessionsPatchParams = z.infer<typeof sessionsPatchParams>;
export type SessionsDeleteParams = z.infer<typeof sessionsDeleteParams>;
export type ChatHistoryParams = z.infer<typeof chatHistoryParams>;
export type ApprovalsListParams = z.infer<typeof approvalsListParams>;
export type ApprovalsResolveParams = z.infer<typeof approvalsResolveParams>;
export type ApprovalsHistoryParams = z.infer<typeof approvalsHistoryParams>;

export const deliveriesGetParams = z.object({ deliveryId: z.string().min(1).max(256) }).strict();
export const deliveriesListParams = z
  .object({
    sessionKey: sessionKeySchema.optional(),
    state: z.enum(['accepted', 'delivered', 'running', 'answered', 'failed', 'dead']).optional(),
    kind: z.enum(['session_message', 'delegate', 'callback', 'channel', 'webhook', 'push']).optional(),
    limit: limitSchema.optional(),
    cursor: cursorSchema.optional(),
  })
  .strict();
export const deliveriesRetryParams = deliveriesGetParams;
export type DeliveriesGetParams = z.infer<typeof deliveriesGetParams>;
export type DeliveriesListParams = z.infer<typeof deliveriesListParams>;
export type DeliveriesRetryParams = z.infer<typeof deliveriesRetryParams>;

export const runsBoardParams = z.object({ limit: limitSchema.optional() }).strict();
export type RunsBoardParams = z.infer<typeof runsBoardParams>;

export const sessionsCompactParams = z.object({ sessionKey: sessionKeySchema }).strict();
export const sessionsUsageParams = z.object({ sessionKey: sessionKeySchema }).strict();
export type SessionsCompactParams = z.infer<typeof sessionsCompactParams>;
export type SessionsUsageParams = z.infer<typeof sessionsUsageParams>;

export const webhooksListParams = z
  .object({ status: z.enum(['pending', 'delivered', 'dead']).optional(), limit: limitSchema.optional() })
  .strict();
export type WebhooksListParams = z.infer<typeof webhooksListParams>;

/** `send` (CONTRACT §3): channel delivery with no agent run. */
const channelIdSchema = z.union([z.string().trim().min(1).max(256), z.number().int()]).transform(String);

/** `send` params (CONTRACT §3). */
export const sendParams = z
  .object({
    channel: z.string().trim().min(1).max(64).transform((s) => s.toLowerCase()),
    to: z.string().trim().min(1).max(512),
    message: messageSchema,
    accountId: z.string().trim().min(1).max(128).optional(),
    threadId: channelIdSchema.optional(),
    replyTo: channelIdSchema.optional(),
    sessionKey: sessionKeySchema.optional(),
    idempotencyKey: z.string().min(1).max(256).optional(),
  })
  .strict();
export type SendParams = z.input<typeof sendParams>;
