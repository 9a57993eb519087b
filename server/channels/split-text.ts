// A message longer than a platform takes in one post (Telegram 4,096, Discord 2,000 …), cut into posts that fit: at
// a paragraph, else a line, else a space, else anywhere (never inside a surrogate pair). Sent whole, it was refused.

/** The parts of `text`, in order, each at most `max` UTF-16 units (which is never fewer than the characters). */
export function splitText(text: string, max: number): string[] {
  if (text.length <= max) return [text];
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const window = rest.slice(0, max);
    let cut = Math.max(window.lastIndexOf('\n\n'), -1);
    if (cut < max / 2) cut = window.lastIndexOf('\n');
    if (cut < max / 2) cut = window.lastIndexOf(' ');
    if (cut < max / 2) cut = max;
    // Never between the halves of a surrogate pair (an emoji, a rare character).
    const code = rest.charCodeAt(cut - 1);
    if (cut === max && code >= 0xd800 && code <= 0xdbff) cut -= 1;
    const part = rest.slice(0, cut).trimEnd();
    if (part) parts.push(part);
    rest = rest.slice(cut).replace(/^\s+/, '');
  }
  if (rest) parts.push(rest);
  return parts;
}
