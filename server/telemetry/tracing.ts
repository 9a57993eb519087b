// OpenTelemetry traces: a span per run, model step, tool call and approval wait, W3C traceparent carried between runs.
// Off unless OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: then every hook returns at once.
import { type Attributes, type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';

type Env = Record<string, string | undefined>;

const propagator = new W3CTraceContextPropagator();
const setter = { set: (c: Record<string, string>, k: string, v: string) => void (c[k] = v) };
const getter = { get: (c: Record<string, string>, k: string) => c[k], keys: (c: Record<string, string>) => Object.keys(c) };

/** The OTLP/HTTP traces URL from the standard variables, or undefined when tracing is off. */
export function tracesUrl(env: Env): string | undefined {
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (specific) return specific;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined;
}

/** A context holding the remote parent that `traceparent` names (the root context when it names none). */
export function contextFromTraceparent(traceparent: string | undefined): Context {
  if (!traceparent) return ROOT_CONTEXT;
  return propagator.extract(ROOT_CONTEXT, { traceparent }, getter);
}

/** The W3C `traceparent` header value of a span. */
export function traceparentOf(span: Span): string | undefined {
  const carrier: Record<string, string> = {};
  propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, setter);
  return carrier.traceparent;
}

export class Telemetry {
  readonly enabled: boolean;
  private readonly provider?: BasicTracerProvider;
  private readonly tracer?: Tracer;

  /** Tracing as the environment asks; the SDK and its exporter are loaded only when it is on. */
  static async create(env: Env = process.env): Promise<Telemetry> {
    const url = tracesUrl(env);
    if (!url) return new Telemetry();
    const { createProvider } = await import('./sdk');
    return new Telemetry(createProvider(url, env.OTEL_SERVICE_NAME?.trim() || 'crosstalk'));
  }

  /** Off without a provider (`Telemetry.create` reads the environment). */
  constructor(provider?: BasicTracerProvider) {
    this.enabled = !!provider;
    if (!provider) return;
    this.provider = provider;
    this.tracer = provider.getTracer('crosstalk');
  }

  /** A span under `parent` (a span of ours, or a traceparent from another run or process); undefined when off. */
  start(name: string, parent: Span | string | undefined, attributes: Attributes = {}, o: { kind?: SpanKind; startTime?: number } = {}): Span | undefined {
    if (!this.tracer) return undefined;
    const ctx = typeof parent === 'string' || parent === undefined ? contextFromTraceparent(parent) : trace.setSpan(ROOT_CONTEXT, parent);
    return this.tracer.startSpan(name, { attributes, kind: o.kind ?? SpanKind.INTERNAL, ...(o.startTime ? { startTime: o.startTime } : {}) }, ctx);
  }

  /** Ends a span, marking it failed when `error` is given. */
  end(span: Span | undefined, error?: string, attributes?: Attributes): void {
    if (!span) return;
    if (attributes) span.setAttributes(attributes);
    if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    span.end();
  }

  /** Sends what is buffered (tests, shutdown). */
  async flush(): Promise<void> {
    await this.provider?.forceFlush();
  }

  async shutdown(): Promise<void> {
    await this.provider?.shutdown();
  }
}

export { SpanKind };
export type { Span };
