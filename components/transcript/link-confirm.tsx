'use client';
// The confirm-before-leaving dialog for links in model output (streamdown's linkSafety modal, drawn by us): a real modal
// <dialog> named by its title, so the focus moves into it, Tab stays inside, Escape closes it and the focus returns to
// the link that opened it.
import { useEffect, useId, useRef, useState } from 'react';
import { Button } from '../ui/button';

export interface LinkConfirmProps {
  isOpen: boolean;
  onClose: () => void;
  onConfirm: () => void;
  url: string;
}

export function LinkConfirm(props: LinkConfirmProps) {
  return props.isOpen ? <LinkConfirmDialog {...props} /> : null;
}

function LinkConfirmDialog({ onClose, onConfirm, url }: LinkConfirmProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const openRef = useRef<HTMLButtonElement>(null);
  const titleId = useId();
  const textId = useId();
  const [copied, setCopied] = useState(false);
  // Mounted only while open (one dialog, not one per link): shown on mount, and closed natively (Escape, a button, the
  // backdrop) so the browser hands the focus back to the link before the dialog is unmounted.
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    // After showModal (which focuses the first button): the answer a person came for is the default.
    openRef.current?.focus();
  }, []);
  const close = () => ref.current?.close();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(url);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };
  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      aria-describedby={textId}
      data-testid="link-confirm"
      onClose={onClose}
      onClick={(e) => e.target === e.currentTarget && close()}
      className="m-auto w-[min(28rem,calc(100vw-1rem))] rounded-lg border border-zinc-200 bg-white p-4 text-zinc-900 shadow-2xl backdrop:bg-black/40 dark:border-zinc-700 dark:bg-zinc-900 dark:text-zinc-100"
    >
      <h2 id={titleId} className="text-base font-semibold">
        Open external link?
      </h2>
      <p id={textId} className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
        You&apos;re about to visit an external website.
      </p>
      <p className="mt-2 break-all rounded bg-zinc-100 px-2 py-1 font-mono text-xs dark:bg-zinc-800" data-testid="link-confirm-url">
        {url}
      </p>
      <div className="mt-3 flex flex-wrap justify-end gap-2">
        <Button variant="ghost" onClick={close}>
          Close
        </Button>
        <Button onClick={copy}>{copied ? 'Copied' : 'Copy link'}</Button>
        <Button
          variant="primary"
          ref={openRef}
          onClick={() => {
            onConfirm();
            close();
          }}
        >
          Open link
        </Button>
      </div>
      <output aria-live="polite" className="sr-only">
        {copied ? 'Link copied' : ''}
      </output>
    </dialog>
  );
}
