'use client';
// A timestamp in the reader's own clock or as "3m ago": rendered after hydration, so server and browser never disagree.
import { clockTime, relativeTime } from '@/lib/format';
import { useSyncExternalStore } from 'react';

const noopSubscribe = () => () => {};

function useIsClient(): boolean {
  return useSyncExternalStore(noopSubscribe, () => true, () => false);
}

export function LocalTime({ iso, format = 'clock' }: { iso: string | undefined; format?: 'clock' | 'relative' }) {
  const client = useIsClient();
  if (!iso) return null;
  return (
    <time dateTime={iso} title={iso}>
      {client ? (format === 'clock' ? clockTime(iso) : relativeTime(iso)) : ''}
    </time>
  );
}
