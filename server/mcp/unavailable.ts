// The error an MCP call throws when its server cannot answer; apart from connection.ts so the manager can test for it without loading the SDK.

/** Thrown by `call` when the server cannot answer (down, crashed mid-call, unreachable). */
export class McpUnavailable extends Error {}
