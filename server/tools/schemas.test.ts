// Tools as a real model sees them: every registered tool's JSON schema types, constrains and describes every property,
// and a bad argument is answered invalid_request naming the field (never thrown at the model).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { functionTools } from '../orchestrator/model-step';
import { startTestServer, type TestServer } from '../testing/harness';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

type Schema = Record<string, unknown>;

/**
 * Problems of one schema node: a property with no type or no description; for our own tools (`bounds`) also a string
 * with no length bound, a number with no maximum, an array with no maxItems. MCP tools (`mcp__*`) bring their servers'
 * schemas, so they are held to types and descriptions only.
 */
function problems(node: Schema, path: string, out: string[], isProperty: boolean, bounds = true) {
  const variants = (node.anyOf ?? node.oneOf) as Schema[] | undefined;
  if (isProperty && typeof node.description !== 'string') out.push(`${path}: no description`);
  if (variants) {
    variants.forEach((v, i) => problems(v, `${path}|${i}`, out, false, bounds));
    return;
  }
  const type = node.type;
  if (type === undefined && node.const === undefined && node.enum === undefined) out.push(`${path}: untyped`);
  if (bounds && type === 'string' && node.enum === undefined && node.const === undefined && node.maxLength === undefined && node.format === undefined) out.push(`${path}: string with no maxLength`);
  if (bounds && (type === 'number' || type === 'integer') && node.maximum === undefined && node.exclusiveMaximum === undefined) out.push(`${path}: number with no maximum`);
  if (type === 'array') {
    if (bounds && node.maxItems === undefined) out.push(`${path}: array with no maxItems`);
    if (node.items) problems(node.items as Schema, `${path}[]`, out, false, bounds);
    else out.push(`${path}: array with no items schema`);
  }
  if (type === 'object') {
    const props = (node.properties ?? {}) as Record<string, Schema>;
    for (const [k, v] of Object.entries(props)) problems(v, `${path}.${k}`, out, true, bounds);
  }
}

describe('tool schemas', () => {
  it('every property of every registered tool is typed, constrained and described', () => {
    const tools = functionTools(s.rt.tools);
    expect(tools.length).toBeGreaterThanOrEqual(9);
    const out: string[] = [];
    for (const t of tools) {
      expect(t.description, t.name).toBeTruthy();
      const schema = t.inputSchema as Schema;
      expect(schema.type, t.name).toBe('object');
      problems(schema, t.name, out, false, !t.name.startsWith('mcp__'));
    }
    expect(out).toEqual([]);
  });

  it('the walk fails on an untyped or undescribed property', () => {
    const out: string[] = [];
    problems({ type: 'object', properties: { content: {}, n: { type: 'number', maximum: 3 } } }, 'x', out, false);
    expect(out).toEqual(['x.content: no description', 'x.content: untyped', 'x.n: no description']);
  });

  it('a bad argument is answered invalid_request naming the field', async () => {
    const key = 'agent:main:schema-bad-arg';
    const { runId } = await s.rpc<{ runId: string }>('agent', { sessionKey: key, message: '/tool send_message {"content": 5}' });
    await s.rpc('agent.wait', { runId });
    const h = await s.rpc<{ messages: Array<{ kind: string; tool?: { result: { status: string; error: { code: string; message: string } } } }> }>('chat.history', { sessionKey: key, includeTools: true });
    const result = h.messages.find((m) => m.kind === 'tool_result')!.tool!.result;
    expect(result.status).toBe('error');
    expect(result.error.code).toBe('invalid_request');
    expect(result.error.message).toMatch(/\bcontent\b/);
  });
});
