// A seeded load of every kind of work against gateway processes, and its check from the public API only: every
// accepted message answered once, every callback and webhook once, every approved side effect at most once.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { follow, checkFollower, NotSent, Proc, receiver, rpcAt, rng, sleep, telegramAnswer, unended } from './fault-kit';
import { execOutDir, tmpDataDir } from './harness';
import { dropStoreSchemas } from './pg-test-db';

export type Rng = ReturnType<typeof rng>;
type Receiver = Awaited<ReturnType<typeof receiver>>;

export interface Cluster {
  name: string;
  procs: Proc[];
  /** URLs a client may send to now. */
  serving(): string[];
  webhooks: Receiver;
  chat: Receiver;
  dir: string;
  execLog: string;
  /** PostgreSQL: the cluster's schema. */
  schema: string | null;
  /**
   * Not strict (faults that kill processes): a request cut by a kill is sent again, as a client would, to another
   * process (safe: `agent` and `send` carry an idempotency key; the rest only read), and counted as a resend.
   * Strict (graceful restarts only): any cut request is a client error.
   */
  strict: boolean;
  resends: number;
  /** When a process of this cluster was SIGKILLed (the fault runner's record, for the channel sends' check). */
  kills: number[];
  close(): Promise<void>;
}

export interface ClusterOptions {
  name: string;
  processes: number;
  /** PostgreSQL URL (a fresh schema is made in it); absent: one SQLite process. */
  pgUrl?: string;
  env?: Record<string, string>;
  log?: (line: string) => void;
  strict?: boolean;
  /** A process exited by itself (see Proc's `onCrash`). */
  onCrash?: (p: Proc, exit: string, stderr: string[]) => void;
}

export async function startCluster(o: ClusterOptions): Promise<Cluster> {
  const dir = tmpDataDir(`crosstalk-faults-${o.name}-`);
  const webhooks = await receiver();
  const chat = await receiver(telegramAnswer);
  // Outside the data dir (0700 at start): `exec` runs as an unprivileged user when the server is root; and outside
  // /tmp, which is each command's own there (exec's PID namespace).
  const execDir = execOutDir();
  const execLog = path.join(execDir, 'exec.log');
  fs.writeFileSync(execLog, '');
  fs.chmodSync(execLog, 0o666);
  const configFile = path.join(dir, 'config.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      agents: [{ id: 'main', tools: { exec: 'ask' } }, { id: 'researcher' }],
      session: { queueMode: 'followup' },
      webhooks: { allowPrivateNetwork: true, retryBaseMs: 200, maxAttempts: 30, timeoutMs: 2000 },
      channels: { telegram: { botToken: '123456:TEST', apiBaseUrl: chat.url, dmPolicy: 'open' } },
    }),
  );
  const schema = `t_faults_${crypto.randomBytes(4).toString('hex')}`;
  const env: Record<string, string> = { CROSSTALK_WORKSPACES: path.join(execDir, 'ws'), ...(o.pgUrl ? { DATABASE_URL: o.pgUrl, CROSSTALK_TEST_PG_SCHEMA: schema, CROSSTALK_PG_POOL: '4' } : {}), ...o.env };
  const procs: Proc[] = [];
  for (let i = 0; i < o.processes; i++) {
    // On SQLite the data dir is the store: one process, restarted on the same dir.
    const p = new Proc({ name: `${o.name}${i}`, dataDir: i === 0 ? path.join(dir, 'data') : path.join(dir, `data${i}`), configFile, env, log: o.log, onCrash: o.onCrash });
    fs.mkdirSync(p.o.dataDir, { recursive: true });
    procs.push(p);
  }
  await procs[0]!.start(); // the first migrates; the others join
  await Promise.all(procs.slice(1).map((p) => p.start()));
  return {
    name: o.name,
    procs,
    serving: () => procs.filter((p) => p.serving).map((p) => p.url),
    webhooks,
    chat,
    dir,
    execLog,
    schema: o.pgUrl ? schema : null,
    strict: !!o.strict,
    resends: 0,
    kills: [],
    async close() {
      for (const p of procs) await p.kill();
      await webhooks.close();
      await chat.close();
      // The cluster's schema and pg-boss's beside it: the seed, not the rows, reproduces a run.
      if (o.pgUrl) await dropStoreSchemas(o.pgUrl, schema);
    },
  };
}

/** What a client saw; errors are answers a client would have to act on (anything but "could not connect"). */
export interface Ledger {
  /** Accepted `agent` messages: tag → run, session, and what the message asked for. */
  accepted: Map<string, { sessionKey: string; runId: string; status: string; kind: string; mode?: string; reply?: string; callback?: string; webhook?: boolean; exec?: string; followup?: { conv: string; text: string } }>;
  refused: Map<string, string>;
  sends: Map<string, { to: string; messageId: string }>;
  approved: Set<string>;
  clientErrors: string[];
}

export const newLedger = (): Ledger => ({ accepted: new Map(), refused: new Map(), sends: new Map(), approved: new Set(), clientErrors: [] });

/** Sends to any serving process; a connection refused (nothing sent) goes to the next, as a load balancer would. */
export async function call<T = any>(c: Cluster, r: Rng, method: string, params: unknown, timeoutMs?: number): Promise<T> {
  const giveUp = Date.now() + 60_000;
  for (;;) {
    const urls = c.serving();
    if (!urls.length || Date.now() > giveUp) {
      if (Date.now() > giveUp) throw new Error(`${method}: no process took the request in 60 s`);
      await sleep(50);
      continue;
    }
    try {
      return await rpcAt<T>(r.pick(urls), method, params, timeoutMs);
    } catch (e) {
      if (e instanceof NotSent) {
        await sleep(20);
        continue;
      }
      const cut = /ECONNRESET|socket hang up|other side closed/.test((e as Error).message);
      // A cut approvals.resolve is sent again too: a repeat of one that went through answers already_resolved.
      if (cut && !c.strict) {
        c.resends++;
        await sleep(50);
        continue;
      }
      throw e;
    }
  }
}

export const KINDS = ['turn', 'async_send', 'sync_send', 'delegate', 'delegate_followup', 'approval', 'channel_send', 'webhook', 'steer', 'collect', 'interrupt', 'reject'] as const;
export type Kind = (typeof KINDS)[number];

/** One unit of seeded work; resolves when the client got its answer (accepted, refused or failed). */
export async function work(c: Cluster, r: Rng, l: Ledger, kind: Kind, n: number, sessions: number): Promise<void> {
  const tag = `${c.name}-${kind}-${n}`;
  const s = r.int(sessions);
  const sessionKey = `agent:main:f${s}`;
  const sleepMs = 100 + r.int(900);
  let message = `/sleep ${sleepMs}\n/reply r-${tag}.`;
  const entry: Ledger['accepted'] extends Map<string, infer V> ? Partial<V> : never = { kind, reply: `r-${tag}.` };
  let params: Record<string, unknown> = {};
  switch (kind) {
    case 'async_send':
      message = `/tool sessions_send {"sessionKey":"agent:researcher:t${s}","message":"/sleep ${sleepMs}\\n/reply cb-${tag}.","mode":"async"}`;
      entry.callback = `cb-${tag}.`;
      entry.reply = undefined;
      break;
    case 'sync_send':
      message = `/tool sessions_send {"sessionKey":"agent:researcher:y${s}","message":"/sleep ${sleepMs}\\n/reply sy-${tag}.","mode":"sync","timeoutSeconds":60}`;
      entry.reply = undefined;
      break;
    case 'delegate':
      message = `/tool delegate_agent {"agent_id":"researcher","mode":"detached","prompt":"/sleep ${sleepMs}\\n/reply dg-${tag}."}`;
      entry.callback = `dg-${tag}.`;
      entry.reply = undefined;
      break;
    case 'delegate_followup': {
      // A follow-up to a delegate of this session (standard mode: the parent waits for it).
      let conv: string | undefined;
      try {
        const d = await call(c, r, 'delegates.list', { sessionKey });
        const list = (d.sessions ?? []) as any[];
        conv = list.length ? r.pick(list).conversation_id : undefined;
      } catch {
        /* none yet */
      }
      if (!conv) return;
      message = `/tool delegate_agent {"conversation_id":"${conv}","prompt":"/sleep ${sleepMs}\\n/reply fu-${tag}."}`;
      entry.followup = { conv, text: `fu-${tag}.` };
      entry.reply = undefined;
      break;
    }
    case 'approval':
      message = `/tool exec {"command":"echo ${tag} >> ${c.execLog}"}`;
      entry.exec = tag;
      entry.reply = undefined;
      break;
    case 'webhook':
      params = { webhook: { url: `${c.webhooks.url}/hook/${tag}` } };
      entry.webhook = true;
      break;
    case 'channel_send': {
      try {
        const res = await call(c, r, 'send', { channel: 'telegram', to: String(1000 + s), message: `ch-${tag}.`, idempotencyKey: tag });
        l.sends.set(tag, { to: String(1000 + s), messageId: res.messageId });
      } catch (e) {
        l.clientErrors.push(`${tag}: ${(e as Error).message}`);
      }
      return;
    }
    default:
      break;
  }
  const mode = kind === 'steer' || kind === 'collect' || kind === 'interrupt' || kind === 'reject' ? kind : undefined;
  if (mode === 'steer' || mode === 'collect') message = `m-${tag}`;
  try {
    // The key makes a resend after a lost answer safe; the suite never resends, but a client would.
    const res = await call(c, r, 'agent', { sessionKey, message: `${message}\ntag:${tag}.`, idempotencyKey: tag, ...(mode ? { queueMode: mode } : {}), ...params });
    l.accepted.set(tag, { ...entry, sessionKey, runId: res.runId, status: res.status, kind, mode } as never);
  } catch (e) {
    const code = (e as { rpc?: { data?: { code?: string } } }).rpc?.data?.code;
    if (kind === 'reject' && code === 'agent_busy') l.refused.set(tag, code);
    else l.clientErrors.push(`${tag}: ${(e as Error).message} at ${Date.now()}`);
  }
}

/** Approves every pending exec once (from any process); `approvalsOnce` remembers which it approved. */
export async function approvePending(c: Cluster, r: Rng, l: Ledger): Promise<void> {
  let list: any[] = [];
  try {
    list = (await call(c, r, 'approvals.list', {})).approvals;
  } catch (e) {
    l.clientErrors.push(`approvals.list: ${(e as Error).message}`);
    return;
  }
  for (const a of list) {
    if (l.approved.has(a.approvalId)) continue;
    l.approved.add(a.approvalId);
    try {
      await call(c, r, 'approvals.resolve', { approvalId: a.approvalId, decision: 'allow_once' });
    } catch (e) {
      const code = (e as { rpc?: { data?: { code?: string } } }).rpc?.data?.code;
      if (code !== 'already_resolved') l.clientErrors.push(`approvals.resolve ${a.approvalId}: ${(e as Error).message}`);
    }
  }
}

export interface Tally {
  accepted: number;
  answered: number;
  lost: number;
  doubled: number;
  unanswered: number;
  callbacks: number;
  webhooks: number;
  webhookRedeliveries: number;
  resends: number;
  channelSends: number;
  /**
   * Channel sends the platform got a second time because a process was SIGKILLed after the platform's answer and
   * before its record: at least once to a platform that does not de-duplicate (README, idempotency), not a double.
   */
  channelResentAfterKill: number;
  execLines: number;
  sseClients: number;
  sseReconnects: number;
  clientErrors: number;
  /** Async sends and detached delegates whose `/tool` line a message steered into the same turn hid (no callback owed). */
  steeredOver: number;
  problems: string[];
}

/** How long after a platform's answer a send's record may still be unwritten (a loaded machine's commit). */
export const RECORD_WINDOW_MS = 5000;

/**
 * How much later than its sender's call the fake platform may time an arrival: it runs on the suite's own loop, busy
 * with the load's clients, so a request a process sent just before its SIGKILL can be timed after the kill (18 ms
 * after it in a CI run, seed 21).
 */
export const ARRIVAL_LAG_MS = 500;

/**
 * True when each arrival after the first follows a SIGKILL that came after the arrival before it (less
 * ARRIVAL_LAG_MS), within RECORD_WINDOW_MS of it: the process died between the platform's answer and its record, and
 * the send was made again.
 */
export function resentAfterKill(arrivals: number[], kills: number[]): boolean {
  const at = [...arrivals].sort((a, b) => a - b);
  for (let i = 1; i < at.length; i++) if (!kills.some((k) => k >= at[i - 1]! - ARRIVAL_LAG_MS && k <= at[i - 1]! + RECORD_WINDOW_MS && k <= at[i]!)) return false;
  return true;
}

const count = (xs: string[], needle: string) => xs.filter((x) => x.includes(needle)).length;

type Row = { role: string; kind: string; content: unknown; runId?: string; tool?: { args: unknown } };

/**
 * Whether the turn tagged `tag`, which asked for a callback (`callback`: the reply text it asked for), owes one, read
 * from its session's transcript: yes when the turn called its tool. The scripted model reads only the newest
 * user-side message (CONTRACT §2): a message steered into the turn before its first model step hides the turn's
 * `/tool` line, so nothing was sent and nothing is owed. With no tool call and no such steer, it is owed.
 */
export function owesCallback(h: Row[], tag: string, callback: string): boolean {
  if (h.some((m) => m.kind === 'tool_call' && JSON.stringify(m.tool?.args ?? null).includes(callback))) return true;
  const row = h.find((m) => m.role === 'user' && String(m.content).includes(`tag:${tag}.`));
  return !(row?.runId && h.some((m) => m.runId === row.runId && m.kind === 'steer'));
}

/**
 * The check, from outside only: waits for every accepted message's run, then counts in transcripts (chat.history),
 * the receivers' logs, the exec file and the SSE clients' events.
 */
export async function verify(c: Cluster, r: Rng, l: Ledger, followers: Array<ReturnType<typeof follow>>, o: { waitMs?: number } = {}): Promise<Tally> {
  const problems: string[] = [];
  const deadline = Date.now() + (o.waitMs ?? 120_000);
  const t: Tally = { accepted: l.accepted.size + l.sends.size, answered: 0, lost: 0, doubled: 0, unanswered: 0, callbacks: 0, webhooks: 0, webhookRedeliveries: 0, resends: 0, channelSends: 0, channelResentAfterKill: 0, execLines: 0, sseClients: followers.length, sseReconnects: 0, clientErrors: l.clientErrors.length, steeredOver: 0, problems };
  // Approvals may still come up while runs are re-driven: approve them until every run has ended.
  const results = new Map<string, { status: string; error?: string }>();
  const pending = [...l.accepted.entries()];
  // Eight waits at a time; a wait that times out may be held by an approval that came up in a re-drive: approve.
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let next = pending.shift(); next; next = pending.shift()) {
        const [tag, a] = next;
        for (;;) {
          let w: { status: string; error?: string };
          try {
            w = await call(c, r, 'agent.wait', { runId: a.runId, timeoutMs: 3000 }, 30_000);
          } catch (e) {
            w = { status: 'timeout', error: (e as Error).message };
          }
          if (w.status !== 'timeout' || Date.now() > deadline) {
            results.set(tag, w);
            break;
          }
          await approvePending(c, r, l);
        }
      }
    }),
  );
  // Deliveries (callbacks, webhooks) settle after their runs: wait until they are in (or the deadline passes).
  const history = new Map<string, any[]>();
  const readHistory = async (key: string) => {
    const all: any[] = [];
    let cursor: string | undefined;
    for (;;) {
      const h = await call(c, r, 'chat.history', { sessionKey: key, limit: 200, includeTools: true, ...(cursor ? { cursor } : {}) });
      all.push(...h.messages);
      if (!h.next_cursor) break;
      cursor = h.next_cursor;
    }
    history.set(key, all.reverse());
    return all;
  };
  const keys = new Set([...l.accepted.values()].map((a) => a.sessionKey));
  const owes = (tag: string, a: { sessionKey: string; callback?: string }) => owesCallback(history.get(a.sessionKey)!, tag, a.callback!);
  const expectCallbacks = [...l.accepted.entries()].filter(([tag, a]) => a.callback && results.get(tag)?.status === 'ok');
  for (;;) {
    for (const k of keys) await readHistory(k);
    const contents = [...keys].flatMap((k) => history.get(k)!.filter((m) => m.kind === 'agent_callback_result').map((m) => String(m.content)));
    const missing = expectCallbacks.filter(([tag, a]) => owes(tag, a) && count(contents, a.callback!) === 0);
    const hooks = [...l.accepted.entries()].filter(([tag, a]) => a.webhook && !c.webhooks.got.some((g) => g.path.endsWith(`/${tag}`)));
    if ((!missing.length && !hooks.length) || Date.now() > deadline) break;
    await sleep(300);
  }
  await sleep(1000); // would a duplicate still show up?
  for (const k of keys) await readHistory(k);

  for (const [tag, a] of l.accepted) {
    const res = results.get(tag)!;
    const h = history.get(a.sessionKey)!;
    const userRows = h.filter((m) => m.role === 'user' && m.kind !== 'agent_callback_result').map((m) => String(m.content));
    const inTranscript = count(userRows, `tag:${tag}.`);
    if (res.status === 'timeout') {
      t.unanswered++;
      problems.push(`${tag}: unanswered (run ${a.runId}, ${res.error ?? 'still running'})`);
    } else t.answered++;
    if (inTranscript === 0 && a.mode !== 'interrupt') {
      t.lost++;
      problems.push(`${tag}: accepted (${a.status}, run ${a.runId}, ended ${res.status}${res.error ? ` "${res.error}"` : ''}) but not in the transcript of ${a.sessionKey}`);
    }
    if (inTranscript > 1) {
      t.doubled++;
      problems.push(`${tag}: in the transcript ${inTranscript} times`);
    }
    if (a.reply && res.status === 'ok') {
      const replies = h.filter((m) => m.role === 'assistant' && String(m.content).includes(a.reply!)).length;
      if (replies > 1) {
        t.doubled++;
        problems.push(`${tag}: answered ${replies} times`);
      }
    }
    if (a.callback) {
      const n = [...keys].reduce((s, k) => s + count(history.get(k)!.filter((m) => m.kind === 'agent_callback_result').map((m) => String(m.content)), a.callback!), 0);
      if (n === 1) t.callbacks++;
      else if (n > 1) (t.doubled++, problems.push(`${tag}: callback ${a.callback} arrived ${n} times`));
      else if (res.status === 'ok' && owes(tag, a)) (t.lost++, problems.push(`${tag}: callback ${a.callback} never arrived`));
      else if (res.status === 'ok') t.steeredOver++;
    }
    if (a.followup) {
      const fh = (await call(c, r, 'chat.history', { sessionKey: a.followup.conv, limit: 200 })).messages as any[];
      const n = fh.filter((m) => m.role === 'user' && String(m.content).includes(a.followup!.text)).length;
      if (n > 1) (t.doubled++, problems.push(`${tag}: delegate follow-up reached ${a.followup.conv} ${n} times`));
    }
    if (a.webhook) {
      // One delivery is one x-crosstalk-delivery id; the same id POSTed again (a retry after a kill -9 between
      // the POST and its record) is counted as a redelivery, not a double.
      const posts = c.webhooks.got.filter((g) => g.path.endsWith(`/${tag}`));
      const got = new Set(posts.map((g) => g.headers['x-crosstalk-delivery'] ?? `${g.at}`)).size;
      t.webhookRedeliveries += posts.length - got;
      if (got === 1) t.webhooks++;
      else if (got > 1) (t.doubled++, problems.push(`${tag}: webhook arrived ${got} times`));
      else (t.lost++, problems.push(`${tag}: webhook never arrived`));
    }
  }
  for (const [tag] of l.sends) {
    const hits = c.chat.got.filter((g) => String(g.body?.text ?? '').includes(`ch-${tag}.`));
    const got = hits.length;
    if (got === 1) t.channelSends++;
    // With the arrival times, to match a double against the faults log (a kill between the API's answer and its record).
    else if (got > 1 && resentAfterKill(hits.map((g) => g.at), c.kills)) t.channelResentAfterKill++;
    else if (got > 1) (t.doubled++, problems.push(`${tag}: channel API got the message ${got} times (at ${hits.map((g) => new Date(g.at).toISOString()).join(', ')})`));
    else (t.lost++, problems.push(`${tag}: channel API never got the message`));
  }
  const lines = fs.readFileSync(c.execLog, 'utf8').split('\n').filter(Boolean);
  t.execLines = lines.length;
  // An approved exec that never wrote its line is a lost side effect (and would make the at-most-once count vacuous).
  const execs = [...l.accepted.values()].filter((e) => e.exec).length;
  if (execs > 2 && lines.length === 0) problems.push(`none of ${execs} approved exec calls wrote its line (is the file writable by the exec user?)`);
  for (const tag of new Set(lines)) {
    const n = lines.filter((x) => x === tag).length;
    if (n > 1) (t.doubled++, problems.push(`${tag}: approved exec ran ${n} times`));
  }
  // Runs the SSE clients saw start and not end yet (callback turns among them, which no client waited for) end before
  // they close. An ended run's last events reach a follower on another process through that process's feed: woken by
  // NOTIFY, or by its poll each second when a notification was lost to a restart. Wait for them (the check below still
  // fails a run whose end never came), then half a second more for anything doubled.
  for (const runId of new Set(followers.flatMap(unended))) await call(c, r, 'agent.wait', { runId, timeoutMs: 10_000 }, 30_000).catch(() => undefined);
  const endsBy = Date.now() + 15_000;
  while (followers.some((f) => unended(f).length) && Date.now() < endsBy) await sleep(100);
  await sleep(500);
  for (const f of followers) await f.close();
  for (const f of followers) {
    t.sseReconnects += f.reconnects;
    problems.push(...checkFollower(f));
  }
  for (const e of l.clientErrors) problems.push(`client error: ${e}`);
  t.resends = c.resends;
  return t;
}

export { follow };
