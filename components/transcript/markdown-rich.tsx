'use client';
// Assistant text as Markdown (loaded on first use by ./markdown.tsx), rendered while it streams (streamdown: unfinished syntax is closed before parsing, so a
// half-written fence or table never flickers); raw HTML in model output stays literal text; code blocks are highlighted
// (shiki) with a copy button; links go through streamdown's hardening and a confirm-before-leaving dialog (./link-confirm.tsx); remote images
// are links, never fetched unless clicked (./markdown-image.tsx).
import { code } from '@streamdown/code';
import { defaultRehypePlugins, defaultRemarkPlugins, Streamdown, type StreamdownProps } from 'streamdown';
import { LinkConfirm } from './link-confirm';
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

type UrlNode = MdNode & { url?: string };

/**
 * Remark plugin: a protocol-relative URL (`//host/x.png`) names another origin over https. Left as it was, the hardening
 * below resolves it against no origin and keeps its path: `/x.png` on this origin, a wrong image shown inline.
 */
function protocolRelativeAsHttps() {
  const walk = (node: UrlNode) => {
    if (typeof node.url === 'string' && /^\s*[/\\]{2}/.test(node.url)) node.url = `https:${node.url.trim().replace(/^[/\\]{2}/, '//')}`;
    node.children?.forEach(walk);
  };
  return (tree: UrlNode) => walk(tree);
}

const remarkPlugins: Pluggable[] = [...Object.values(defaultRemarkPlugins), htmlAsText, protocolRelativeAsHttps];

type Schema = { protocols?: Record<string, string[]> };
/** Sanitize keeps a data: image's src (the hardening after it admits only data:image/…; the CSP allows data: images). */
function withDataImages(plugin: Pluggable): Pluggable {
  if (!Array.isArray(plugin)) return plugin;
  const [fn, schema] = plugin as [unknown, Schema];
  const protocols = schema?.protocols ?? {};
  return [fn, { ...schema, protocols: { ...protocols, src: [...(protocols.src ?? []), 'data'] } }] as Pluggable;
}
// No rehype-raw: nothing from the model is parsed as HTML. Sanitize and harden (safe link/image URLs) stay.
const rehypePlugins: Pluggable[] = Object.entries(defaultRehypePlugins)
  .filter(([name]) => name !== 'raw')
  .map(([name, p]) => (name === 'sanitize' ? withDataImages(p) : p));
const plugins = { code };
// Links ask before leaving, in a dialog of ours (streamdown's own overlay is not a modal: no focus, no Escape).
const linkSafety: StreamdownProps['linkSafety'] = { enabled: true, renderModal: (p) => <LinkConfirm {...p} /> };
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
      linkSafety={linkSafety}
      shikiTheme={['github-light', 'github-dark']}
      controls={{ code: { copy: true, download: false }, table: false, mermaid: false }}
    >
      {text}
    </Streamdown>
  );
}
