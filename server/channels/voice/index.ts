// voice: phone conversations. Keys are pinned to `agent:<id>:voice:direct:<phone>` (whatever dmScope says); text goes to a voice bridge.
import { z } from 'zod';
import { baseChannelConfig } from '../delivery';
import { invalidTarget, stripChannelPrefix } from '../targets';
import type { ChannelPlugin } from '../types';
import { postSignedJson } from '../webhook';

const configSchema = z.object({
  ...baseChannelConfig,
  /** The voice bridge's "speak into the call" endpoint; it receives the same signed JSON as the webhook channel. */
  url: z.string().url().optional(),
  secret: z.string().min(1).optional(),
});

/** `+1 (555) 123-4567`, `tel:+15551234567`, `voice:+15551234567` → `+15551234567`. */
export function normalizePhone(to: string): string | null {
  const raw = stripChannelPrefix(to, ['voice', 'tel']);
  const plus = raw.startsWith('+');
  const digits = raw.replace(/[\s().-]/g, '').replace(/^\+/, '');
  if (!/^\d{3,15}$/.test(digits)) return null;
  return `${plus ? '+' : ''}${digits}`;
}

export function createVoiceChannel(): ChannelPlugin<z.infer<typeof configSchema>> {
  return {
    id: 'voice',
    label: 'voice',
    threadScoping: 'none',
    pinnedDirectForm: true,
    configSchema,
    resolveTarget(t) {
      const phone = normalizePhone(t.to);
      if (!phone) throw invalidTarget('voice', t.to, 'expected a phone number such as +15551234567');
      return { to: phone, peer: { kind: 'direct', id: phone } };
    },
    deliver: (cfg, req) => postSignedJson('voice', cfg, req),
  };
}
