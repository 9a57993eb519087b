// Token and cost accounting: one row per model step, sums per run, per session and over a session's whole tree.
import type { CrosstalkConfig } from '../config';
import type { Metrics } from '../metrics';
import { nowIso, type Store } from '../store/store';
import { costOf, priceFor, roundUsd, type StepTokens } from './prices';

export interface RunUsage {
  inputTokens: number;
  outputTokens: number;
  costUsd?: number;
}

export interface SessionUsage {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  runs: number;
  tree: { inputTokens: number; outputTokens: number; costUsd: number; sessions: number };
  /** Model specs used here (tree included) that have no price in the config: their cost counted as 0. */
  unpricedModels: string[];
}

export interface RecordStep {
  runId: string;
  sessionKey: string;
  agentId: string;
  model: string;
  kind: 'step' | 'compaction';
  tokens: StepTokens;
  /** The root run of the request tree the step belongs to (budgets). */
  rootRunId?: string;
}

const MAX_TREE = 10_000;
const CHUNK = 500;

const RECENT_RUNS = 4096;

export class Usage {
  /** Sums of runs recorded by this process (the common `agent.wait` answer costs no query); bounded, oldest dropped. */
  private readonly recent = new Map<string, { inputTokens: number; outputTokens: number; costUsd: number; priced: boolean }>();

  constructor(private readonly d: { store: Store; metrics: Metrics; config: Pick<CrosstalkConfig, 'models'> }) {}

  /** Records one model call's tokens and cost (priced now, so a later price change does not rewrite history). */
  async record(r: RecordStep): Promise<{ costUsd: number; priced: boolean }> {
    const price = priceFor(r.model, this.d.config.models);
    const costUsd = costOf(r.tokens, price);
    const row = {
      run_id: r.runId,
      session_key: r.sessionKey,
      agent_id: r.agentId,
      model: r.model,
      kind: r.kind,
      input_tokens: r.tokens.inputTokens,
      output_tokens: r.tokens.outputTokens,
      cached_tokens: r.tokens.cachedTokens,
      cost_usd: costUsd,
      priced: price ? 1 : 0,
      created_at: nowIso(),
      root_run_id: r.rootRunId ?? r.runId,
    };
    // A run's step is written with the step's rows (or the run's end): no round trip of its own.
    if (r.kind === 'step') this.d.store.deferUsage(row);
    else await this.d.store.db.insertInto('model_usage').values(row).execute();
    const labels = { agent: r.agentId, model: r.model };
    const m = this.d.metrics;
    m.modelTokens.inc({ ...labels, type: 'input' }, r.tokens.inputTokens);
    m.modelTokens.inc({ ...labels, type: 'output' }, r.tokens.outputTokens);
    if (r.tokens.cachedTokens) m.modelTokens.inc({ ...labels, type: 'cached' }, r.tokens.cachedTokens);
    m.modelCost.inc(labels, costUsd);
    const sum = this.recent.get(r.runId) ?? { inputTokens: 0, outputTokens: 0, costUsd: 0, priced: false };
    sum.inputTokens += r.tokens.inputTokens;
    sum.outputTokens += r.tokens.outputTokens;
    sum.costUsd += costUsd;
    sum.priced ||= !!price;
    this.recent.delete(r.runId);
    this.recent.set(r.runId, sum);
    if (this.recent.size > RECENT_RUNS) this.recent.delete(this.recent.keys().next().value!);
    return { costUsd, priced: !!price };
  }

  /** A run's sums (`agent.wait`'s `usage`); `costUsd` is left out when none of its models has a price. */
  /** From this process's memory when it recorded the run, else null (another process did, or it was dropped). */
  recentRun(runId: string): RunUsage | null {
    const s = this.recent.get(runId);
    if (!s) return null;
    return { inputTokens: s.inputTokens, outputTokens: s.outputTokens, ...(s.priced ? { costUsd: roundUsd(s.costUsd) } : {}) };
  }

  async forRun(runId: string): Promise<RunUsage> {
    const hit = this.recentRun(runId);
    if (hit) return hit;
    const r = await this.d.store.db
      .selectFrom('model_usage')
      .select((eb) => [eb.fn.sum<number>('input_tokens').as('i'), eb.fn.sum<number>('output_tokens').as('o'), eb.fn.sum<number>('cost_usd').as('c'), eb.fn.max<number>('priced').as('p')])
      .where('run_id', '=', runId)
      .executeTakeFirst();
    const priced = Number(r?.p ?? 0) === 1;
    return { inputTokens: Number(r?.i ?? 0), outputTokens: Number(r?.o ?? 0), ...(priced ? { costUsd: roundUsd(Number(r?.c ?? 0)) } : {}) };
  }

  async sessionExists(key: string): Promise<boolean> {
    return !!(await this.d.store.getSession(key));
  }

  /** Records that `parent` started `child` by messaging it (sessions_send / agents_message created the session). */
  async link(parentKey: string, childKey: string): Promise<void> {
    await this.d.store.db
      .insertInto('session_links')
      .values({ parent_key: parentKey, child_key: childKey, created_at: nowIso() })
      .onConflict((oc) => oc.columns(['parent_key', 'child_key']).doNothing())
      .execute();
  }

  /** The session and every delegate and session it started, recursively (breadth first, cycles cut). */
  async treeOf(key: string): Promise<string[]> {
    const seen = new Set([key]);
    let frontier = [key];
    while (frontier.length && seen.size < MAX_TREE) {
      const next: string[] = [];
      for (let i = 0; i < frontier.length; i += CHUNK) {
        const part = frontier.slice(i, i + CHUNK);
        const [delegates, linked] = await Promise.all([
          this.d.store.db.selectFrom('sessions').select('key').where('parent_key', 'in', part).execute(),
          this.d.store.db.selectFrom('session_links').select('child_key').where('parent_key', 'in', part).execute(),
        ]);
        for (const k of [...delegates.map((r) => r.key), ...linked.map((r) => r.child_key)]) {
          if (seen.has(k)) continue;
          seen.add(k);
          next.push(k);
        }
      }
      frontier = next;
    }
    return [...seen];
  }

  private async sums(keys: string[]) {
    const out = { inputTokens: 0, outputTokens: 0, costUsd: 0, unpriced: new Set<string>() };
    for (let i = 0; i < keys.length; i += CHUNK) {
      const part = keys.slice(i, i + CHUNK);
      const rows = await this.d.store.db
        .selectFrom('model_usage')
        .select((eb) => ['model', 'priced', eb.fn.sum<number>('input_tokens').as('i'), eb.fn.sum<number>('output_tokens').as('o'), eb.fn.sum<number>('cost_usd').as('c')])
        .where('session_key', 'in', part)
        .groupBy(['model', 'priced'])
        .execute();
      for (const r of rows) {
        out.inputTokens += Number(r.i ?? 0);
        out.outputTokens += Number(r.o ?? 0);
        out.costUsd += Number(r.c ?? 0);
        if (!Number(r.priced)) out.unpriced.add(r.model);
      }
    }
    return out;
  }

  /** Every session's usage together (the status panel's roll-up): the trigger-kept totals (0019_scale), a few rows, not a SUM over every step. */
  async total(): Promise<{ inputTokens: number; outputTokens: number; costUsd: number }> {
    const r = await this.d.store.db
      .selectFrom('usage_totals')
      .select((eb) => [eb.fn.sum<number>('input_tokens').as('i'), eb.fn.sum<number>('output_tokens').as('o'), eb.fn.sum<number>('cost_usd').as('c')])
      .executeTakeFirst();
    return { inputTokens: Number(r?.i ?? 0), outputTokens: Number(r?.o ?? 0), costUsd: roundUsd(Number(r?.c ?? 0)) };
  }

  /** `sessions.usage` (CONTRACT §3). */
  async forSession(key: string): Promise<SessionUsage> {
    const tree = await this.treeOf(key);
    const [own, all, runs] = await Promise.all([
      this.sums([key]),
      this.sums(tree),
      this.d.store.db
        .selectFrom('runs')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('session_key', '=', key)
        .where('started_at', 'is not', null)
        .executeTakeFirst(),
    ]);
    return {
      inputTokens: own.inputTokens,
      outputTokens: own.outputTokens,
      costUsd: roundUsd(own.costUsd),
      runs: Number(runs?.n ?? 0),
      tree: { inputTokens: all.inputTokens, outputTokens: all.outputTokens, costUsd: roundUsd(all.costUsd), sessions: tree.length },
      unpricedModels: [...all.unpriced].sort(),
    };
  }
}
