// A remote A2A agent as a model whose A2A client SDK loads with its first step (issue 24.5: nothing at start that a first request does not need).
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { lazyModel } from '../models/lazy-model';
import type { Store } from '../store/store';
import type { OpenTask, RemoteA2AConfig, RemoteA2ADeps } from './remote-model';

let loading: Promise<typeof import('./remote-model')> | undefined;
const remoteModel = () => (loading ??= import('./remote-model'));

/** The same model as `createRemoteA2AModel`, its module loaded on the first step. */
export function lazyRemoteA2AModel(cfg: RemoteA2AConfig, deps: RemoteA2ADeps): LanguageModelV4 {
  return lazyModel('a2a', cfg.url, async () => (await remoteModel()).createRemoteA2AModel(cfg, deps));
}

/** `remoteContextId` of ./remote-model, loading it on call. */
export const lazyRemoteContextId: (typeof import('./remote-model'))['remoteContextId'] = async (store, sessionKey) => (await remoteModel()).remoteContextId(store, sessionKey);

/** A session's remote task waiting for input, kept in the session's meta (`a2aOpenTaskId`); no SDK needed. */
export function remoteOpenTask(store: Store, sessionKey: string): OpenTask {
  const meta = async () => {
    const row = await store.getSession(sessionKey);
    return { row, meta: (row?.meta ? JSON.parse(row.meta) : {}) as Record<string, unknown> };
  };
  return {
    async get() {
      const { meta: m } = await meta();
      return typeof m.a2aOpenTaskId === 'string' ? m.a2aOpenTaskId : undefined;
    },
    async set(taskId) {
      const { row, meta: m } = await meta();
      if (!row || m.a2aOpenTaskId === taskId) return;
      const { a2aOpenTaskId: _, ...rest } = m;
      await store.patchSession(sessionKey, { meta: JSON.stringify(taskId ? { ...rest, a2aOpenTaskId: taskId } : rest) });
    },
  };
}
