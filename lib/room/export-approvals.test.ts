// The decision log's export: every page, and CSV that a spreadsheet reads back as the same cells (no formulas run).
import { describe, expect, it } from 'vitest';
import { type ApprovalRecordView, csvCell, fetchWholeRecord, recordToCsv } from './export-approvals';

const rec = (n: number, extra: Partial<ApprovalRecordView> = {}): ApprovalRecordView => ({
  approvalId: `apr_${n}`, sessionKey: 'agent:main:main', runId: `run_${n}`, kind: 'tool', tool: 'exec', decision: 'allow_once',
  decidedBy: { type: 'user', id: 'room' }, requestedAt: '2026-01-01T00:00:00.000Z', decidedAt: '2026-01-01T00:00:01.000Z', ...extra,
});

describe('the decision log export', () => {
  it('fetches every page in order', async () => {
    const pages: Record<string, { approvals: ApprovalRecordView[]; next_cursor: string | null }> = {
      start: { approvals: [rec(3), rec(2)], next_cursor: 'c1' },
      c1: { approvals: [rec(1)], next_cursor: null },
    };
    expect((await fetchWholeRecord(async (c) => pages[c ?? 'start']!)).map((r) => r.approvalId)).toEqual(['apr_3', 'apr_2', 'apr_1']);
  });

  it('writes RFC 4180 CSV: a header, quoted cells where needed, chat peers with their channel', () => {
    const csv = recordToCsv([
      rec(1, { reason: 'fine, "really"\nok' }),
      rec(2, { decision: 'deny', decidedBy: { type: 'chat', id: '42', channel: 'telegram', name: 'ann' } }),
      rec(3, { decidedBy: { type: 'reviewer', id: 'scripted' }, reason: '=HYPERLINK("x")' }),
    ]);
    const lines = csv.split('\r\n');
    expect(lines[0]).toBe('approvalId,sessionKey,runId,kind,tool,decision,decidedBy,decidedById,reason,requestedAt,decidedAt');
    expect(csv).toContain('apr_1,agent:main:main,run_1,tool,exec,allow_once,user,room,"fine, ""really""\nok",2026-01-01T00:00:00.000Z,2026-01-01T00:00:01.000Z\r\n');
    expect(csv).toContain('apr_2,agent:main:main,run_2,tool,exec,deny,chat,telegram:42,,');
    expect(csv).toContain(`reviewer,scripted,"'=HYPERLINK(""x"")"`);
    expect(csv.endsWith('\r\n')).toBe(true);
    expect(csvCell('-1')).toBe("'-1");
    expect(csvCell('plain')).toBe('plain');
  });
});
