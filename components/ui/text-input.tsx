// Text input primitive: one look for every single-line field (search, filters, reason, prompts).
import { cn } from '@/lib/cn';
import type { InputHTMLAttributes } from 'react';

export interface TextInputProps extends Omit<InputHTMLAttributes<HTMLInputElement>, 'size'> {
  size?: 'sm' | 'md';
}

export function TextInput({ size = 'md', className, type = 'text', ...rest }: TextInputProps) {
  return (
    <input
      type={type}
      className={cn(
        'rounded-md border border-zinc-300 bg-white px-2 outline-none focus:border-indigo-500 dark:border-zinc-700 dark:bg-zinc-900',
        size === 'sm' ? 'h-7 text-xs' : 'h-8 text-sm',
        className,
      )}
      {...rest}
    />
  );
}
