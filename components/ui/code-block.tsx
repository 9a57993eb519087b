// Scrollable monospace block for JSON args and results: long content scrolls inside, never grows the layout.
import { cn } from '@/lib/cn';

export function CodeBlock({
  text,
  className,
  label,
  maxHeight = 'max-h-60',
}: {
  text: string;
  className?: string;
  label?: string;
  /** A Tailwind max-height class: the block scrolls past it. */
  maxHeight?: string;
}) {
  return (
    <pre
      aria-label={label}
      tabIndex={0}
      className={cn(
        'overflow-auto rounded-md bg-zinc-100 p-2 font-mono text-xs leading-5 whitespace-pre-wrap break-all text-zinc-800',
        'dark:bg-zinc-900 dark:text-zinc-200',
        maxHeight,
        className,
      )}
    >
      {text}
    </pre>
  );
}
