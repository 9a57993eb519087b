'use client';
// Text clamped to a few lines when long, with a "Show more" / "Show less" toggle (the full text is in the DOM either way).
import { cn } from '@/lib/cn';
import { useId, useState } from 'react';

const CLAMP = { 3: 'line-clamp-3', 4: 'line-clamp-4', 6: 'line-clamp-6' } as const;
/** Roughly how many characters fill one line of a cell: past lines × this, a single paragraph is long too. */
const CHARS_PER_LINE = 90;

export function isLongText(text: string, lines: number): boolean {
  return text.split('\n').length > lines || text.length > lines * CHARS_PER_LINE;
}

export function CollapsibleText({
  text,
  lines = 4,
  testId,
  className,
  label = 'text',
}: {
  text: string;
  lines?: keyof typeof CLAMP;
  testId?: string;
  className?: string;
  /** What the toggle reveals, for its accessible name ("Show more of the response"). */
  label?: string;
}) {
  const [open, setOpen] = useState(false);
  const id = useId();
  const long = isLongText(text, lines);
  const collapsed = long && !open;
  return (
    <div className="min-w-0">
      <div
        id={id}
        data-testid={testId}
        data-collapsed={collapsed ? 'true' : undefined}
        className={cn('whitespace-pre-wrap break-words', collapsed && CLAMP[lines], className)}
      >
        {text}
      </div>
      {long && (
        <button
          type="button"
          aria-expanded={open}
          aria-controls={id}
          aria-label={open ? `Show less of the ${label}` : `Show more of the ${label}`}
          onClick={() => setOpen((o) => !o)}
          className="mt-0.5 text-[11px] font-medium underline decoration-dotted underline-offset-2 opacity-80 hover:opacity-100"
        >
          {open ? 'Show less' : 'Show more'}
        </button>
      )}
    </div>
  );
}
