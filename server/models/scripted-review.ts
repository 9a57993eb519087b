// The scripted model as a reviewer (CONTRACT §5 "Reviewer"): allows a call whose arguments contain `review:allow`,
// denies one with `review:deny`, escalates the rest — always by one `review_decision` call.
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { randomBytes } from 'node:crypto';

interface ReviewOptions {
  task?: unknown;
  tool?: unknown;
  args?: unknown;
}

const reviewOptions = (o: LanguageModelV4CallOptions) => o.providerOptions?.crosstalk as ReviewOptions | undefined;

export function isReviewCall(o: LanguageModelV4CallOptions): boolean {
  return reviewOptions(o)?.task === 'review';
}

/** One step's answer (the shape of scripted.ts's ScriptedStep, kept here so the two modules import one way). */
export interface ReviewStep {
  text: null;
  toolCalls: Array<{ toolCallId: string; toolName: string; input: string }>;
}

export function scriptedReview(o: LanguageModelV4CallOptions): ReviewStep {
  const opts = reviewOptions(o)!;
  const args = typeof opts.args === 'string' ? opts.args : JSON.stringify(opts.args ?? null);
  const tool = typeof opts.tool === 'string' ? opts.tool : 'the call';
  const [decision, reason] = args.includes('review:allow')
    ? ['allow', `scripted review: ${tool} arguments say review:allow`]
    : args.includes('review:deny')
      ? ['deny', `scripted review: ${tool} arguments say review:deny`]
      : ['escalate', `scripted review: no review:allow or review:deny in ${tool} arguments`];
  return { text: null, toolCalls: [{ toolCallId: `call_${randomBytes(6).toString('hex')}`, toolName: 'review_decision', input: JSON.stringify({ decision, reason }) }] };
}
