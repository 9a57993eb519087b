// Root layout: document shell, global styles (system fonts only — no network font fetch at build), and the theme
// applied before first paint (a stored choice, else the OS preference).
import { THEME_BOOT_SCRIPT } from '@/lib/theme-boot';
import type { Metadata, Viewport } from 'next';
import { headers } from 'next/headers';
import type { ReactNode } from 'react';
import './globals.css';

export const metadata: Metadata = {
  title: 'crosstalk',
  description: 'A multi-agent gateway with a web control room',
};

export const viewport: Viewport = {
  width: 'device-width',
  initialScale: 1,
  themeColor: [
    { media: '(prefers-color-scheme: light)', color: '#ffffff' },
    { media: '(prefers-color-scheme: dark)', color: '#09090b' },
  ],
};

export default async function RootLayout({ children }: { children: ReactNode }) {
  // The proxy's per-request CSP nonce (proxy.ts): the one inline script of ours runs only with it.
  const nonce = (await headers()).get('x-nonce') ?? undefined;
  return (
    // The boot script sets the theme class before React hydrates: the attribute differs on purpose.
    <html lang="en" suppressHydrationWarning>
      <head>
        <script nonce={nonce} dangerouslySetInnerHTML={{ __html: THEME_BOOT_SCRIPT }} />
      </head>
      <body>{children}</body>
    </html>
  );
}
