// The theme's storage key and the inline <head> script that applies it before first paint (server-safe: no React).
export const THEME_KEY = 'crosstalk-theme';

/** A stored choice wins, else the OS preference: sets `dark` or `light` on <html> (same rule as lib/theme.ts). */
export const THEME_BOOT_SCRIPT = `(function(){try{var t=localStorage.getItem('${THEME_KEY}');var d=t==='dark'||(t!=='light'&&window.matchMedia('(prefers-color-scheme: dark)').matches);var c=document.documentElement.classList;c.toggle('dark',d);c.toggle('light',!d);}catch(e){}})();`;
