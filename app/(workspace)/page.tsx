// The room at `/`: the login hint without a valid cookie, else the live room opened on the default agent's main session.
import { Room } from '@/components/room/room';
import { RoomProviders } from '@/components/room/room-providers';
import { LoginHint } from '@/components/status/login-hint';
import { isAuthorized } from '@/server/auth';
import { sessionKeySchema } from '@/server/gateway/schemas';
import { getRuntime } from '@/server/runtime';
import { headers } from 'next/headers';

export const dynamic = 'force-dynamic';

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

export default async function WorkspacePage({ searchParams }: { searchParams: SearchParams }) {
  const runtime = await getRuntime();
  if (!isAuthorized(new Headers(await headers()), runtime.token)) return <LoginHint />;
  // `/?session=<key>` deep-links a session; anything invalid falls back to the default agent's main session.
  const requested = (await searchParams).session;
  const parsed = sessionKeySchema.safeParse(typeof requested === 'string' ? requested : '');
  const defaultSessionKey = `agent:${runtime.config.defaultAgentId}:main`;
  const sessionKey = parsed.success ? parsed.data : defaultSessionKey;
  return (
    <RoomProviders init={{ selectedSessionKey: sessionKey, defaultSessionKey }}>
      <Room />
    </RoomProviders>
  );
}
