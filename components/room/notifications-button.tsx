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
      <span aria-hidden>{state === 'on' ? '🔔' : '🔕'}</span>
    </Button>
  );
}
