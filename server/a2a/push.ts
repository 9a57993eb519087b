// A2A push notification configs: a task's updates go out through the webhook outbox (durable retries, the SSRF rules).
import crypto from 'node:crypto';
import { StreamResponse, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { FullRuntime } from '../boot';
import { checkWebhookUrl } from '../webhooks/guard';
import { webhookRow } from '../webhooks/outbox';

type Follow = (runId: string) => AsyncGenerator<StreamResponse, void, undefined>;

export class A2APush {
  /** taskId → configs. Held in memory: a config lives as long as the process that took it (documented). */
  private readonly configs = new Map<string, TaskPushNotificationConfig[]>();
  private readonly watching = new Set<string>();
  follow?: Follow;

  constructor(private readonly rt: FullRuntime) {}

  list(taskId: string): TaskPushNotificationConfig[] {
    return this.configs.get(taskId) ?? [];
  }

  remove(taskId: string, id: string): void {
    const left = this.list(taskId).filter((c) => c.id !== id);
    if (left.length) this.configs.set(taskId, left);
    else this.configs.delete(taskId);
  }

  /** Checks the URL against the webhook rules (no private network unless allowed), keeps the config, and starts forwarding. */
  async register(cfg: TaskPushNotificationConfig, _contextId: string): Promise<TaskPushNotificationConfig> {
    const refused = await checkWebhookUrl(cfg.url, this.rt.config.webhooks.allowPrivateNetwork);
    if (refused) throw new RequestMalformedError(`push notification url refused: ${refused}`);
    const stored: TaskPushNotificationConfig = { ...cfg, id: cfg.id || `push_${crypto.randomUUID()}` };
    this.configs.set(cfg.taskId, [...this.list(cfg.taskId).filter((c) => c.id !== stored.id), stored]);
    if (!this.watching.has(cfg.taskId)) void this.forward(cfg.taskId);
    return stored;
  }

  /** Every update of the task (replayed from its start, then live) becomes one outbox row per config, signed with the config's token. */
  private async forward(taskId: string) {
    if (!this.follow) return;
    this.watching.add(taskId);
    let n = 0;
    try {
      for await (const update of this.follow(taskId)) {
        n++;
        const body = StreamResponse.toJSON(update);
        const rows = this.list(taskId).map((c) => webhookRow(taskId, { url: c.url, ...(c.token ? { secret: c.token } : {}) }, body, `a2a_${taskId}_${c.id}_${n}`));
        if (!rows.length) continue;
        await this.rt.store.db.insertInto('webhook_outbox').values(rows).onConflict((oc) => oc.column('id').doNothing()).execute();
        this.rt.webhooks.kick();
      }
    } catch (e) {
      this.rt.log.warn({ err: e, taskId }, 'a2a push forwarding stopped');
    } finally {
      this.watching.delete(taskId);
    }
  }
}
