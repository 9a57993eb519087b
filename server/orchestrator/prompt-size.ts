// Prompt size estimates in tokens (about four characters a token), cheap enough to run before every model step.
import type { LanguageModelV4FunctionTool } from '@ai-sdk/provider';
import type { PromptMessage } from './context';

export const estimateTokens = (text: string) => Math.ceil(text.length / 4);

/** JSON sizes of tool definitions, per definition: a run's tool list is a new array each run, its tools are not. */
const toolSizes = new WeakMap<LanguageModelV4FunctionTool, number>();

/** `JSON.stringify(tools).length`, from the tools' cached sizes. */
function toolsChars(tools: LanguageModelV4FunctionTool[]): number {
  let n = tools.length ? 1 + tools.length : 2; // the brackets and the commas between
  for (const t of tools) {
    let s = toolSizes.get(t);
    if (s === undefined) toolSizes.set(t, (s = JSON.stringify(t).length));
    n += s;
  }
  return n;
}

function partChars(p: PromptMessage['content'][number] | string): number {
  if (typeof p === 'string') return p.length;
  switch (p.type) {
    case 'text':
    case 'reasoning':
      return p.text.length;
    case 'tool-call':
      return p.toolName.length + JSON.stringify(p.input ?? null).length;
    case 'tool-result':
      return p.toolName.length + JSON.stringify(p.output ?? null).length;
    default:
      return 64;
  }
}

/** Estimated tokens of the whole prompt: system, messages (plus a few tokens of framing each) and tool schemas. */
export function promptSize(system: string, messages: PromptMessage[], tools: LanguageModelV4FunctionTool[]): number {
  let chars = system.length;
  for (const m of messages) {
    chars += 16;
    if (typeof m.content === 'string') chars += m.content.length;
    else for (const p of m.content) chars += partChars(p);
  }
  return Math.ceil((chars + toolsChars(tools)) / 4);
}
