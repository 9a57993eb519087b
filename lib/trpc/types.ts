// Client-side types inferred from the tRPC router, plus the shared event/transcript shapes.
import type { AppRouter } from '@/server/trpc/root';
import type { TRPCClientErrorLike } from '@trpc/client';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';

export type RouterInputs = inferRouterInputs<AppRouter>;
export type RouterOutputs = inferRouterOutputs<AppRouter>;
export type TRPCError = TRPCClientErrorLike<AppRouter>;

export type HistoryPage = RouterOutputs['chat']['history'];
export type AgentInfo = RouterOutputs['agents']['list']['agents'][number];
// As they arrive over the wire (JSON-serialized), which is what the browser holds.
export type TranscriptMessage = HistoryPage['messages'][number];
export type PendingApproval = RouterOutputs['approvals']['list']['approvals'][number];
export type SessionsPage = RouterOutputs['sessions']['list'];
export type SessionSummary = SessionsPage['sessions'][number];
export type DelegateSummary = RouterOutputs['delegates']['list']['sessions'][number];
export type DelegateRunResult = RouterOutputs['delegates']['resume'];
export type StatusSummary = RouterOutputs['status']['get'];

export type { AgentEvent } from '@/server/events/types';

/** The CONTRACT §6 code a tRPC error carries in `data.code`, when it has one. */
export function errorCode(e: unknown): string | undefined {
  const data = (e as { data?: { code?: unknown } } | null)?.data;
  return typeof data?.code === 'string' ? data.code : undefined;
}
