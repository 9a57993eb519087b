// The decision log (approvals.history) as a download: every page fetched, then JSON or CSV (RFC 4180).
import { fetchAllPages } from './fetch-pages';

export interface ApprovalRecordView {
  approvalId: string;
  sessionKey: string;
  runId: string;
  kind: string;
  tool: string;
  decision: string;
  decidedBy: { type: string; id?: string; channel?: string; name?: string };
  reason?: string;
  requestedAt: string;
  decidedAt: string;
}

export type RecordFetcher = (cursor: string | undefined) => Promise<{ approvals: ApprovalRecordView[]; next_cursor: string | null }>;

/** Newest decision first, as the list pages it; pages of 200 until the cursor runs out. */
export function fetchWholeRecord(fetchPage: RecordFetcher): Promise<ApprovalRecordView[]> {
  return fetchAllPages(fetchPage, (page) => page.approvals);
}

export const RECORD_CSV_COLUMNS = ['approvalId', 'sessionKey', 'runId', 'kind', 'tool', 'decision', 'decidedBy', 'decidedById', 'reason', 'requestedAt', 'decidedAt'] as const;

/**
 * One CSV cell: quoted when it holds a comma, quote or line break. A cell a spreadsheet would run as a formula (it starts
 * with = + - @, a tab or a carriage return: a reason is free text from a person or a model) gets a leading `'`.
 */
export function csvCell(v: string): string {
  const safe = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function recordToCsv(rows: readonly ApprovalRecordView[]): string {
  const lines = [RECORD_CSV_COLUMNS.join(',')];
  for (const r of rows) {
    const by = r.decidedBy.type === 'chat' && r.decidedBy.channel ? `${r.decidedBy.channel}:${r.decidedBy.id ?? ''}` : (r.decidedBy.id ?? '');
    lines.push([r.approvalId, r.sessionKey, r.runId, r.kind, r.tool, r.decision, r.decidedBy.type, by, r.reason ?? '', r.requestedAt, r.decidedAt].map(csvCell).join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}

export function recordToJson(rows: readonly ApprovalRecordView[]): string {
  return JSON.stringify({ exportedAt: new Date().toISOString(), approvals: rows }, null, 2);
}

export const recordFileName = (ext: 'json' | 'csv', at = new Date()) => `crosstalk-approvals-${at.toISOString().slice(0, 19).replace(/[:T]/g, '-')}.${ext}`;
