// OAuth for remote MCP servers (CONTRACT §5 "MCP elicitation", issue 23): tokens, client registration and PKCE state, per server and issuer.
import type { Kysely } from 'kysely';
import type { MigrationSet } from './migration-kit';

export const oauthMigrations: MigrationSet = () => ({
  '0016_oauth': {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      // One row per configured server (its name and URL) and authorization server (`issuer`, the URL discovery used):
      // a server moved to another authorization server starts afresh, and tokens never go to the wrong one.
      await db.schema
        .createTable('mcp_oauth')
        .addColumn('server', 'text', (c) => c.notNull())
        .addColumn('issuer', 'text', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('client_info', 'text')
        .addColumn('tokens', 'text')
        // When the access token expires (ISO-8601), from `expires_in` at the time it was issued: refreshed before then.
        .addColumn('expires_at', 'text')
        .addColumn('code_verifier', 'text')
        // The `state` of the authorization in progress: the callback is bound to it.
        .addColumn('state', 'text')
        // The pending `authorization` item of that authorization (approvals.id): the callback completes it.
        .addColumn('approval_id', 'text')
        .addColumn('discovery', 'text')
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('mcp_oauth_pk', ['server', 'url', 'issuer'])
        .execute();
      await db.schema.createIndex('mcp_oauth_state').on('mcp_oauth').columns(['state']).execute();
    },
  },
});
