// webchat: the browser. Its delivery is the transcript itself, so a send only mirrors; `to` names the browser user.
import type { ChannelPlugin } from '../types';
import { invalidTarget, nonEmpty, stripChannelPrefix, typedTarget } from '../targets';

export function createWebchatChannel(): ChannelPlugin {
  return {
    id: 'webchat',
    label: 'webchat',
    threadScoping: 'suffix',
    resolveTarget(t) {
      const raw = stripChannelPrefix(t.to, ['webchat']);
      const typed = typedTarget(raw, ['user']);
      const id = typed?.id ?? raw;
      if (!id) throw invalidTarget('webchat', t.to, 'name the browser user');
      const threadId = nonEmpty(t.threadId);
      return { to: id, peer: { kind: 'direct', id }, ...(threadId ? { threadId, sessionThreadId: threadId } : {}) };
    },
  };
}
