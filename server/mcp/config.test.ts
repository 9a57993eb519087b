// The interop config keys: mcp.servers (stdio | streamable HTTP), agents[].mcp and agents[].a2a, and MCP tool policy.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, toolPolicyFor } from '../config';
import { tmpDataDir } from '../testing/harness';
import { mcpToolName } from './manager';

const withFile = (content: unknown) => {
  const f = path.join(tmpDataDir(), 'crosstalk.config.json');
  fs.writeFileSync(f, JSON.stringify(content));
  return { CROSSTALK_CONFIG: f, CROSSTALK_DATA_DIR: path.dirname(f) };
};

describe('interop config', () => {
  it('reads MCP servers, per-agent MCP visibility and remote A2A agents', () => {
    const c = loadConfig(
      withFile({
        mcp: { servers: { files: { command: 'node', args: ['s.mjs'], env: { A: '1' } }, search: { url: 'http://127.0.0.1:7000/mcp', headers: { x: 'y' } } } },
        agents: [{ id: 'main', mcp: ['files'] }, { id: 'far', a2a: { url: 'https://agents.example.com/far', token: 't' } }],
      }),
    );
    expect(Object.keys(c.mcp.servers)).toEqual(['files', 'search']);
    expect(c.mcp.reconnectBaseMs).toBe(500);
    expect(c.agents[0]!.mcp).toEqual(['files']);
    expect(c.agents[1]!.a2a).toEqual({ url: 'https://agents.example.com/far', token: 't' });
    expect(loadConfig(withFile({})).mcp.servers).toEqual({});
  });

  it('names the bad key', () => {
    expect(() => loadConfig(withFile({ mcp: { servers: { files: { args: ['x'] } } } }))).toThrow(/bad key "mcp\.servers\.files/);
    expect(() => loadConfig(withFile({ mcp: { servers: { 'a__b': { command: 'x' } } } }))).toThrow(/mcp\.servers/);
    expect(() => loadConfig(withFile({ agents: [{ id: 'a', a2a: { url: 'not a url' } }] }))).toThrow(/bad key "agents\.0\.a2a\.url"/);
  });

  it('MCP tools are ask by default; the exact name beats mcp__<server>__*', () => {
    const { agents } = loadConfig(withFile({ agents: [{ id: 'a', tools: { 'mcp__files__*': 'auto', mcp__files__rm: 'deny', exec: 'auto' } }] }));
    const a = agents[0]!;
    expect(toolPolicyFor(a, 'mcp__files__read')).toBe('auto');
    expect(toolPolicyFor(a, 'mcp__files__rm')).toBe('deny');
    expect(toolPolicyFor(a, 'mcp__search__query')).toBe('ask');
    expect(toolPolicyFor(a, 'exec')).toBe('auto');
    expect(toolPolicyFor(a, 'sessions_list')).toBe('auto');
    expect(mcpToolName('files', 'read.file/v2')).toBe('mcp__files__read_file_v2');
  });
});
