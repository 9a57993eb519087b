// Light/dark theme (client): an explicit choice kept in localStorage, else the OS preference; applied as a class on <html>.
import { useSyncExternalStore } from 'react';
import { THEME_KEY } from './theme-boot';

export type Theme = 'light' | 'dark';

function systemTheme(): Theme {
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

function storedTheme(): Theme | null {
  try {
    const t = localStorage.getItem(THEME_KEY);
    return t === 'dark' || t === 'light' ? t : null;
  } catch {
    return null;
  }
}

function apply(theme: Theme) {
  const c = document.documentElement.classList;
  c.toggle('dark', theme === 'dark');
  c.toggle('light', theme === 'light');
}

const listeners = new Set<() => void>();

function subscribe(cb: () => void) {
  listeners.add(cb);
  const mq = window.matchMedia('(prefers-color-scheme: dark)');
  // With no explicit choice, follow the OS when it changes.
  const onSystem = () => {
    if (!storedTheme()) apply(systemTheme());
    cb();
  };
  mq.addEventListener('change', onSystem);
  return () => {
    listeners.delete(cb);
    mq.removeEventListener('change', onSystem);
  };
}

const current = (): Theme => (document.documentElement.classList.contains('dark') ? 'dark' : 'light');

export function setTheme(theme: Theme) {
  try {
    localStorage.setItem(THEME_KEY, theme);
  } catch {
    // private mode: the choice lasts for this page only
  }
  apply(theme);
  for (const l of listeners) l();
}

export function useTheme(): Theme {
  return useSyncExternalStore(subscribe, current, () => 'light');
}
