// The room at `/`: the login hint without a valid cookie, else the live room opened on the default agent's main session.
import { Room } from '@/components/room/room';
import { RoomProviders } from '@/components/room/room-providers';
import { LoginHint } from '@/components/status/login-hint';
import { historyInput, historyPaging, sessionsListInput, sessionsPaging } from '@/lib/room/queries';
import { createServerTRPC, getServerQueryClient, HydrateClient, prefetchAll, roomHost } from '@/lib/trpc/server';
import { isAuthorized } from '@/server/auth';
import { sessionKeySchema } from '@/server/gateway/schemas';
import { headers } from 'next/headers';
import { mainSessionKey } from '@/server/sessions/keys';

export const dynamic = 'force-dynamic';

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

export default async function WorkspacePage({ searchParams }: { searchParams: SearchParams }) {
  const host = await roomHost();
  const requestHeaders = new Headers(await headers());
  if (!isAuthorized(requestHeaders, host.token, { navigation: true })) return <LoginHint />;
  // `/?session=<key>` deep-links a session; anything invalid falls back to the default agent's main session.
  const requested = (await searchParams).session;
  const parsed = sessionKeySchema.safeParse(typeof requested === 'string' ? requested : '');
  const defaultSessionKey = mainSessionKey(host.defaultAgentId);
  const sessionKey = parsed.success ? parsed.data : defaultSessionKey;

  // First paint comes with data: what the room asks for first is fetched here and hydrated.
  // (Failures are left to the browser's own fetch, e.g. a session with no row yet.)
  const trpc = await createServerTRPC(requestHeaders);
  const qc = getServerQueryClient();
  await prefetchAll([
    () => qc.prefetchQuery(trpc.agents.list.queryOptions({})),
    () => qc.prefetchInfiniteQuery(trpc.sessions.list.infiniteQueryOptions(sessionsListInput, sessionsPaging)),
    () => qc.prefetchQuery(trpc.approvals.list.queryOptions({ sessionKey })),
    () => qc.prefetchQuery(trpc.status.get.queryOptions(undefined)),
    () => qc.prefetchInfiniteQuery(trpc.chat.history.infiniteQueryOptions(historyInput(sessionKey), historyPaging)),
  ]);

  return (
    <RoomProviders init={{ selectedSessionKey: sessionKey, defaultSessionKey }}>
      <HydrateClient>
        <Room />
      </HydrateClient>
    </RoomProviders>
  );
}
