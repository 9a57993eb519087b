// The A2A agent card of a crosstalk agent (CONTRACT §8): JSON-RPC v1.0 and v0.3 interfaces at /a2a/<agentId>, bearer auth.
import type { AgentCard } from '@a2a-js/sdk';
import type { AgentConfig } from '../config';

export function agentCardFor(agent: AgentConfig, base: string): AgentCard {
  const url = `${base}/a2a/${agent.id}`;
  const iface = (protocolVersion: string) => ({ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion });
  const description = `${agent.name} (persona "${agent.persona}"), an agent of a crosstalk gateway. Each contextId is one conversation.`;
  return {
    name: agent.name,
    description,
    supportedInterfaces: [iface('1.0'), iface('0.3')],
    provider: { organization: 'crosstalk', url: base },
    version: '0.1.0',
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      bearer: { scheme: { $case: 'httpAuthSecurityScheme', value: { description: 'The gateway token (CROSSTALK_TOKEN)', scheme: 'Bearer', bearerFormat: '' } } },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'chat', name: `Talk to ${agent.name}`, description, tags: ['chat', 'crosstalk'], examples: [], inputModes: ['text/plain'], outputModes: ['text/plain'], securityRequirements: [] },
    ],
    signatures: [],
  };
}

/**
 * The v0.3 form of the card, served (like the SDK's own server does) to a request without `A2A-Version` or with 0.3:
 * `url`, `preferredTransport`, `protocolVersion` and v0.3 security schemes, plus the v1.0 `supportedInterfaces`.
 */
export function legacyCardJson(card: AgentCard, v1Json: Record<string, unknown>): Record<string, unknown> {
  const legacy = card.supportedInterfaces.find((i) => i.protocolVersion === '0.3') ?? card.supportedInterfaces[0]!;
  return {
    name: card.name,
    description: card.description,
    version: card.version,
    url: legacy.url,
    preferredTransport: legacy.protocolBinding,
    protocolVersion: '0.3',
    capabilities: { streaming: card.capabilities?.streaming ?? false, pushNotifications: card.capabilities?.pushNotifications ?? false },
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    skills: card.skills.map((s) => ({ id: s.id, name: s.name, description: s.description, tags: s.tags, inputModes: s.inputModes, outputModes: s.outputModes })),
    ...(card.provider ? { provider: { url: card.provider.url, organization: card.provider.organization } } : {}),
    supportsAuthenticatedExtendedCard: false,
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'The gateway token (CROSSTALK_TOKEN)' } },
    security: [{ bearer: [] }],
    supportedInterfaces: v1Json.supportedInterfaces,
  };
}
