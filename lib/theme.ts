// Light/dark theme: an explicit choice kept in localStorage, else the OS preference; applied as a class on <html>.
import { useSyncExternalStore } from 'react';

export type Theme = 'light' | 'dark';
export const THEME_KEY = 'crosstalk-theme';

/**
 * Runs inline in <head> before first paint (no flash): the same rule as applyTheme, as a string.
 * Kept dependency-free on purpose.
 */
export const THEME_BOOT_SCRIPT = `(function(){try{var t=localStorage.getItem('${THEME_KEY}');var d=t==='dark'||(t!=='light'&&window.matchMedia('(prefers-color-scheme: dark)').matches);var c=document.documentElement.classList;c.toggle('dark',d);c.toggle('light',!d);}catch(e){}})();`;

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
