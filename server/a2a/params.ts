// A2A inbound params, checked before the SDK sees them (CONTRACT §3, §5): every method's shape in both dialects (v1.0 and v0.3), and the gateway's input rules for messages (contextId, text size, NUL).
import { z } from 'zod';
import { MAX_MESSAGE_BYTES } from '../gateway/schemas';

/** A contextId becomes `agent:<id>:a2a:<contextId>`: at most 512 characters of the session-key alphabet (upper case is lowercased). */
export const MAX_CONTEXT_ID = 512;
const contextId = z.string().max(MAX_CONTEXT_ID).regex(/^[A-Za-z0-9:._+-]*$/, 'may only hold [a-z0-9:._+-]');
const id = z.string().max(512);
const obj = z.record(z.string(), z.unknown());
const tenant = { tenant: z.string().max(256).optional() };

/** A part's text: no NUL (it cannot be stored, nor shown) — the total is checked on the message. */
const text = z.string().refine((s) => !s.includes('\u0000'), 'must not contain NUL');
const parts = z.array(z.looseObject({ text: text.optional() })).max(1000);

const messageOf = (role: z.ZodType, legacyId: z.ZodType) =>
  z
    .looseObject({ messageId: legacyId, contextId: contextId.optional(), taskId: id.optional(), role, parts, metadata: obj.optional() })
    .superRefine((m, ctx) => {
      const bytes = m.parts.reduce((n, p) => n + (typeof p.text === 'string' ? Buffer.byteLength(p.text) : 0), 0);
      if (bytes > MAX_MESSAGE_BYTES) ctx.addIssue({ code: 'custom', path: ['parts'], message: `message text is ${bytes} bytes; at most ${MAX_MESSAGE_BYTES} (256 KiB)` });
    });

const pushV1 = z.looseObject({ ...tenant, id: id.optional(), taskId: id, url: z.string().max(2048), token: z.string().max(4096).optional(), authentication: z.looseObject({ scheme: z.string().max(256), credentials: z.string().max(4096).optional() }).optional() });
const pushV03 = z.looseObject({ id: id.optional(), url: z.string().max(2048), token: z.string().max(4096).optional(), authentication: z.looseObject({ schemes: z.array(z.string().max(256)).max(16), credentials: z.string().max(4096).optional() }).optional() });

const sendV1 = z.looseObject({
  ...tenant,
  // v1.0 JSON leaves default values out (an empty id, ROLE_UNSPECIFIED): only their types are checked.
  message: messageOf(z.union([z.string().max(64), z.number().int()]).optional(), id.optional()),
  configuration: z.looseObject({ acceptedOutputModes: z.array(z.string().max(256)).max(64).optional(), taskPushNotificationConfig: pushV1.partial({ taskId: true }).optional(), historyLength: z.number().int().min(0).optional(), returnImmediately: z.boolean().optional() }).optional(),
  metadata: obj.optional(),
});
const sendV03 = z.looseObject({
  message: messageOf(z.enum(['user', 'agent']), id),
  configuration: z.looseObject({ acceptedOutputModes: z.array(z.string().max(256)).max(64).optional(), pushNotificationConfig: pushV03.optional(), historyLength: z.number().int().min(0).optional(), blocking: z.boolean().optional() }).optional(),
  metadata: obj.optional(),
});
const taskV1 = z.looseObject({ ...tenant, id, historyLength: z.number().int().min(0).optional(), metadata: obj.optional() });
const taskV03 = z.looseObject({ id, historyLength: z.number().int().min(0).optional(), metadata: obj.optional() });

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
  ListTaskPushNotificationConfigs: z.looseObject({ ...tenant, taskId: id, pageSize: z.number().int().min(0).optional(), pageToken: z.string().max(1024).optional() }),
  GetExtendedAgentCard: z.looseObject({ ...tenant }).optional(),
};
const V03: Record<string, z.ZodType> = {
  'message/send': sendV03,
  'message/stream': sendV03,
  'tasks/get': taskV03,
  'tasks/cancel': taskV03,
  'tasks/resubscribe': taskV03,
  'tasks/pushNotificationConfig/set': z.looseObject({ taskId: id, pushNotificationConfig: pushV03 }),
  'tasks/pushNotificationConfig/get': z.looseObject({ id, pushNotificationConfigId: id.optional(), metadata: obj.optional() }),
  'tasks/pushNotificationConfig/list': z.looseObject({ id, metadata: obj.optional() }),
  'tasks/pushNotificationConfig/delete': z.looseObject({ id, pushNotificationConfigId: id, metadata: obj.optional() }),
  'agent/getAuthenticatedExtendedCard': z.unknown(),
};

export interface ParamIssue {
  path: string;
  message: string;
}

/**
 * The issues of a request's params for its method (null when they hold, or when the method is not one of the
 * dialect's: the SDK answers unknown methods). Run before any lookup, so a malformed call is -32602, never -32603.
 */
export function a2aParamIssues(method: unknown, params: unknown, legacy: boolean): ParamIssue[] | null {
  if (typeof method !== 'string') return null;
  const schema = (legacy ? V03 : V1)[method];
  if (!schema) return null;
  const r = schema.safeParse(params);
  if (r.success) return null;
  return r.error.issues.slice(0, 20).map((i) => ({ path: ['params', ...i.path].join('.'), message: i.message }));
}
