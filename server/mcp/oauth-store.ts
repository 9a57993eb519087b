// The rows of `mcp_oauth` (migration 0016_oauth): one per MCP server and authorization server, read and written by the OAuth provider.
import type { Kysely } from 'kysely';
import type { Store } from '../store/store';

export interface McpOAuthRow {
  server: string;
  issuer: string;
  url: string;
  client_info: string | null;
  tokens: string | null;
  expires_at: string | null;
  code_verifier: string | null;
  state: string | null;
  approval_id: string | null;
  discovery: string | null;
  updated_at: string;
}

interface OAuthDb {
  mcp_oauth: McpOAuthRow;
}

export type OAuthFields = Partial<Omit<McpOAuthRow, 'server' | 'issuer' | 'url' | 'updated_at'>>;

/** The table's queries; the table stays out of the shared schema type (it is this module's alone). */
export class McpOAuthStore {
  private readonly db: Kysely<OAuthDb>;
  constructor(store: Store) {
    this.db = store.db as unknown as Kysely<OAuthDb>;
  }

  /** The server's rows for its configured URL, the newest first (the first is the authorization server in use). */
  rows(server: string, url: string): Promise<McpOAuthRow[]> {
    return this.db.selectFrom('mcp_oauth').selectAll().where('server', '=', server).where('url', '=', url).orderBy('updated_at', 'desc').execute();
  }

  byState(state: string): Promise<McpOAuthRow | undefined> {
    return this.db.selectFrom('mcp_oauth').selectAll().where('state', '=', state).executeTakeFirst();
  }

  /** Writes fields of one (server, URL, issuer) row, creating it when missing; a URL change of the server replaces the row. */
  async put(server: string, issuer: string, url: string, fields: OAuthFields): Promise<void> {
    const updated_at = new Date().toISOString();
    await this.db
      .insertInto('mcp_oauth')
      .values({ server, issuer, url, client_info: null, tokens: null, expires_at: null, code_verifier: null, state: null, approval_id: null, discovery: null, ...fields, updated_at })
      .onConflict((oc) => oc.columns(['server', 'url', 'issuer']).doUpdateSet({ url, ...fields, updated_at }))
      .execute();
  }
}
