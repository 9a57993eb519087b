// A2A inbound params, checked before the SDK sees them (CONTRACT §3, §5): every method's shape in both dialects (v1.0 and v0.3; a bad shape is -32602, never -32603), and the gateway's input rules for messages (contextId, text size, NUL and lone surrogates).
import { z } from 'zod';
import { MAX_MESSAGE_BYTES } from '../gateway/schemas';
import { nulPath, UNSTORABLE_TEXT } from '../unstorable';

/** A contextId becomes `agent:<id>:a2a:<contextId>`: at most 512 characters of the session-key alphabet (upper case is lowercased). */
export const MAX_CONTEXT_ID = 512;
const contextId = z.string().max(MAX_CONTEXT_ID).regex(/^[A-Za-z0-9:._+-]*$/, 'may only hold [A-Za-z0-9:._+-]');
const str = z.string();
const id = z.string().max(512);
const metadata = z.record(z.string(), z.unknown()).nullish();
const tenant = { tenant: z.string().max(256).nullish() };

/** A part's text: no NUL (it cannot be stored, nor shown); the total is checked on the message. */
const text = z.string().refine((s) => !s.includes('\u0000'), 'must not contain NUL');

/** The message text over all parts, at most 256 KiB. */
const textBytes = (parts: Array<{ text?: string | null }>, ctx: z.RefinementCtx) => {
  const bytes = parts.reduce((n, p) => n + (typeof p.text === 'string' ? Buffer.byteLength(p.text) : 0), 0);
  if (bytes > MAX_MESSAGE_BYTES) ctx.addIssue({ code: 'custom', path: ['parts'], message: `message text is ${bytes} bytes; at most ${MAX_MESSAGE_BYTES} (256 KiB)` });
};

// ── v0.3 ──────────────────────────────────────────────────────────────

const partV03 = z
  .looseObject({
    kind: z.enum(['text', 'file', 'data']),
    text: text.nullish(),
    file: z.looseObject({ name: str.nullish(), mimeType: str.nullish(), bytes: str.nullish(), uri: str.nullish() }).nullish(),
    data: z.record(z.string(), z.unknown()).nullish(),
    metadata,
  })
  .refine((p) => (p.kind === 'text' ? typeof p.text === 'string' : p.kind === 'file' ? p.file != null : p.data != null), { message: 'a text part needs text, a file part file, a data part data' });
const messageV03 = z
  .looseObject({
    messageId: str,
    role: z.enum(['user', 'agent']),
    parts: z.array(partV03).max(1000),
    contextId: contextId.nullish(),
    taskId: id.nullish(),
    extensions: z.array(str).nullish(),
    referenceTaskIds: z.array(str).nullish(),
    metadata,
  })
  .superRefine((m, ctx) => textBytes(m.parts, ctx));
const pushV03 = z.looseObject({ url: str.max(2048), id: str.nullish(), token: str.nullish(), authentication: z.looseObject({ schemes: z.array(str), credentials: str.nullish() }).nullish() });
const sendV03 = z.looseObject({
  message: messageV03,
  configuration: z.looseObject({ acceptedOutputModes: z.array(str).nullish(), blocking: z.boolean().nullish(), historyLength: z.number().int().min(0).nullish(), pushNotificationConfig: pushV03.nullish() }).nullish(),
  metadata,
});
const taskV03 = z.looseObject({ id: str, metadata });

const V03: Record<string, z.ZodType> = {
  'message/send': sendV03,
  'message/stream': sendV03,
  'tasks/get': z.looseObject({ id: str, historyLength: z.number().int().min(0).nullish(), metadata }),
  'tasks/cancel': taskV03,
  'tasks/resubscribe': taskV03,
  'tasks/pushNotificationConfig/set': z.looseObject({ taskId: str, pushNotificationConfig: pushV03 }),
  'tasks/pushNotificationConfig/get': z.looseObject({ id: str, pushNotificationConfigId: str.nullish(), metadata }),
  'tasks/pushNotificationConfig/list': taskV03,
  'tasks/pushNotificationConfig/delete': z.looseObject({ id: str, pushNotificationConfigId: str, metadata }),
};

// ── v1.0 (protobuf JSON: default values are left out, so only types are checked for them) ──────────

const partV1 = z.looseObject({ text: text.nullish(), metadata });
const messageV1 = z
  .looseObject({
    messageId: id.nullish(),
    contextId: contextId.nullish(),
    taskId: id.nullish(),
    role: z.union([z.string().max(64), z.number().int()]).nullish(),
    parts: z.array(partV1).max(1000),
    metadata,
  })
  .superRefine((m, ctx) => textBytes(m.parts, ctx));
const pushV1 = z.looseObject({ ...tenant, id: id.nullish(), taskId: id, url: str.max(2048), token: str.nullish(), authentication: z.looseObject({ scheme: str, credentials: str.nullish() }).nullish() });
const sendV1 = z.looseObject({
  ...tenant,
  message: messageV1,
  configuration: z
    .looseObject({ acceptedOutputModes: z.array(str).nullish(), taskPushNotificationConfig: pushV1.partial({ taskId: true }).nullish(), historyLength: z.number().int().min(0).nullish(), returnImmediately: z.boolean().nullish() })
    .nullish(),
  metadata,
});
const taskV1 = z.looseObject({ ...tenant, id, historyLength: z.number().int().min(0).nullish(), metadata });

const V1: Record<string, z.ZodType> = {
  SendMessage: sendV1,
  SendStreamingMessage: sendV1,
  GetTask: taskV1,
  CancelTask: taskV1,
  SubscribeToTask: taskV1,
  ListTasks: z.looseObject({ ...tenant }),
  CreateTaskPushNotificationConfig: pushV1,
  GetTaskPushNotificationConfig: z.looseObject({ ...tenant, taskId: id, id }),
  DeleteTaskPushNotificationConfig: z.looseObject({ ...tenant, taskId: id, id }),
  ListTaskPushNotificationConfigs: z.looseObject({ ...tenant, taskId: id, pageSize: z.number().int().min(0).nullish(), pageToken: z.string().max(1024).nullish() }),
};

export interface ParamIssue {
  path: string;
  message: string;
}

/**
 * The issues of a request's params for its method (null when they hold, or when the method is not one of the
 * dialect's: the SDK answers unknown methods and the envelope). Run before any lookup.
 */
export function a2aParamIssues(method: unknown, params: unknown, legacy: boolean): ParamIssue[] | null {
  if (typeof method !== 'string') return null;
  const table = legacy ? V03 : V1;
  const schema = Object.hasOwn(table, method) ? table[method] : undefined;
  if (!schema) return null;
  const bad = nulPath(params);
  if (bad !== null) return [{ path: bad ? `params.${bad}` : 'params', message: UNSTORABLE_TEXT }];
  const r = schema.safeParse(params);
  if (r.success) return null;
  return r.error.issues.slice(0, 20).map((i) => ({ path: ['params', ...i.path].join('.'), message: i.message }));
}

/**
 * The metadata key a crosstalk run's remote-agent call counts its hops under: the calls of crosstalk gateways this
 * message went through, one more than the calling run's own (a run started by such a message keeps the count).
 */
export const A2A_HOPS_KEY = 'crosstalk/hops';

/** The hops a message's metadata says; 0 when it says none. */
export function a2aHopsOf(meta: unknown): number {
  const v = meta && typeof meta === 'object' ? (meta as Record<string, unknown>)[A2A_HOPS_KEY] : undefined;
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? Math.min(v, 1_000) : 0;
}
