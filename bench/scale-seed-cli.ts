// `npx tsx bench/scale-seed-cli.ts sqlite|postgres [sessions]`: seeds the bench:scale store once (see bench/lib/scale-store.ts).
import { ensureSeeded, scaleTarget } from './lib/scale-store';

const store = process.argv[2] === 'postgres' ? 'postgres' : 'sqlite';
const sessions = Number(process.argv[3] ?? 100_000);
await ensureSeeded(scaleTarget(store, sessions), { reseed: process.argv.includes('--reseed') });
