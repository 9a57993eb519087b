'use client';
// Assistant text as Markdown (loaded on first use by ./markdown.tsx), rendered while it streams (streamdown: unfinished syntax is closed before parsing, so a
// half-written fence or table never flickers); raw HTML in model output stays literal text; code blocks are highlighted
// (shiki) with a copy button; links go through streamdown's hardening and its confirm-before-leaving dialog; remote images
// are links, never fetched unless clicked (./markdown-image.tsx).
import { code } from '@streamdown/code';
import { defaultRehypePlugins, defaultRemarkPlugins, Streamdown, type StreamdownProps } from 'streamdown';
import { MarkdownImage } from './markdown-image';

type Pluggable = NonNullable<StreamdownProps['remarkPlugins']>[number];

type MdNode = { type: string; value?: string; children?: MdNode[] };

/** Remark plugin: every HTML node becomes the text it was, so `<script>` shows as `<script>` and is never inserted. */
function htmlAsText() {
  const walk = (node: MdNode, inPhrasing: boolean) => {
    if (!node.children) return;
    node.children = node.children.map((child) => {
      if (child.type !== 'html') {
        walk(child, inPhrasing || child.type === 'paragraph' || child.type === 'heading' || child.type === 'tableCell');
        return child;
      }
      const text: MdNode = { type: 'text', value: child.value ?? '' };
      // Block-level HTML sits where flow content goes: wrap it in a paragraph.
      return inPhrasing ? text : { type: 'paragraph', children: [text] };
    });
  };
  return (tree: MdNode) => walk(tree, false);
}

const remarkPlugins: Pluggable[] = [...Object.values(defaultRemarkPlugins), htmlAsText];
// No rehype-raw: nothing from the model is parsed as HTML. Sanitize and harden (safe link/image URLs) stay.
const rehypePlugins: Pluggable[] = Object.entries(defaultRehypePlugins)
  .filter(([name]) => name !== 'raw')
  .map(([, p]) => p);
const plugins = { code };
// Bold is <strong> (streamdown draws a styled span): screen readers and find-by-role see the emphasis.
const components: StreamdownProps['components'] = {
  img: MarkdownImage,
  strong: ({ children }) => (
    <strong className="font-semibold" data-streamdown="strong">
      {children}
    </strong>
  ),
};

export default function MarkdownRich({ text, streaming = false }: { text: string; streaming?: boolean }) {
  return (
    <Streamdown
      className="markdown min-w-0 space-y-2 [&_pre]:whitespace-pre [&>*:first-child]:mt-0 [&>*:last-child]:mb-0"
      mode={streaming ? 'streaming' : 'static'}
      isAnimating={streaming}
      parseIncompleteMarkdown
      remarkPlugins={remarkPlugins}
      rehypePlugins={rehypePlugins}
      plugins={plugins}
      components={components}
      shikiTheme={['github-light', 'github-dark']}
      controls={{ code: { copy: true, download: false }, table: false, mermaid: false }}
    >
      {text}
    </Streamdown>
  );
}
