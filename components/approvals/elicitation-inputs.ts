// What an elicitation field's schema says, as its input's own attributes (step, min, max, pattern), so the browser
// stops what the server would refuse before Submit; a hint for what HTML cannot say (exclusive bounds of a plain number).

export type NumberProp = {
  type?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  multipleOf?: number;
};

/** A number exactly as the decimal it is written as: digits × 10^-scale (0.1 is 1 × 10^-1, not 0.1000000000000000055…). */
type Decimal = { digits: bigint; scale: number };

function decimal(n: number): Decimal {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(n))!;
  const frac = m[3] ?? '';
  let digits = BigInt(m[1] + m[2] + frac);
  let scale = frac.length - Number(m[4] ?? 0);
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { digits, scale };
}

const at = (d: Decimal, scale: number) => d.digits * 10n ** BigInt(scale - d.scale);

function text({ digits, scale }: Decimal): string {
  const neg = digits < 0n;
  let s = (neg ? -digits : digits).toString().padStart(scale + 1, '0');
  if (scale > 0) s = `${s.slice(0, -scale)}.${s.slice(-scale)}`.replace(/\.?0+$/, '');
  return neg && s !== '0' ? `-${s}` : s;
}

const floorDiv = (a: bigint, b: bigint) => a / b - (a % b !== 0n && a < 0n ? 1n : 0n);
const ceilDiv = (a: bigint, b: bigint) => a / b + (a % b !== 0n && a > 0n ? 1n : 0n);

/** The multiple of `step` nearest `bound` on the allowed side (above a lower bound, below an upper one), past it when exclusive. */
function aligned(bound: number, step: Decimal, lower: boolean, exclusive: boolean): string {
  const b = decimal(bound);
  const scale = Math.max(b.scale, step.scale);
  const B = at(b, scale);
  const T = at(step, scale);
  const q = lower ? (exclusive ? floorDiv(B, T) + 1n : ceilDiv(B, T)) : exclusive ? ceilDiv(B, T) - 1n : floorDiv(B, T);
  return text({ digits: q * T, scale });
}

const finite = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n);

/** A bound of the schema: the stricter of the inclusive and the exclusive one, and whether that one is exclusive. */
function bound(inclusive: unknown, exclusive: unknown, lower: boolean): { value: number; exclusive: boolean } | undefined {
  const i = finite(inclusive) ? inclusive : undefined;
  const x = finite(exclusive) ? exclusive : undefined;
  if (x === undefined) return i === undefined ? undefined : { value: i, exclusive: false };
  if (i === undefined || (lower ? x >= i : x <= i)) return { value: x, exclusive: true };
  return { value: i, exclusive: false };
}

/**
 * A number field's input attributes. An integer steps by 1, a `multipleOf` by itself (an integer by its least
 * multiple that is whole); then the bounds are the allowed multiples nearest them, so exclusive ones are said exactly.
 * The browser counts steps from `min`, or else from the input's `value` attribute: the form leaves that at the
 * schema's default (the input is not controlled), as React keeps a controlled one equal to what was typed, and then
 * `step` let 1.5 through. A plain number's exclusive bound is its `min`/`max` (the bound itself still passes the
 * browser) and a hint; the server checks it either way.
 */
export function numberInput(p: NumberProp): { step: string; min?: string; max?: string; hint?: string } {
  const low = bound(p.minimum, p.exclusiveMinimum, true);
  const high = bound(p.maximum, p.exclusiveMaximum, false);
  const of = finite(p.multipleOf) && p.multipleOf > 0 ? decimal(p.multipleOf) : undefined;
  let step: Decimal | undefined = of;
  if (p.type === 'integer') {
    if (!of) step = { digits: 1n, scale: 0 };
    else {
      // m = M / 10^s: its whole multiples are those of M / gcd(M, 10^s).
      let [a, b] = [of.digits, 10n ** BigInt(of.scale)];
      const M = a;
      while (b) [a, b] = [b, a % b];
      step = { digits: M / a, scale: 0 };
    }
  }
  if (!step) {
    const hint = [low?.exclusive && `more than ${low.value}`, high?.exclusive && `less than ${high.value}`].filter(Boolean).join(', ');
    return { step: 'any', min: low && String(low.value), max: high && String(high.value), hint: hint || undefined };
  }
  return { step: text(step), min: low && aligned(low.value, step, true, low.exclusive), max: high && aligned(high.value, step, false, high.exclusive) };
}
