// MCP elicitation (CONTRACT §5): a server's `elicitation/create` during a tool call becomes a pending approval of kind
// `elicitation` on the calling session; the person's accept/decline/cancel (approvals.resolve) is the server's answer.
import crypto from 'node:crypto';
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { EventBus } from '../events/bus';
import type { Logger } from '../logger';
import { FencedError, nowIso, type Store } from '../store/store';
import type { McpCallInfo } from './call-info';
import { pendingRow } from '../orchestrator/approvals';
import { OPERATOR } from '../trust/trust';

/** How often a waiting elicitation reads its item (any process may answer it). */
const POLL_MS = 200;

/** What an elicitation item carries in its `args` (and approvals.list shows at its top level). */
export interface ElicitationArgs {
  server: string;
  /** The MCP tool that asked. */
  mcpTool: string;
  message: string;
  mode: 'form' | 'url';
  requestedSchema?: unknown;
  url?: string;
  elicitationId?: string;
}


export class Elicitations {
  constructor(private readonly d: { store: Store; bus: EventBus; log: Logger }) {}

  /** Raises the item and waits for its answer; a cancelled call (or a server that gives up) cancels it. */
  async ask(server: string, toolName: string, call: McpCallInfo | undefined, params: ElicitRequest['params'], serverSignal: AbortSignal): Promise<ElicitResult> {
    // Outside a tool call there is no session to ask on: the server is told no.
    if (!call) {
      this.d.log.warn({ server }, 'mcp elicitation outside a tool call; declined');
      return { action: 'decline' };
    }
    const mode = params.mode === 'url' ? 'url' : 'form';
    const p = params as { message: string; requestedSchema?: unknown; url?: string; elicitationId?: string };
    const args: ElicitationArgs = {
      server,
      mcpTool: call.tool,
      message: p.message,
      mode,
      ...(mode === 'form' ? { requestedSchema: p.requestedSchema } : { url: p.url, ...(p.elicitationId ? { elicitationId: p.elicitationId } : {}) }),
    };
    // `<callId>:elicit:…`: the re-drive of an interrupted call closes the items raised during it.
    const row = pendingRow({ sessionKey: call.sessionKey, runId: call.runId, callId: `${call.callId}:elicit:${crypto.randomBytes(4).toString('hex')}`, tool: toolName, args, kind: 'elicitation', ...(call.trust ? { trust: JSON.stringify(call.trust) } : {}) });
    await this.d.store.insertApproval(row);
    this.d.bus.emit(call.runId, 'approval', { phase: 'requested', approvalId: row.id, kind: 'elicitation', tool: toolName, args: { ...args }, callId: call.callId, requestedAt: row.requested_at, trust: call.trust ?? OPERATOR });
    // The run's own status: fenced by its session's lease (a zombie's write is refused, never sets an ended run back).
    await this.d.store.updateRunFenced(call.runId, call.sessionKey, { status: 'waiting_approval' }).catch((e: unknown) => fenced(call, e, true));
    try {
      return await this.answer(row.id, call, serverSignal);
    } finally {
      if (!call.signal.aborted) await this.d.store.updateRunFenced(call.runId, call.sessionKey, { status: 'running' }).catch((e: unknown) => fenced(call, e, false));
    }
  }

  /** Polls the item until it is answered; the call's cancellation, the server's, or the call's end cancels it. */
  private async answer(id: string, call: McpCallInfo, serverSignal: AbortSignal): Promise<ElicitResult> {
    const why: Array<[AbortSignal | undefined, string]> = [
      [call.signal, 'the tool call was cancelled'],
      [serverSignal, 'the MCP server cancelled the request'],
      [call.ended, 'the tool call ended without waiting for the answer'],
    ];
    const signals = why.flatMap(([s]) => (s ? [s] : []));
    for (;;) {
      const reason = why.find(([s]) => s?.aborted)?.[1];
      if (reason) {
        if (await this.d.store.settleApproval(id, 'cancelled', 'cancel', reason)) this.d.bus.emit(call.runId, 'approval', { phase: 'resolved', approvalId: id, decision: 'cancel', reason });
        return { action: 'cancel' };
      }
      const row = await this.d.store.getApproval(id);
      if (row && row.status !== 'pending') {
        const action = (row.decision ?? (row.status === 'allowed' ? 'accept' : row.status === 'denied' ? 'decline' : 'cancel')) as ElicitResult['action'];
        if (action !== 'accept') return { action };
        const content = row.response ? (JSON.parse(row.response) as ElicitResult['content']) : undefined;
        return content ? { action, content } : { action };
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, POLL_MS);
        function done() {
          clearTimeout(t);
          for (const s of signals) s.removeEventListener('abort', done);
          resolve();
        }
        for (const s of signals) s.addEventListener('abort', done, { once: true });
      });
    }
  }
}

/**
 * A refused status write (FencedError) is kept on the call, which throws it once the MCP request returns (the run ends
 * quietly); `rethrow`: thrown here as well (nothing is asked). Any other failure of the write is rethrown only with `rethrow`.
 */
function fenced(call: McpCallInfo, e: unknown, rethrow: boolean): void {
  if (e instanceof FencedError) call.fenced ??= e;
  if (rethrow) throw e;
}
