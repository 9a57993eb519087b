// Shown at `/` without a valid login cookie: how to get in (the API is never open).
export function LoginHint() {
  return (
    <main data-testid="login-hint" className="flex min-h-dvh items-center justify-center p-6">
      <div className="max-w-md space-y-3 rounded-xl border border-zinc-200 p-6 dark:border-zinc-800">
        <h1 className="text-lg font-semibold">crosstalk</h1>
        <p className="text-sm text-zinc-700 dark:text-zinc-300">
          Open the login URL printed by the server (<code className="font-mono">/login?token=…</code>) to enter the room.
        </p>
        <p className="text-xs text-zinc-500">
          The token is <code className="font-mono">CROSSTALK_TOKEN</code>, or the one generated on first start and kept in the data
          directory.
        </p>
      </div>
    </main>
  );
}
