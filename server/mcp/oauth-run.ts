// The run id shape of an MCP `authorization` item raised outside any tool call (no such run exists): shared by server/mcp and the approvals.
export const OAUTH_RUN_PREFIX = 'mcp-oauth:';
