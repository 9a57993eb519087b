// An MCP elicitation asked in chat (CONTRACT §5): buttons for a form of one boolean or enum field (a choice each, and
// Decline); any other form, or a URL, is answered in the room, and the chat only offers Decline.
import { enumValues, type ElicitSchema } from '../mcp/elicit-content';
import type { WireButton } from './approval-wire';

/** Choices a chat button row can carry (codes e0–e9). */
const MAX_CHOICES = 8;

interface ElicitArgs {
  server?: string;
  message?: string;
  mode?: string;
  requestedSchema?: ElicitSchema & { properties?: Record<string, { type?: string; title?: string; enumNames?: string[]; oneOf?: { const?: unknown; title?: string }[] }> };
}

/** The one field a chat can answer, with its choices as [label, value]; undefined when the form needs the room. */
function singleField(args: ElicitArgs): { name: string; choices: Array<[string, unknown]> } | undefined {
  if (args.mode === 'url') return undefined;
  const props = Object.entries(args.requestedSchema?.properties ?? {});
  if (props.length !== 1) return undefined;
  const [name, p] = props[0]!;
  if (p.type === 'boolean') return { name, choices: [['Yes', true], ['No', false]] };
  const values = p.type === 'array' ? undefined : enumValues(p as never);
  if (!values?.length || values.length > MAX_CHOICES) return undefined;
  return { name, choices: values.map((v, i) => [String(p.oneOf?.[i]?.title ?? p.enumNames?.[i] ?? v), v]) };
}

/** The chat text and buttons for an elicitation item. */
export function elicitationRequest(sessionKey: string, args: ElicitArgs): { text: string; buttons: WireButton[] } {
  const field = singleField(args);
  const asks = `${sessionKey}: MCP server ${args.server ?? '?'} asks: ${args.message ?? ''}`;
  if (!field) return { text: `${asks}\nAnswer it in the crosstalk room (Approvals).`, buttons: [{ label: 'Decline', code: 'ex' }] };
  return { text: asks, buttons: [...field.choices.map(([label], i) => ({ label, code: `e${i}` })), { label: 'Decline', code: 'ex' }] };
}

/** The content a pressed choice answers; undefined when the choice does not fit the item (a stale or forged button). */
export function elicitationContent(args: ElicitArgs, choice: number): Record<string, unknown> | undefined {
  const field = singleField(args);
  const c = field?.choices[choice];
  return field && c ? { [field.name]: c[1] } : undefined;
}
