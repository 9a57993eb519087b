'use client';
// The message box: Enter sends, Shift+Enter adds a line; drafts survive session switches.
import { errorText } from '@/lib/room/connection-text';
import { useTRPC } from '@/lib/trpc/client';
import { useRoomStore } from '@/stores/room-store-provider';
import { useMutation } from '@tanstack/react-query';
import { useId, type KeyboardEvent } from 'react';
import { Button } from '../ui/button';

export function Composer({ sessionKey }: { sessionKey: string }) {
  const trpc = useTRPC();
  const draft = useRoomStore((s) => s.drafts[sessionKey] ?? '');
  const setDraft = useRoomStore((s) => s.setDraft);
  const errorId = useId();
  const send = useMutation(trpc.chat.agent.mutationOptions());

  const submit = () => {
    const message = draft.trim();
    if (!message || send.isPending) return;
    setDraft(sessionKey, '');
    send.mutate(
      { sessionKey, message },
      // Give the text back so nothing typed is lost when the server refuses it.
      { onError: () => setDraft(sessionKey, draft) },
    );
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      submit();
    }
  };

  return (
    <form
      data-testid="composer"
      className="border-t border-zinc-200 bg-white px-4 py-3 dark:border-zinc-800 dark:bg-zinc-950"
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <div className="mx-auto flex max-w-3xl items-end gap-2">
        <textarea
          aria-label="Message"
          aria-describedby={send.isError ? errorId : undefined}
          name="message"
          rows={Math.min(8, Math.max(1, draft.split('\n').length))}
          value={draft}
          placeholder="Message the agent…"
          title="Enter sends, Shift+Enter adds a line"
          onChange={(e) => setDraft(sessionKey, e.target.value)}
          onKeyDown={onKeyDown}
          className="min-h-10 flex-1 resize-none rounded-lg border border-zinc-300 bg-white px-3 py-2 text-sm leading-6 outline-none focus:border-indigo-500 focus:ring-2 focus:ring-indigo-500/30 dark:border-zinc-700 dark:bg-zinc-900"
        />
        <Button type="submit" variant="primary" disabled={!draft.trim() || send.isPending} aria-label="Send">
          Send
        </Button>
      </div>
      {send.isError && (
        <p id={errorId} role="alert" className="mx-auto mt-1 max-w-3xl text-xs text-rose-600">
          Not sent: {errorText(send.error)}
        </p>
      )}
    </form>
  );
}
