'use client';
// An MCP elicitation as the room asks it (CONTRACT §7): a form with one labelled field per schema property (by its title
// or name) and Submit / Decline / Cancel; a URL elicitation as a link named "Open" with Done / Decline.
import type { PendingApproval } from '@/lib/trpc/types';
import { useId, useState } from 'react';
import { Button } from '../ui/button';
import { TextInput } from '../ui/text-input';
import { numberInput } from './elicitation-inputs';

export type ElicitDecision = 'accept' | 'decline' | 'cancel';

type Option = { value: string; label: string };
type Prop = {
  type?: string;
  title?: string;
  description?: string;
  format?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  enum?: string[];
  enumNames?: string[];
  oneOf?: { const: string; title?: string }[];
  anyOf?: { const: string; title?: string }[];
  items?: { enum?: string[]; anyOf?: { const: string; title?: string }[]; oneOf?: { const: string; title?: string }[] };
};
type Schema = { properties?: Record<string, Prop>; required?: string[] };

/** An enum's choices, titled (oneOf/anyOf, legacy enumNames) or untitled (SEP-1330); undefined when it is not one. */
function optionsOf(p: Prop): Option[] | undefined {
  const src = p.type === 'array' ? p.items : p;
  if (!src) return undefined;
  const titled = src.oneOf ?? src.anyOf;
  if (titled) return titled.map((o) => ({ value: o.const, label: o.title ?? o.const }));
  if (src.enum) return src.enum.map((v, i) => ({ value: v, label: (p.type !== 'array' ? p.enumNames?.[i] : undefined) ?? v }));
  return undefined;
}

type Value = string | boolean | string[];

function initial(p: Prop): Value {
  if (p.type === 'boolean') return typeof p.default === 'boolean' ? p.default : false;
  if (p.type === 'array') return Array.isArray(p.default) ? (p.default as string[]) : [];
  if (p.format === 'date-time' && typeof p.default === 'string') return toLocalInput(p.default);
  return p.default === undefined ? '' : String(p.default);
}

/** An RFC 3339 date-time as a datetime-local input shows it (the browser's time zone, to the minute). */
function toLocalInput(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * A datetime-local value (local time, no seconds, no zone) as the RFC 3339 date-time MCP asks for (UTC): sent as
 * typed, it was refused ("must be a date-time"), so such a field could not be answered from the room.
 */
function fromLocalInput(v: string): string {
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? v : d.toISOString();
}

/** What is sent: the fields filled in (numbers as numbers); empty ones are left out, so the schema's defaults apply. */
function contentOf(schema: Schema, values: Record<string, Value>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, p] of Object.entries(schema.properties ?? {})) {
    const v = values[name];
    if (v === undefined || v === '') continue;
    if ((p.type === 'number' || p.type === 'integer') && typeof v === 'string') out[name] = Number(v);
    else if (p.format === 'date-time' && typeof v === 'string') out[name] = fromLocalInput(v);
    else out[name] = v;
  }
  return out;
}

const INPUT_TYPES: Record<string, string> = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' };

export function ElicitationForm({ approval, busy, decide }: { approval: PendingApproval; busy: boolean; decide: (d: ElicitDecision, content?: Record<string, unknown>) => void }) {
  const a = approval as PendingApproval & { server?: string; message?: string; mode?: 'form' | 'url'; requestedSchema?: Schema; url?: string };
  const schema: Schema = a.requestedSchema ?? {};
  const props = Object.entries(schema.properties ?? {});
  const [values, setValues] = useState<Record<string, Value>>(() => Object.fromEntries(props.map(([k, p]) => [k, initial(p)])));
  const set = (k: string, v: Value) => setValues((s) => ({ ...s, [k]: v }));
  // The row and the dialog may show the same item at once: ids unique per form, so each label names its own field.
  const formId = useId();

  const header = (
    <p data-testid="elicitation-message" className="text-sm">
      <span className="font-mono text-xs">{a.server ?? 'MCP server'}</span> asks: <span className="font-medium">{a.message}</span>
    </p>
  );

  if (a.mode === 'url') {
    const safe = a.url && /^https?:\/\//i.test(a.url) ? a.url : undefined;
    return (
      <div data-testid="elicitation-url" className="flex flex-col gap-2">
        {header}
        <p className="break-all font-mono text-xs text-zinc-600 dark:text-zinc-400">{a.url}</p>
        <div className="flex flex-wrap gap-2">
          {safe && (
            <a href={safe} target="_blank" rel="noopener noreferrer" className="rounded-md bg-indigo-600 px-2 py-1 text-xs font-medium text-white">
              Open
            </a>
          )}
          <Button size="sm" variant="primary" disabled={busy} onClick={() => decide('accept')}>
            Done
          </Button>
          <Button size="sm" variant="danger" disabled={busy} onClick={() => decide('decline')}>
            Decline
          </Button>
        </div>
      </div>
    );
  }

  return (
    <form
      data-testid="elicitation-form"
      className="flex flex-col gap-2"
      onSubmit={(e) => {
        e.preventDefault();
        decide('accept', contentOf(schema, values));
      }}
    >
      {header}
      <div className="grid gap-2 sm:grid-cols-2">
        {props.map(([name, p]) => {
          const label = p.title ?? name;
          const id = `${formId}-${name}`;
          const options = optionsOf(p);
          const v = values[name];
          const required = schema.required?.includes(name);
          let field;
          let hint: string | undefined;
          if (p.type === 'boolean') {
            field = <input id={id} type="checkbox" checked={v === true} onChange={(e) => set(name, e.target.checked)} />;
          } else if (options && p.type === 'array') {
            field = (
              <select id={id} multiple value={v as string[]} onChange={(e) => set(name, [...e.target.selectedOptions].map((o) => o.value))} className="rounded-md border border-zinc-300 bg-white text-sm dark:border-zinc-700 dark:bg-zinc-900">
                {options.map((o) => (
                  <option key={o.value} value={o.value}>
                    {o.label}
                  </option>
                ))}
              </select>
            );
          } else if (options) {
            field = (
              <select id={id} value={v as string} required={required} onChange={(e) => set(name, e.target.value)} className="h-8 rounded-md border border-zinc-300 bg-white text-sm dark:border-zinc-700 dark:bg-zinc-900">
                {/* No choice yet shows as none (a required one must be made before Submit): before, the browser showed
                    the first option as chosen while nothing was, and the server refused the form as missing it. */}
                {!required ? <option value="">—</option> : v === '' && <option value="" disabled>Choose…</option>}
                {options.map((o) => (
                  <option key={o.value} value={o.value}>
                    {o.label}
                  </option>
                ))}
              </select>
            );
          } else if (p.type === 'number' || p.type === 'integer') {
            // The schema's bounds, steps (integer, multipleOf) and exclusive bounds on the input too: the browser says
            // what is wrong before Submit, where the server's refusal came back after it (1.5 for an integer passed).
            // Not controlled: the browser counts steps from the `value` attribute when there is no `min`, and React
            // sets a controlled input's to what was typed; this one keeps the schema's default (elicitation-inputs.ts).
            const { hint: more, ...attrs } = numberInput(p);
            hint = more;
            field = <TextInput id={id} type="number" required={required} {...attrs} defaultValue={initial(p) as string} onChange={(e) => set(name, e.target.value)} />;
          } else {
            const type = INPUT_TYPES[p.format ?? ''] ?? 'text';
            // The server's pattern is not the input's: the browser runs one on a backtracking engine at every keystroke
            // (and at once on the default), and `^(a+)+$` held the tab. It is said in the field's hint; the gateway
            // checks it in linear time when the form is sent, and names the field it refuses.
            if (typeof p.pattern === 'string') hint = `must match the pattern ${p.pattern.length > 200 ? `${p.pattern.slice(0, 200)}…` : p.pattern}`;
            field = <TextInput id={id} type={type} required={required} minLength={p.minLength} maxLength={p.maxLength} value={v as string} onChange={(e) => set(name, e.target.value)} />;
          }
          return (
            <div key={name} className={p.type === 'boolean' ? 'flex items-center gap-2' : 'flex flex-col gap-0.5'}>
              {/* The star sits beside the label, not in it: the field's name is exactly its title or name (CONTRACT §7). */}
              <span className="flex items-baseline">
                <label htmlFor={id} className="text-xs font-medium" title={[p.description, hint].filter(Boolean).join(' — ') || undefined}>
                  {label}
                </label>
                {required && (
                  <span aria-hidden className="text-xs font-medium">
                    &nbsp;*
                  </span>
                )}
              </span>
              {field}
            </div>
          );
        })}
      </div>
      <div className="flex flex-wrap gap-2">
        <Button type="submit" size="sm" variant="primary" disabled={busy}>
          Submit
        </Button>
        <Button size="sm" disabled={busy} onClick={() => decide('decline')}>
          Decline
        </Button>
        <Button size="sm" variant="ghost" disabled={busy} onClick={() => decide('cancel')}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
