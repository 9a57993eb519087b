// The channels module's public surface for the runtime and the gateway.
export { createChannels, deliveryKey, sendParams, type AgentSend, type ChannelDeps, type ChannelService, type SendParams, type SendResult } from './service';
export { channelOriginOf } from './reply-router';
export {
  buildAgentSessionKey,
  ensureOutboundSessionEntry,
  keyPart,
  resolveInboundSessionRoute,
  resolveOutboundSessionRoute,
  resolveThreadSessionKeys,
  type SessionRoute,
} from './routing';
export type { ChannelOrigin, ChannelPlugin, InboundMessage, OutboundTarget, Peer, ResolvedTarget } from './types';
