// The newest transcript rows of recently used sessions, kept in memory for model context (Store.contextRows).
// Every run reads its session's newest rows; they are kept here, fed by the store's own writes, so a turn does not
// re-read and re-parse them. SQLite (`exclusive`): this process is the only writer. PostgreSQL: other processes may
// write into a session too, so an entry counts the rows it has seen and is used only while the session's
// `message_count` (read by the caller) still matches.
import type { TranscriptMessage } from '../events/types';

const RECENT_SESSIONS = 256;
const RECENT_ROWS = 256;

export class RecentRows {
  private readonly map = new Map<string, { rows: TranscriptMessage[]; whole: boolean; count?: number }>();

  constructor(private readonly exclusive: boolean) {}

  /** The cached newest `n` rows (oldest first), when the entry covers them and is current; else undefined. */
  get(sessionKey: string, n: number, messageCount?: number): TranscriptMessage[] | undefined {
    if (!this.exclusive && messageCount === undefined) return undefined;
    const hit = this.map.get(sessionKey);
    if (!hit || !(this.exclusive || hit.count === messageCount) || !(hit.rows.length >= n || hit.whole)) return undefined;
    this.map.delete(sessionKey); // LRU: most recently used last
    this.map.set(sessionKey, hit);
    return hit.rows.slice(-n);
  }

  /** Keeps the newest `n` rows just read (`rows.length < n`: the whole transcript). */
  put(sessionKey: string, n: number, rows: TranscriptMessage[], messageCount?: number): void {
    if ((!this.exclusive && messageCount === undefined) || n > RECENT_ROWS) return;
    this.map.set(sessionKey, { rows, whole: rows.length < n, ...(this.exclusive ? {} : { count: messageCount }) });
    if (this.map.size > RECENT_SESSIONS) this.map.delete(this.map.keys().next().value!);
  }

  /** A session's whole transcript, just written (`count` rows: its first): its entry. */
  seed(sessionKey: string, rows: TranscriptMessage[], count: number): void {
    this.put(sessionKey, RECENT_ROWS, rows.slice(), count);
  }

  /** Rows just written: appended to their sessions' entries. */
  remember(rows: TranscriptMessage[]): void {
    for (const m of rows) {
      const e = this.map.get(m.sessionKey);
      if (!e) continue;
      e.rows.push(m);
      if (e.count !== undefined) e.count += 1;
      if (e.rows.length > RECENT_ROWS) {
        e.rows.splice(0, e.rows.length - RECENT_ROWS);
        e.whole = false;
      }
    }
  }

  delete(sessionKey: string): void {
    this.map.delete(sessionKey);
  }
}
