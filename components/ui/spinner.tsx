// A tiny animated activity dot for "running" states.
import { cn } from '@/lib/cn';

export function Spinner({ className, label = 'Working' }: { className?: string; label?: string }) {
  return (
    <span role="img" aria-label={label} className={cn('relative inline-flex size-2.5', className)}>
      <span className="absolute inline-flex size-full animate-ping rounded-full bg-indigo-400 opacity-75" />
      <span className="relative inline-flex size-full rounded-full bg-indigo-500" />
    </span>
  );
}
