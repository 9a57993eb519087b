// One transcript row, rendered by kind (CONTRACT §4): user, assistant, persona posts, tool cards, inter-session and callback
// rows (with where they came from), delegate follow-up cells, mirrors, steers and notices.
import { cn } from '@/lib/cn';
import type { ReactNode } from 'react';
import type { TranscriptMessage } from '@/lib/trpc/types';
import { CollapsibleText } from '../ui/collapsible-text';
import { LocalTime } from '../ui/local-time';
import { SessionLink } from './session-link';
import { CallLink } from './delivery-state';
import { Markdown } from './markdown';
import { ToolCard } from './tool-card';
import { useToolCall } from './tool-calls-context';

const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

interface DelegateMeta {
  conversation_id?: string;
  agent_id?: string;
  run_id?: string;
  followUp?: boolean;
  label?: string;
  /** On a completed follow-up: how the delegate's run ended (ok, error, timeout…). */
  status?: string;
}

function delegateMeta(m: TranscriptMessage): DelegateMeta | undefined {
  const raw = m.kind === 'agent_callback_result' ? m.meta?.delegate : m.meta;
  return raw && typeof raw === 'object' ? (raw as DelegateMeta) : undefined;
}

export function MessageRow({ message }: { message: TranscriptMessage }) {
  switch (message.kind) {
    case 'tool_call':
    case 'tool_result':
      return <ToolRow message={message} />;
    case 'delegate_follow_up_started':
    case 'delegate_follow_up_completed':
      return <FollowUpCell message={message} />;
    case 'notice':
      return <NoticeCell message={message} />;
    case 'inter_session':
    case 'agent_callback_result':
      return <FromSessionCell message={message} />;
    default:
      break;
  }
  if (message.role === 'system') return <NoticeCell message={message} />;
  const isUser = message.role === 'user' && message.author.type !== 'agent' && message.kind === 'message';
  const isPersona = message.author.type === 'persona';
  const who = isUser ? 'You' : (message.author.name ?? message.author.id);
  const label = message.kind === 'mirror' ? `mirrored${message.author.type === 'channel' ? ` from ${message.author.id}` : ''}` : message.kind === 'steer' ? 'steered into the run' : isPersona ? 'persona' : undefined;
  return (
    <Bubble
      side={isUser || message.kind === 'steer' ? 'right' : 'left'}
      tone={isUser ? 'user' : isPersona ? 'persona' : message.kind === 'mirror' ? 'mirror' : message.kind === 'steer' ? 'other' : 'assistant'}
      who={who}
      meta={
        <>
          {label && <span data-testid="row-label">{label} · </span>}
          <LocalTime iso={message.createdAt} />
        </>
      }
      testId="message"
      kind={message.kind}
      role={message.role}
      authorType={message.author.type}
      markdown={!isUser && (message.role === 'assistant' || isPersona) && message.kind === 'message'}
    >
      {message.content}
    </Bubble>
  );
}

function ToolRow({ message }: { message: TranscriptMessage }) {
  return <ToolCard call={useToolCall(message)} />;
}

/** An inter-session message or a callback result: says where it came from and links there. */
function FromSessionCell({ message }: { message: TranscriptMessage }) {
  const from = str(message.meta?.fromSessionKey);
  const d = delegateMeta(message);
  const isCallback = message.kind === 'agent_callback_result';
  return (
    <Bubble
      side="left"
      tone="other"
      who={message.author.name ?? message.author.id}
      meta={
        <>
          <span data-testid="row-label">
            {isCallback ? 'callback result' : 'message'}
            {from && (
              <>
                {' '}
                from <SessionLink sessionKey={from} />
                {str(message.meta?.fromCallId) && (
                  <>
                    {' '}
                    (<CallLink sessionKey={from} callId={str(message.meta?.fromCallId)!} />)
                  </>
                )}
              </>
            )}
            {d?.followUp && <span data-testid="follow-up-mark"> (follow-up)</span>}
            {' · '}
          </span>
          <LocalTime iso={message.createdAt} />
        </>
      }
      testId="message"
      kind={message.kind}
      role={message.role}
      authorType={message.author.type}
      from={from}
    >
      {message.content}
    </Bubble>
  );
}

/** The parent's record of a delegate re-entry (CONTRACT §5 follow-ups), marked "(follow-up)", with the prompt it sent
 * (started) or the delegate's response (completed), clamped to a few lines when long. */
function FollowUpCell({ message }: { message: TranscriptMessage }) {
  const d = delegateMeta(message) ?? {};
  const started = message.kind === 'delegate_follow_up_started';
  const failed = !started && !!d.status && d.status !== 'ok';
  const what = started ? 'prompt' : 'response';
  return (
    <div
      data-testid="message"
      data-kind={message.kind}
      data-role={message.role}
      className="mx-auto flex w-full max-w-3xl flex-wrap items-center gap-x-2 gap-y-0.5 rounded-md border border-dashed border-sky-300 bg-sky-50/60 px-3 py-1.5 text-xs text-sky-950 dark:border-sky-800 dark:bg-sky-950/30 dark:text-sky-100"
    >
      <span aria-hidden>{started ? '↪' : '↩'}</span>
      <span className="font-medium whitespace-nowrap">
        Delegate {started ? 'follow-up started' : 'follow-up completed'} <span data-testid="follow-up-mark">{d.label ?? '(follow-up)'}</span>
      </span>
      {d.agent_id && <span className="font-mono">{d.agent_id}</span>}
      {d.conversation_id && <SessionLink sessionKey={d.conversation_id} className="min-w-0 truncate font-mono text-sky-800 underline decoration-dotted dark:text-sky-300" />}
      <span className="ml-auto flex min-w-0 gap-2 text-sky-700/80 dark:text-sky-300/80">
        {d.run_id && (
          <span className="max-w-40 truncate font-mono" title={d.run_id}>
            {d.run_id}
          </span>
        )}
        <LocalTime iso={message.createdAt} />
      </span>
      <div className="basis-full border-t border-dashed border-sky-200 pt-1 dark:border-sky-800" data-testid="follow-up-body">
        <span className="mr-1 text-[11px] font-medium text-sky-700/80 uppercase dark:text-sky-300/80">
          {what}
          {failed && <span data-testid="follow-up-status"> · {d.status}</span>}
        </span>
        {message.content ? (
          <CollapsibleText text={message.content} lines={4} testId="message-text" label={what} className="text-[13px] leading-5" />
        ) : (
          <span data-testid="message-text" className="italic opacity-70">
            {started ? '(no prompt)' : '(no response)'}
          </span>
        )}
      </div>
    </div>
  );
}

function NoticeCell({ message }: { message: TranscriptMessage }) {
  return (
    <div
      role="note"
      data-testid="message"
      data-kind={message.kind}
      data-role={message.role}
      className="mx-auto max-w-3xl px-2 text-center text-xs text-zinc-500"
    >
      <span data-testid="message-text" className="whitespace-pre-wrap">
        {message.content}
      </span>
    </div>
  );
}

type Tone = 'user' | 'assistant' | 'persona' | 'mirror' | 'other';

const TONES: Record<Tone, string> = {
  user: 'bg-indigo-600 text-white',
  assistant: 'bg-white text-zinc-900 border border-zinc-200 dark:bg-zinc-800 dark:text-zinc-100 dark:border-zinc-700',
  persona: 'bg-violet-50 text-violet-950 border border-violet-200 dark:bg-violet-950/50 dark:text-violet-100 dark:border-violet-800',
  mirror: 'bg-teal-50 text-teal-950 border border-teal-200 dark:bg-teal-950/40 dark:text-teal-100 dark:border-teal-800',
  other: 'bg-amber-50 text-amber-950 border border-amber-200 dark:bg-amber-950/40 dark:text-amber-100 dark:border-amber-800',
};

export function Bubble(props: {
  side: 'left' | 'right';
  tone: Tone;
  who: string;
  meta?: ReactNode;
  testId: string;
  kind?: string;
  role?: string;
  authorType?: string;
  from?: string;
  pending?: boolean;
  /** Render string children as Markdown (assistant and persona text). */
  markdown?: boolean;
  children: ReactNode;
}) {
  const md = props.markdown && typeof props.children === 'string';
  return (
    <div
      data-testid={props.testId}
      data-kind={props.kind}
      data-role={props.role}
      data-author-type={props.authorType}
      data-from={props.from}
      className={cn('mx-auto flex w-full max-w-3xl flex-col gap-0.5', props.side === 'right' ? 'items-end' : 'items-start')}
    >
      <div className="flex max-w-full flex-wrap items-baseline gap-x-2 px-1 text-[11px] text-zinc-500">
        <span data-testid="message-author" className="font-semibold text-zinc-600 dark:text-zinc-300">
          {props.who}
        </span>
        {props.meta && <span className="min-w-0 break-all">{props.meta}</span>}
      </div>
      <div
        data-testid="message-text"
        data-markdown={md ? 'true' : undefined}
        className={cn(
          'max-w-[85%] rounded-2xl px-3.5 py-2 text-sm leading-6 break-words',
          md ? 'min-w-0 overflow-hidden' : 'whitespace-pre-wrap',
          TONES[props.tone],
          props.pending && !md && 'after:ml-0.5 after:inline-block after:h-4 after:w-1.5 after:animate-pulse after:bg-current after:align-text-bottom after:content-[""]',
        )}
      >
        {md ? <Markdown text={props.children as string} streaming={props.pending} /> : props.children}
      </div>
    </div>
  );
}
