// Session keys the e2e seed writes before the server starts (shared by the seed script and the specs).
export const BIG_SESSION = 'agent:main:e2e-seeded-10k';
export const BIG_ROWS = 10_000;
export const KINDS_SESSION = 'agent:main:e2e-seeded-kinds';
