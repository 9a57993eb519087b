// The params of every A2A v0.3 JSON-RPC method, checked before the SDK's translators dereference them (a bad shape is -32602, never -32603).
import { z } from 'zod';

const str = z.string();
const metadata = z.record(z.string(), z.unknown()).nullish();
const part = z.looseObject({
  kind: z.enum(['text', 'file', 'data']),
  text: str.nullish(),
  file: z.looseObject({ name: str.nullish(), mimeType: str.nullish(), bytes: str.nullish(), uri: str.nullish() }).nullish(),
  data: z.record(z.string(), z.unknown()).nullish(),
  metadata,
}).refine((p) => (p.kind === 'text' ? typeof p.text === 'string' : p.kind === 'file' ? p.file != null : p.data != null), { message: 'a text part needs text, a file part file, a data part data' });
const message = z.looseObject({
  messageId: str,
  role: z.enum(['user', 'agent']),
  parts: z.array(part),
  contextId: str.nullish(),
  taskId: str.nullish(),
  extensions: z.array(str).nullish(),
  referenceTaskIds: z.array(str).nullish(),
  metadata,
});
const pushConfig = z.looseObject({
  url: str,
  id: str.nullish(),
  token: str.nullish(),
  authentication: z.looseObject({ schemes: z.array(str), credentials: str.nullish() }).nullish(),
});
const sendParams = z.looseObject({
  message,
  configuration: z.looseObject({ acceptedOutputModes: z.array(str).nullish(), blocking: z.boolean().nullish(), historyLength: z.number().int().min(0).nullish(), pushNotificationConfig: pushConfig.nullish() }).nullish(),
  metadata,
});
const taskId = z.looseObject({ id: str, metadata });

const LEGACY: Record<string, z.ZodType> = {
  'message/send': sendParams,
  'message/stream': sendParams,
  'tasks/get': z.looseObject({ id: str, historyLength: z.number().int().min(0).nullish(), metadata }),
  'tasks/cancel': taskId,
  'tasks/resubscribe': taskId,
  'tasks/pushNotificationConfig/set': z.looseObject({ taskId: str, pushNotificationConfig: pushConfig }),
  'tasks/pushNotificationConfig/get': z.looseObject({ id: str, pushNotificationConfigId: str.nullish(), metadata }),
  'tasks/pushNotificationConfig/list': taskId,
  'tasks/pushNotificationConfig/delete': z.looseObject({ id: str, pushNotificationConfigId: str, metadata }),
};

/** Why a v0.3 request's params are unusable, or null (unknown methods and the envelope are left to the SDK). */
export function legacyParamsProblem(body: unknown): string | null {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
  const { method, params } = body as { method?: unknown; params?: unknown };
  const schema = typeof method === 'string' && Object.hasOwn(LEGACY, method) ? LEGACY[method] : undefined;
  if (!schema) return null;
  const r = schema.safeParse(params);
  if (r.success) return null;
  const i = r.error.issues[0]!;
  return `invalid params: ${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`;
}
