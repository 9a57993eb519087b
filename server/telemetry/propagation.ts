// Carries a run's W3C traceparent onto what it leaves behind: callback rows (the callback turn joins the trace) and webhooks.
import type { CallbackRow, WebhookRow } from '../store/schema';

export function stampTrace(d: { callbacks: CallbackRow[]; webhooks: WebhookRow[] }, traceparent: string | undefined): void {
  if (!traceparent) return;
  for (const cb of d.callbacks) cb.meta = JSON.stringify({ ...(cb.meta ? (JSON.parse(cb.meta) as object) : {}), traceparent });
  for (const w of d.webhooks) w.traceparent = traceparent;
}

/** A traceparent from a run origin or callback meta, when it has one. */
export function traceparentIn(v: unknown): string | undefined {
  const t = (v as { traceparent?: unknown } | null | undefined)?.traceparent;
  return typeof t === 'string' && t ? t : undefined;
}
