'use client';
// The header's "Notifications" button (CONTRACT §7): subscribes this browser to pushes of pending items, or unsubscribes.
import { usePendingCount } from '../approvals/pending-count';
import { useAppBadge, usePush, type PushState } from '@/lib/room/use-push';
import { Button } from '../ui/button';

const TITLES: Record<PushState, string> = {
  unsupported: 'Notifications: this browser has no Web Push',
  off: 'Notifications: off — click to be notified of pending approvals',
  on: 'Notifications: on — click to turn them off for this browser',
  working: 'Notifications: …',
  denied: 'Notifications: blocked in the browser settings',
  error: 'Notifications: could not subscribe',
};

export function NotificationsButton() {
  const { state, detail, toggle } = usePush();
  useAppBadge(usePendingCount());
  return (
    <Button
      size="sm"
      variant={state === 'on' ? 'secondary' : 'ghost'}
      aria-label="Notifications"
      aria-pressed={state === 'on'}
      title={detail ? `${TITLES[state]} (${detail})` : TITLES[state]}
      data-testid="notifications"
      data-state={state}
      disabled={state === 'unsupported' || state === 'working'}
      onClick={toggle}
    >
      <BellIcon off={state !== 'on'} />
    </Button>
  );
}

/** A bell, struck through when off: drawn, not an emoji (a machine without a colour emoji font showed an empty box). */
function BellIcon({ off }: { off: boolean }) {
  return (
    <svg aria-hidden data-testid="notifications-icon" viewBox="0 0 16 16" width="14" height="14" fill="none" stroke="currentColor" strokeWidth="1.5" strokeLinecap="round" strokeLinejoin="round">
      <path d="M4 11V7a4 4 0 0 1 8 0v4l1 1.5H3L4 11z" />
      <path d="M6.5 14a1.5 1.5 0 0 0 3 0" />
      {off && <path d="M2 2l12 12" />}
    </svg>
  );
}
