// One transcript row, rendered by kind: user, assistant, persona posts, tool cards, and notices.
import { cn } from '@/lib/cn';
import type { ReactNode } from 'react';
import type { TranscriptMessage } from '@/lib/trpc/types';
import { LocalTime } from '../ui/local-time';
import { ToolCard } from './tool-card';

const NOTICE_LABEL: Partial<Record<TranscriptMessage['kind'], string>> = {
  inter_session: 'message from another session',
  agent_callback_result: 'callback result',
  delegate_follow_up_started: 'delegate follow-up started',
  delegate_follow_up_completed: 'delegate follow-up completed',
  mirror: 'mirrored',
  steer: 'steered into the run',
  notice: 'notice',
};

export function MessageRow({ message }: { message: TranscriptMessage }) {
  if (message.kind === 'tool_call' || message.kind === 'tool_result') return <ToolCard message={message} />;
  const label = NOTICE_LABEL[message.kind];
  const isNotice = message.kind === 'notice' || message.role === 'system';
  if (isNotice) {
    return (
      <div data-testid="message" data-kind={message.kind} data-role={message.role} className="mx-auto max-w-3xl px-2 text-center text-xs text-zinc-500">
        <span className="whitespace-pre-wrap">{message.content}</span>
      </div>
    );
  }
  const isUser = message.role === 'user' && message.author.type !== 'agent' && message.kind === 'message';
  const isPersona = message.author.type === 'persona';
  const who = isUser ? 'You' : (message.author.name ?? message.author.id);
  return (
    <Bubble
      side={isUser ? 'right' : 'left'}
      tone={isUser ? 'user' : isPersona ? 'persona' : label ? 'other' : 'assistant'}
      who={who}
      meta={
        <>
          {label && <span>{label} · </span>}
          <LocalTime iso={message.createdAt} />
        </>
      }
      testId="message"
      kind={message.kind}
      role={message.role}
      authorType={message.author.type}
    >
      {message.content}
    </Bubble>
  );
}

type Tone = 'user' | 'assistant' | 'persona' | 'other';

const TONES: Record<Tone, string> = {
  user: 'bg-indigo-600 text-white',
  assistant: 'bg-white text-zinc-900 border border-zinc-200 dark:bg-zinc-800 dark:text-zinc-100 dark:border-zinc-700',
  persona: 'bg-violet-50 text-violet-950 border border-violet-200 dark:bg-violet-950/50 dark:text-violet-100 dark:border-violet-800',
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
  pending?: boolean;
  children: ReactNode;
}) {
  return (
    <div
      data-testid={props.testId}
      data-kind={props.kind}
      data-role={props.role}
      data-author-type={props.authorType}
      className={cn('mx-auto flex w-full max-w-3xl flex-col gap-0.5', props.side === 'right' ? 'items-end' : 'items-start')}
    >
      <div className="flex items-baseline gap-2 px-1 text-[11px] text-zinc-500">
        <span className="font-semibold text-zinc-600 dark:text-zinc-300">{props.who}</span>
        {props.meta && <span>{props.meta}</span>}
      </div>
      <div
        data-testid="message-text"
        className={cn(
          'max-w-[85%] rounded-2xl px-3.5 py-2 text-sm leading-6 whitespace-pre-wrap break-words',
          TONES[props.tone],
          props.pending && 'after:ml-0.5 after:inline-block after:h-4 after:w-1.5 after:animate-pulse after:bg-current after:align-text-bottom after:content-[""]',
        )}
      >
        {props.children}
      </div>
    </div>
  );
}
