// A bounded in-memory cache of live delegates' newest transcript rows, so previews rarely touch the store.
import type { TranscriptMessage } from '../events/types';

const ROWS_PER_CONVERSATION = 50;
const MAX_CONVERSATIONS = 500;

interface Entry {
  /** Newest first; exactly the newest rows of the conversation (no holes). */
  rows: TranscriptMessage[];
  /** True when `rows` is the whole transcript. */
  whole: boolean;
}

export class DelegateCache {
  private entries = new Map<string, Entry>();

  /** Seeds a conversation from the store's newest page (`whole` when the store had no more). */
  seed(key: string, newestFirst: TranscriptMessage[], whole: boolean) {
    this.set(key, { rows: newestFirst.slice(0, ROWS_PER_CONVERSATION), whole: whole && newestFirst.length <= ROWS_PER_CONVERSATION });
  }

  /** A new delegate: its transcript is empty, so the cache holds all of it. */
  create(key: string) {
    this.set(key, { rows: [], whole: true });
  }

  /** A row was added (fed from `message` events); ignored for conversations not cached. */
  add(m: TranscriptMessage) {
    const e = this.entries.get(m.sessionKey);
    if (!e) return;
    if (e.rows.length && e.rows[0]!.id >= m.id) return; // already have it
    e.rows.unshift(m);
    if (e.rows.length > ROWS_PER_CONVERSATION) {
      e.rows.length = ROWS_PER_CONVERSATION;
      e.whole = false;
    }
  }

  /** A page newest first strictly before `beforeId`, or null when the cache cannot answer it fully. */
  page(key: string, limit: number, beforeId?: number): { rows: TranscriptMessage[]; more: boolean } | null {
    const e = this.entries.get(key);
    if (!e) return null;
    const start = beforeId === undefined ? 0 : e.rows.findIndex((r) => r.id < beforeId);
    if (start < 0) return e.whole ? { rows: [], more: false } : null;
    const avail = e.rows.length - start;
    if (avail > limit) return { rows: e.rows.slice(start, start + limit), more: true };
    if (e.whole) return { rows: e.rows.slice(start), more: false };
    return null;
  }

  drop(key: string) {
    this.entries.delete(key);
  }

  has(key: string) {
    return this.entries.has(key);
  }

  private set(key: string, e: Entry) {
    this.entries.delete(key);
    this.entries.set(key, e);
    while (this.entries.size > MAX_CONVERSATIONS) this.entries.delete(this.entries.keys().next().value!);
  }
}
