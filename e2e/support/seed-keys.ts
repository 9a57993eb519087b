// Session keys the e2e seed writes before the server starts (shared by the seed script and the specs).
export const BIG_SESSION = 'agent:main:e2e-seeded-10k';
export const BIG_ROWS = 10_000;
export const KINDS_SESSION = 'agent:main:e2e-seeded-kinds';
/** The seeded delegate_follow_up_completed row's content: long enough that its cell clamps it. */
export const FOLLOW_UP_RESPONSE = Array.from({ length: 12 }, (_, i) => `finding ${i + 1}: the second source agrees`).join('\n');
/** Sessions of an agent no longer configured, older than everything else: with them the sidebar needs more than one page. */
export const ARCHIVE_AGENT = 'archive';
export const ARCHIVE_SESSIONS = 120;
export const archiveSessionKey = (i: number) => `agent:${ARCHIVE_AGENT}:e2e-old-${String(i).padStart(3, '0')}`;
