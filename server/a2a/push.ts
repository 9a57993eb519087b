// A2A push notification configs: stored, and a task's updates go out through the webhook outbox (durable retries, the SSRF rules).
import crypto from 'node:crypto';
import { A2A_CONTENT_TYPE, StreamResponse, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { FullRuntime } from '../runtime-types';
import { nowIso } from '../store/store';
import { checkWebhookUrl } from '../webhooks/guard';
import { webhookRow } from '../webhooks/outbox';

type Follow = (runId: string) => AsyncGenerator<StreamResponse, void, undefined>;

const TERMINAL = new Set(['ok', 'error', 'interrupted']);

export class A2APush {
  private readonly watching = new Set<string>();

  constructor(
    private readonly rt: FullRuntime,
    private readonly follow: Follow,
  ) {}

  async list(taskId: string): Promise<TaskPushNotificationConfig[]> {
    const rows = await this.rt.store.db.selectFrom('a2a_push_configs').selectAll().where('task_id', '=', taskId).orderBy('created_at').execute();
    return rows.map((r) => ({
      tenant: '',
      taskId: r.task_id,
      id: r.id,
      url: r.url,
      token: r.token ?? '',
      authentication: r.auth_scheme ? { scheme: r.auth_scheme, credentials: r.auth_credentials ?? '' } : undefined,
    }));
  }

  async remove(taskId: string, id: string): Promise<void> {
    await this.rt.store.db.deleteFrom('a2a_push_configs').where('task_id', '=', taskId).where('id', '=', id).execute();
  }

  /** Checks the URL against the webhook rules (no private network unless allowed), stores the config, and starts forwarding. */
  /** Refuses a push config's URL the webhook SSRF rules refuse (RequestMalformedError): before anything is started. */
  async check(url: string): Promise<void> {
    const refused = await checkWebhookUrl(url, this.rt.config.webhooks.allowPrivateNetwork);
    if (refused) throw new RequestMalformedError(`push notification url refused: ${refused}`);
  }

  async register(cfg: TaskPushNotificationConfig): Promise<TaskPushNotificationConfig> {
    await this.check(cfg.url);
    const stored: TaskPushNotificationConfig = { ...cfg, id: cfg.id || `push_${crypto.randomUUID()}` };
    const auth = stored.authentication?.scheme ? stored.authentication : undefined;
    const row = { task_id: cfg.taskId, id: stored.id, url: stored.url, token: stored.token || null, auth_scheme: auth?.scheme ?? null, auth_credentials: auth?.credentials ?? null, created_at: nowIso() };
    await this.rt.store.db
      .insertInto('a2a_push_configs')
      .values(row)
      .onConflict((oc) => oc.columns(['task_id', 'id']).doUpdateSet({ url: row.url, token: row.token, auth_scheme: row.auth_scheme, auth_credentials: row.auth_credentials }))
      .execute();
    this.watch(cfg.taskId);
    return stored;
  }

  /** Start-up: tasks still running when the last process stopped keep sending their updates. */
  async rearm(): Promise<void> {
    const rows = await this.rt.store.db.selectFrom('a2a_push_configs').select('task_id').distinct().execute();
    for (const { task_id } of rows) {
      const run = await this.rt.store.getRun(task_id);
      if (run && !TERMINAL.has(run.status)) this.watch(task_id);
    }
  }

  private watch(taskId: string) {
    if (!this.watching.has(taskId)) void this.forward(taskId);
  }

  /**
   * Every update of the task (replayed from its start, then live) becomes one outbox row per config, with the headers the
   * SDK's own sender uses (the config's `authentication` as `Authorization`, else its token as `X-A2A-Notification-Token`),
   * and signed with the token like crosstalk's webhooks. Row ids derive from the update's place in the task's stream, so a replay never sends one twice.
   */
  private async forward(taskId: string) {
    this.watching.add(taskId);
    let n = 0;
    try {
      for await (const update of this.follow(taskId)) {
        n++;
        const body = StreamResponse.toJSON(update);
        const configs = await this.list(taskId);
        const rows = configs.map((c) => ({
          ...webhookRow(taskId, { url: c.url, ...(c.token ? { secret: c.token } : {}) }, body, `a2a_${taskId}_${c.id}_${n}`),
          headers: JSON.stringify(pushHeaders(c)),
        }));
        if (!rows.length) continue;
        await this.rt.store.db.transaction().execute((tx) => this.rt.store.insertWebhooks(tx, rows)); // with their jobs (PostgreSQL)
        this.rt.webhooks.kick();
      }
    } catch (e) {
      this.rt.log.warn({ err: e, taskId }, 'a2a push forwarding stopped');
    } finally {
      this.watching.delete(taskId);
    }
  }
}

/** The A2A push headers, as @a2a-js/sdk's DefaultPushNotificationSender sends them. */
function pushHeaders(c: TaskPushNotificationConfig): Record<string, string> {
  const h: Record<string, string> = { 'content-type': A2A_CONTENT_TYPE };
  if (c.authentication?.scheme && c.authentication.credentials) h.authorization = `${c.authentication.scheme} ${c.authentication.credentials}`;
  else if (c.token) h['x-a2a-notification-token'] = c.token;
  return h;
}
