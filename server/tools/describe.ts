// Per-field descriptions for a tool's zod object: the JSON schema a model reads says what every parameter is for.
import { z } from 'zod';

/** The same object schema (strictness kept) with each named field described; a field left out fails the type check. */
export function described<S extends z.ZodRawShape>(schema: z.ZodObject<S>, d: { [K in keyof S]: string }): z.ZodObject<S> {
  const shape = Object.fromEntries(Object.entries(schema.shape).map(([k, v]) => [k, (v as z.ZodType).describe(d[k as keyof S])])) as unknown as S;
  return schema.extend(shape) as unknown as z.ZodObject<S>;
}

/** A message body for tools: 1 character to 256 KiB, the same bound as the gateway's `message`. */
export const toolText = (maxBytes: number) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(maxBytes)
    .refine((s) => Buffer.byteLength(s, 'utf8') <= maxBytes, { message: 'is larger than 256 KiB' });
