// The server's VAPID key pair (RFC 8292): made once, on first start, and kept in the store for every process.
import webpush from 'web-push';
import type { Store } from '../store/store';
import { nowIso } from '../store/store';

export interface VapidKeys {
  /** base64url of the uncompressed P-256 point (65 bytes): what browsers pass to pushManager.subscribe. */
  publicKey: string;
  /** base64url of the 32-byte private scalar. */
  privateKey: string;
}

const ROW_ID = 'vapid';

/**
 * The stored pair, made when there is none. Race-safe across processes: each candidate is inserted with ON CONFLICT DO
 * NOTHING and everyone reads back the row that won, so two processes starting at once still share one key.
 */
export async function loadVapidKeys(store: Store): Promise<VapidKeys> {
  const read = () => store.db.selectFrom('push_keys').select(['public_key', 'private_key']).where('id', '=', ROW_ID).executeTakeFirst();
  let row = await read();
  if (!row) {
    const fresh = webpush.generateVAPIDKeys();
    await store.db
      .insertInto('push_keys')
      .values({ id: ROW_ID, public_key: fresh.publicKey, private_key: fresh.privateKey, created_at: nowIso() })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    row = await read();
  }
  if (!row) throw new Error('VAPID keys could not be stored');
  return { publicKey: row.public_key, privateKey: row.private_key };
}
