// The tRPC app router: one sub-router per domain; AppRouter is the type the browser client is built from.
import { createCallerFactory, createTRPCRouter } from './init';
import { agentsRouter } from './routers/agents';
import { approvalsRouter } from './routers/approvals';
import { chatRouter } from './routers/chat';
import { delegatesRouter } from './routers/delegates';
import { deliveriesRouter } from './routers/deliveries';
import { eventsRouter } from './routers/events';
import { sessionsRouter } from './routers/sessions';
import { statusRouter } from './routers/status';
import { pairingsRouter } from './routers/pairings';
import { pushRouter } from './routers/push';

export const appRouter = createTRPCRouter({
  sessions: sessionsRouter,
  chat: chatRouter,
  approvals: approvalsRouter,
  agents: agentsRouter,
  events: eventsRouter,
  delegates: delegatesRouter,
  deliveries: deliveriesRouter,
  status: statusRouter,
  pairings: pairingsRouter,
  push: pushRouter,
});

export type AppRouter = typeof appRouter;

/** Server-side caller (server components): `createCaller(createTRPCContext({headers, runtime}))`. */
export const createCaller = createCallerFactory(appRouter);
