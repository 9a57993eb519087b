// The bench stores' text: a 10,000-word vocabulary of made-up words drawn with a Zipf law (word r with probability
// ∝ 1/r), like real text, from a seeded generator so every seed of a store writes the same words.
const SYL = ['ka', 'lo', 'mi', 're', 'tu', 'sa', 'no', 'pe', 'vi', 'da'];
const VOCAB = 10_000;

/** Word i of the vocabulary (i < 10,000): four syllables. */
export const word = (i: number) => SYL[Math.floor(i / 1000) % 10]! + SYL[Math.floor(i / 100) % 10]! + SYL[Math.floor(i / 10) % 10]! + SYL[i % 10]!;

const zipfCdf = (() => {
  const w = Array.from({ length: VOCAB }, (_, r) => 1 / (r + 1));
  const total = w.reduce((a, b) => a + b, 0);
  let acc = 0;
  return Float64Array.from(w.map((x) => (acc += x / total)));
})();

/** A Zipf word source of its own, from `seed`: `zipfWord()` draws one word, `sentence(n)` n of them. */
export function zipfWords(seed = 42): { zipfWord: () => string; sentence: (n: number) => string } {
  let s = seed;
  const rand = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const zipfWord = () => {
    const u = rand();
    let lo = 0;
    let hi = VOCAB - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (zipfCdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return word(lo);
  };
  return { zipfWord, sentence: (n: number) => Array.from({ length: n }, zipfWord).join(' ') };
}
