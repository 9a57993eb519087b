// The three decisions on an approval (CONTRACT §7 names): the toolbox's Approval row and the inbox share them.
import type { ReactNode } from 'react';
import { Button } from '../ui/button';

export type ApprovalDecision = 'allow_once' | 'allow_always' | 'deny';

export function DecisionButtons({ busy, decide, children }: { busy: boolean; decide: (d: ApprovalDecision) => void; children?: ReactNode }) {
  return (
    <div className="flex flex-wrap gap-2">
      <Button size="sm" variant="primary" disabled={busy} onClick={() => decide('allow_once')}>
        Allow once
      </Button>
      <Button size="sm" disabled={busy} onClick={() => decide('allow_always')}>
        Allow always
      </Button>
      <Button size="sm" variant="danger" disabled={busy} onClick={() => decide('deny')}>
        Deny
      </Button>
      {children}
    </div>
  );
}
