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
