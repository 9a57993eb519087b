// Which texts need the Markdown parser: only those with something it could format (most chat lines have none).
const MARKDOWN_HINT = /[*_`#[\]|~\\]|^\s*(?:[-+>]|\d+[.)])\s|^\s*(?:-{3,}|={3,})\s*$|https?:\/\/|www\.|\S@\S|\n\s*\n/m;

/** Plain text renders as text with no parser on the way; HTML needs no parser either: as text it is never inserted. */
export const looksLikeMarkdown = (text: string) => MARKDOWN_HINT.test(text);
