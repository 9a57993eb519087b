// An MCP server's JSON Schema `pattern`s in linear time: RE2 (re2js) as ajv's regExp engine, bounded in size and work, never V8's backtracking engine.
import type { CodeOptions } from 'ajv';
import { RE2JS } from 're2js';

type RegExpEngine = NonNullable<CodeOptions['regExp']>;

/** A pattern longer than this is not compiled. */
export const MAX_PATTERN_CHARS = 1000;
/** The RE2 program a pattern may compile to, in instructions as RE2's parser counts them (programBound). */
export const MAX_PATTERN_PROGRAM = 2000;
/**
 * The work one check's patterns may do, in units of one RE2 instruction stepped over one character: each test costs
 * its program's size × (the value's length + 1), each compile COMPILE_COST units an instruction. re2js's slowest case
 * measured (a Unicode class repeated, over accented letters) is ~240 ns a unit: the whole check stays under ~0.25 s.
 * A value in a form (a code, a name, an address) against a pattern of tens of instructions is some thousand units.
 */
export const MAX_PATTERN_WORK = 1_000_000;
const COMPILE_COST = 100;

/**
 * An upper bound of the RE2 program `pattern` compiles to, counted as RE2's parser counts a regexp's size: a literal or
 * class 1, a group its contents + 2, a repeat `{n,m}` its body × m + (m − n). Read before compiling: a pattern that
 * expands to many instructions (`[a-z]{0,1000}` written 16 times) takes re2js seconds to compile.
 */
export function programBound(pattern: string): number {
  const sizes = [0];
  let last = 0; // the atom just read, which a repeat applies to
  for (let i = 0; i < pattern.length; ) {
    const c = pattern[i]!;
    let atom = 1;
    let repeat = false;
    if (c === '\\') {
      i += 2;
      // \p{Greek}, \x{10FFFF}: one atom.
      if ('pPx'.includes(pattern[i - 1] ?? '') && pattern[i] === '{') i = Math.max(i, pattern.indexOf('}', i) + 1) || pattern.length;
    } else if (c === '[') {
      i = classEnd(pattern, i);
    } else if (c === '(') {
      sizes.push(0);
      last = 0;
      i++;
      continue;
    } else if (c === ')') {
      atom = (sizes.length > 1 ? sizes.pop()! : 0) + 2;
      i++;
    } else if (c === '*' || c === '+' || c === '?') {
      atom = last + 2;
      repeat = true;
      i++;
    } else {
      const m = c === '{' ? /^\{(\d+)(?:(,)(\d*))?\}/.exec(pattern.slice(i, i + 24)) : null;
      if (m) {
        const min = Number(m[1]);
        const max = m[2] ? (m[3] ? Number(m[3]) : min) : min;
        atom = Math.max(1, max) * last + Math.max(0, max - min) + 1;
        repeat = true;
        i += m[0].length;
      } else i++;
    }
    if (repeat) sizes[sizes.length - 1]! -= last;
    sizes[sizes.length - 1]! += atom;
    last = atom;
  }
  return sizes.reduce((a, b) => a + b, 0);
}

/** Where a character class that opens at `i` ends (past its `]`): a `]` first in it, or escaped, is a member. */
function classEnd(p: string, i: number): number {
  let j = i + 1;
  if (p[j] === '^') j++;
  if (p[j] === ']') j++;
  for (; j < p.length; j++) {
    if (p[j] === '\\') j++;
    else if (p[j] === ']') return j + 1;
  }
  return p.length;
}

/**
 * A JavaScript pattern in RE2's syntax where the two differ in spelling only: `\uXXXX` and `\u{…}` are RE2's `\x{…}`.
 * What RE2 cannot do at all (backreferences, lookaround) stays, and RE2 refuses it.
 */
export function toRe2Syntax(pattern: string): string {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const m = /^u(?:([0-9a-fA-F]{4})|\{([0-9a-fA-F]{1,6})\})/.exec(pattern.slice(i + 1, i + 10));
    if (m) {
      out += `\\x{${m[1] ?? m[2]}}`;
      i += m[0].length;
    } else {
      out += c + (pattern[i + 1] ?? '');
      i++;
    }
  }
  return out;
}

/** A compiled pattern, or why it is not run; `bound` is programBound(pattern). */
function compile(pattern: string, flags: string, bound: number): RE2JS | string {
  if (pattern.length > MAX_PATTERN_CHARS) return `its pattern is ${pattern.length} characters long, more than ${MAX_PATTERN_CHARS}`;
  if (bound > MAX_PATTERN_PROGRAM) return `its pattern expands to about ${bound} steps, more than ${MAX_PATTERN_PROGRAM}`;
  try {
    return RE2JS.compile(toRe2Syntax(pattern), (flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0) | (flags.includes('m') ? RE2JS.MULTILINE : 0) | (flags.includes('s') ? RE2JS.DOTALL : 0));
  } catch (e) {
    // RE2 has no backreferences or lookaround: such a pattern needs a backtracking engine, which is what is avoided.
    return `its pattern cannot be run in linear time (${e instanceof Error ? e.message : String(e)})`;
  }
}

export interface LinearPatterns {
  /** ajv's `code.regExp`: each pattern compiled at its first test, within the work budget. */
  regExp: RegExpEngine;
  /** Patterns that were not run (too large, not RE2, over the budget), and why: their tests answered false. */
  refused: Map<string, string>;
}

const OVER_BUDGET = 'checking it would take more than the gateway allows one answer';

/** A regExp engine for one check (its own work budget): a pattern that cannot be run fails its test and says why. */
export function linearPatterns(): LinearPatterns {
  const refused = new Map<string, string>();
  const compiled = new Map<string, RE2JS | string>();
  let work = 0;
  /** Spends `cost` units of the budget; false (nothing spent) when they are not left. */
  const spend = (cost: number) => {
    if (work + cost > MAX_PATTERN_WORK) return false;
    work += cost;
    return true;
  };
  const regExp = ((pattern: string, flags: string) => ({
    test(s: string): boolean {
      const key = `${flags}/${pattern}`;
      let re = compiled.get(key);
      if (re === undefined) {
        const bound = pattern.length > MAX_PATTERN_CHARS ? Infinity : programBound(pattern);
        if (bound <= MAX_PATTERN_PROGRAM && !spend(bound * COMPILE_COST)) re = OVER_BUDGET;
        else compiled.set(key, (re = compile(pattern, flags, bound)));
      }
      if (typeof re !== 'string') {
        if (spend(re.programSize() * (s.length + 1))) return re.test(s);
        re = OVER_BUDGET;
      }
      refused.set(pattern, re);
      return false;
    },
    // ajv keeps one compiled pattern per key, which is this.
    toString: () => `/${pattern}/${flags}`,
  })) as RegExpEngine;
  // Used only for ajv's standalone code, which is not made here.
  regExp.code = 'linearPatterns';
  return { regExp, refused };
}
