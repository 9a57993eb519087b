// The three decisions on an approval (CONTRACT §7 names): the toolbox's Approval row and the inbox share them.
import type { KeyboardEvent, ReactNode } from 'react';
import { isTypingTarget } from '@/lib/room/use-room-keys';
import { Button } from '../ui/button';

export type ApprovalDecision = 'allow_once' | 'allow_always' | 'deny';

/** `always: false` for a `budget` item (CONTRACT §7: "Allow once" and "Deny" only). */
export function DecisionButtons({ busy, decide, always = true, children }: { busy: boolean; decide: (d: ApprovalDecision) => void; always?: boolean; children?: ReactNode }) {
  return (
    <div className="flex flex-wrap gap-2">
      <Button size="sm" variant="primary" disabled={busy} onClick={() => decide('allow_once')}>
        Allow once
      </Button>
      {always && (
        <Button size="sm" disabled={busy} onClick={() => decide('allow_always')}>
          Allow always
        </Button>
      )}
      <Button size="sm" variant="danger" disabled={busy} onClick={() => decide('deny')}>
        Deny
      </Button>
      {children}
    </div>
  );
}

/** `a` allows once, `d` denies, on a focused approval (not while typing); true when the key was taken. */
export function decisionKey(e: KeyboardEvent, busy: boolean, decide: (d: ApprovalDecision) => void): boolean {
  if (busy || e.metaKey || e.ctrlKey || e.altKey || isTypingTarget(e.target)) return false;
  if (e.key !== 'a' && e.key !== 'd') return false;
  e.preventDefault();
  e.stopPropagation();
  decide(e.key === 'a' ? 'allow_once' : 'deny');
  return true;
}
