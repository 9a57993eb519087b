// Tests' pending tool item: a run that stops on a `sessions_list` call its agent asks about (the push tests' item).
import { type TestServer, until } from './harness';

/** Starts a run in `session` that stops on a pending `sessions_list` call; resolves with its approval and run ids. */
export async function pendingItem(t: TestServer, session: string): Promise<{ approvalId: string; runId: string }> {
  const { runId } = await t.rpc<{ runId: string }>('agent', { sessionKey: session, message: '/tool sessions_list {}' });
  const { approvals } = await until(async () => {
    const r = await t.rpc<{ approvals: Array<{ approvalId: string }> }>('approvals.list', { sessionKey: session });
    return r.approvals.length ? r : null;
  });
  return { approvalId: approvals[0]!.approvalId, runId };
}
